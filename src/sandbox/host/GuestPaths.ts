/**
 * Paths beneath a guest's preopen, resolved the way ./GuestFs.ts confines them: lexically for
 * `..` (as preview2-shim and Wasmtime do), links followed one by one and never out of the
 * directory a path starts from, and the rule a link's target must keep to stay beneath the
 * preopen wherever the link stands.
 */
import { lstatSync, readdirSync, readlinkSync } from "node:fs"

/** The WASI error code for a path that would leave the preopen (Wasmtime's, the shim's). */
export const REFUSED = "not-permitted"
const MAX_LINKS = 40

/** `parts` applied to `from` without touching the disk; `..` below `floor` components is refused. */
export const lexical = (from: ReadonlyArray<string>, parts: ReadonlyArray<string>, floor: number): Array<string> => {
  const out = [...from]
  for (const part of parts) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (out.length <= floor) throw REFUSED
      out.pop()
    } else {
      out.push(part)
    }
  }
  return out
}

/**
 * How many directories above its own a link target climbs: its leading `..`s. A target whose
 * `..` follows a name (`a/../../x`) gets `Infinity`: the OS resolves that `..` from wherever `a`
 * leads, and `a` may be (or later become) a link itself.
 */
export const climbOf = (target: string): number => {
  if (/^[/\\]/.test(target)) return Infinity
  let climb = 0
  let named = false
  for (const part of target.split(/[/\\]/)) {
    if (part === "" || part === ".") continue
    if (part !== "..") named = true
    else if (named) return Infinity
    else climb++
  }
  return climb
}

export const hostPath = (root: string, at: ReadonlyArray<string>) => (at.length === 0 ? root : `${root}/${at.join("/")}`)

export interface Resolved {
  readonly at: ReadonlyArray<string>
  readonly trailingSlash: boolean
}

/**
 * `path` from the directory `base` (components beneath `root`), with every link on the way
 * followed beneath `root` (the last one only when `follow`). Nothing climbs above `base`, like
 * the shim and Wasmtime; absolute paths and link targets are `not-permitted`. Past a component
 * that cannot be read the rest is kept as written, for the shim's own call to report.
 */
export const resolveBeneath = (root: string, base: ReadonlyArray<string>, path: string, follow: boolean): Resolved => {
  const written = path.replace(/\\/g, "/")
  if (written.startsWith("/")) throw REFUSED
  const trailingSlash = written.endsWith("/")
  let pending = lexical(base, written.split("/"), base.length)
  let current: Array<string> = []
  let links = 0
  while (pending.length > 0) {
    const name = pending.shift()!
    const candidate = [...current, name]
    let isLink: boolean
    try {
      isLink = lstatSync(hostPath(root, candidate)).isSymbolicLink()
    } catch {
      return { at: [...candidate, ...pending], trailingSlash }
    }
    if (!isLink || (pending.length === 0 && !follow && !trailingSlash)) {
      current = candidate
      continue
    }
    if (++links > MAX_LINKS) throw "loop"
    const target = readlinkSync(hostPath(root, candidate)).replace(/\\/g, "/")
    if (target.startsWith("/")) throw REFUSED
    pending = [...lexical(current, target.split("/"), base.length), ...pending]
    current = []
  }
  return { at: current, trailingSlash }
}

export const startsWith = (path: ReadonlyArray<string>, prefix: ReadonlyArray<string>) =>
  prefix.length <= path.length && prefix.every((part, index) => path[index] === part)

/** The link at `at` (if it is one) may stand in a directory `depth` components deep: its target stays beneath. */
export const linkFits = (host: string, at: ReadonlyArray<string>, depth: number) => {
  try {
    if (!lstatSync(hostPath(host, at)).isSymbolicLink()) return true
    return climbOf(readlinkSync(hostPath(host, at))) <= depth
  } catch {
    return true
  }
}

/** Every link under the directory `at` still fits once the directory is `depth` components deep. */
export const linksFitUnder = (host: string, at: ReadonlyArray<string>, depth: number): boolean => {
  const stack: Array<{ readonly at: ReadonlyArray<string>; readonly depth: number }> = [{ at, depth }]
  while (stack.length > 0) {
    const next = stack.pop()!
    let entries
    try {
      entries = readdirSync(hostPath(host, next.at), { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      const child = [...next.at, entry.name]
      if (entry.isSymbolicLink() && climbOf(readlinkSync(hostPath(host, child))) > next.depth) return false
      if (entry.isDirectory()) stack.push({ at: child, depth: next.depth + 1 })
    }
  }
  return true
}

