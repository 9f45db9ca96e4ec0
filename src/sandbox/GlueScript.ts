/**
 * Rewrites jco's ESM glue (instantiation mode) into a classic script whose completion value is
 * a function returning `{ instantiate, _util }`. Workers load it with `node:vm` so V8 can hand
 * them a code cache with the functions an earlier run compiled lazily (`import()` of an ES
 * module takes none on Node 20 without flags). Anything but the shape jco 1.35 emits fails the
 * load: a silently different glue would run with different semantics.
 */
import { Script } from "node:vm"

const INSTANTIATE = /^export function instantiate\(/gm
const UTIL = /^export const _util = /gm
/** Module-only syntax the rewrite cannot carry into a script. */
const MODULE_ONLY = [/^\s*import[\s{*"']/m, /\bimport\.meta\b/, /\bimport\s*\(/, /^\s*export\b/m]

export class GlueShapeError extends Error {}

const count = (pattern: RegExp, source: string) => source.match(pattern)?.length ?? 0

/** The script text; line numbers match the glue's (the wrapper opens on its first line). */
export const glueScript = (source: string, filename: string): string => {
  if (count(INSTANTIATE, source) !== 1 || count(UTIL, source) !== 1) {
    throw new GlueShapeError(`${filename}: expected exactly one 'export function instantiate' and one 'export const _util' (jco instantiation-mode glue)`)
  }
  const body = source.replace(INSTANTIATE, "function instantiate(").replace(UTIL, "const _util = ")
  const bad = MODULE_ONLY.find((pattern) => pattern.test(body))
  if (bad !== undefined) throw new GlueShapeError(`${filename}: glue uses module-only syntax (${bad.source}); cannot load it as a script`)
  // Module code is strict; the wrapper keeps it so ("use strict" must lead the prologue).
  const script = `(function () { "use strict"; ${body}\nreturn { instantiate, _util };\n})`
  try {
    // Parses only (functions compile lazily): catches e.g. a top-level await before any worker.
    new Script(script, { filename })
  } catch (error) {
    throw new GlueShapeError(`${filename}: rewritten glue does not parse as a script: ${error instanceof Error ? error.message : String(error)}`)
  }
  return script
}
