/**
 * Rewrites jco's ESM glue (instantiation mode) into a classic script whose completion value is
 * a function returning `{ instantiate, _util }`. Workers load it with `node:vm` so V8 can hand
 * them a code cache with the functions an earlier run compiled lazily (`import()` of an ES
 * module takes none on Node 20 without flags). Anything but the shape jco 1.35 emits fails the
 * load: a silently different glue would run with different semantics.
 *
 * One call is redirected: `WebAssembly.promising(f)`. The glue calls it four times per instance
 * inside `try { … } catch { fall back to f }`; Node 20 has no JSPI, so each call throws "is not
 * a function", and V8 words that message by re-parsing the enclosing function, jco's
 * 7,000-line `_initGenerator`: ≈ 2.5 ms per call, ≈ 10 of an echo-tool instance's 13 ms
 * (docs/benchmarks.md, "Nested tool call"). The helper throws the same TypeError without the
 * re-parse, and calls the real `WebAssembly.promising` where it exists.
 */
import { Script } from "node:vm"

const INSTANTIATE = /^export function instantiate\(/gm
const UTIL = /^export const _util = /gm
const PROMISING = /\bWebAssembly\.promising\(/g
/** Module-only syntax the rewrite cannot carry into a script. */
const MODULE_ONLY = [/^\s*import[\s{*"']/m, /\bimport\.meta\b/, /\bimport\s*\(/, /^\s*export\b/m]

/** Name of the wrapper's `WebAssembly.promising` stand-in (refused if the glue uses it itself). */
export const PROMISING_HELPER = "$murmurPromising"

/** Same outcome as calling `WebAssembly.promising` directly, without V8's call-site rendering. */
const PROMISING_SOURCE = `const ${PROMISING_HELPER} = (fn) => {
  if (typeof WebAssembly.promising !== "function") throw new TypeError("WebAssembly.promising is not a function");
  return WebAssembly.promising(fn);
};`

export class GlueShapeError extends Error {}

const count = (pattern: RegExp, source: string) => source.match(pattern)?.length ?? 0

/** The script text; line numbers match the glue's (the wrapper opens on its first line). */
export const glueScript = (source: string, filename: string): string => {
  if (count(INSTANTIATE, source) !== 1 || count(UTIL, source) !== 1) {
    throw new GlueShapeError(`${filename}: expected exactly one 'export function instantiate' and one 'export const _util' (jco instantiation-mode glue)`)
  }
  if (source.includes(PROMISING_HELPER)) throw new GlueShapeError(`${filename}: glue already uses the name ${PROMISING_HELPER}`)
  const body = source
    .replace(INSTANTIATE, "function instantiate(")
    .replace(UTIL, "const _util = ")
    .replace(PROMISING, `${PROMISING_HELPER}(`)
  const bad = MODULE_ONLY.find((pattern) => pattern.test(body))
  if (bad !== undefined) throw new GlueShapeError(`${filename}: glue uses module-only syntax (${bad.source}); cannot load it as a script`)
  // Module code is strict; the wrapper keeps it so ("use strict" must lead the prologue). The
  // helper shares the first line, so line numbers still match the glue's.
  const script = `(function () { "use strict"; ${PROMISING_SOURCE.replaceAll("\n", " ")} ${body}\nreturn { instantiate, _util };\n})`
  try {
    // Parses only (functions compile lazily): catches e.g. a top-level await before any worker.
    new Script(script, { filename })
  } catch (error) {
    throw new GlueShapeError(`${filename}: rewritten glue does not parse as a script: ${error instanceof Error ? error.message : String(error)}`)
  }
  return script
}
