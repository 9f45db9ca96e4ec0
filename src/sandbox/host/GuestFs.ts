/**
 * The guest's filesystem, confined: preview2-shim's `Descriptor` with every path operation
 * resolved here first, beneath the instance's preopen, then handed to the shim as a path without
 * links from the preopen itself. What the shim alone got wrong (issue 8):
 *
 * - `symlink-at` created links whose target leaves the preopen; the host (or a shell, or the
 *   operator) could then follow them. A target that climbs above the preopen from the link's
 *   directory, or whose `..` follows a name, is refused `not-permitted` (absolute targets already
 *   were), and so are a rename or a hard link that would move a link to where its target climbs
 *   out (./GuestPaths.ts).
 * - a descriptor of a subdirectory was re-resolved through the host path it was opened at, so a
 *   link swapped in for that directory reached anywhere. Paths are now always resolved from the
 *   preopen, and an open is checked afterwards (the file opened is the one the path names now,
 *   reached without a link) — Node has no `openat`, so this narrows the race rather than closing it.
 * - `capabilities.filesystem.read_only` was not enforced. Covered subtrees (compared after
 *   resolution, so `./ro/../ro/x`, `ro//x` and a link into `ro/` are covered; case exact) refuse
 *   every change with `not-permitted`, what Wasmtime answers for a preopen without write
 *   permissions: create, open for writing, truncate, set-size, set-times, write, unlink, rmdir,
 *   mkdir, symlink, rename out of, into or over an ancestor, hard link out of or into.
 *
 * The shim keeps `this`-based classes, so its prototype is patched once per worker realm; each
 * descriptor finds its instance's confinement in a WeakMap (one worker runs a capsule and fresh
 * instances of its tools, each with its own grant).
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { lstatSync, realpathSync } from "node:fs"
import { climbOf, hostPath, lexical, linkFits, linksFitUnder, REFUSED, type Resolved, resolveBeneath, startsWith } from "./GuestPaths.js"

/** One instance's filesystem: its preopen and what of it is read-only. */
interface Confinement {
  /** The preopen descriptor: every path operation is made through it. */
  readonly root: any
  readonly host: string
  readonly readOnly: ReadonlyArray<ReadonlyArray<string>>
}

/** Where a descriptor is, as components beneath its preopen. */
interface Place {
  readonly confinement: Confinement
  readonly at: ReadonlyArray<string>
}

const places = new WeakMap<object, Place>()

/** The read-only subtrees as written and where they resolve to now (a link standing for one). */
const guarded = (confinement: Confinement): ReadonlyArray<ReadonlyArray<string>> => {
  const out: Array<ReadonlyArray<string>> = []
  for (const entry of confinement.readOnly) {
    out.push(entry)
    try {
      out.push(resolveBeneath(confinement.host, [], entry.join("/"), true).at)
    } catch {
      // unresolvable: the entry as written still holds
    }
  }
  return out
}

/** `at` is in a read-only subtree. */
const covered = (confinement: Confinement, at: ReadonlyArray<string>) =>
  confinement.readOnly.length > 0 && guarded(confinement).some((entry) => startsWith(at, entry))

/** `at` is in a read-only subtree or holds one (moving or removing it would move or remove it). */
const related = (confinement: Confinement, at: ReadonlyArray<string>) =>
  confinement.readOnly.length > 0 && guarded(confinement).some((entry) => startsWith(at, entry) || startsWith(entry, at))

const placeOf = (descriptor: object): Place | undefined => places.get(descriptor)

/** The preopen must still be the directory it was: a link swapped in for it (or a parent) is refused. */
const checkRoot = (confinement: Confinement) => {
  let real: string
  try {
    real = realpathSync(confinement.host)
  } catch {
    throw "no-entry"
  }
  if (real !== confinement.host) throw REFUSED
}

const resolveAt = (place: Place, path: string, follow: boolean): Resolved => {
  checkRoot(place.confinement)
  return resolveBeneath(place.confinement.host, place.at, path, follow)
}

const relativeOf = (resolved: Resolved) => resolved.at.join("/") + (resolved.trailingSlash && resolved.at.length > 0 ? "/" : "")

const NOFOLLOW = { symlinkFollow: false }

const dispose = (descriptor: any) => {
  const key = Symbol.dispose ?? Symbol.for("dispose")
  descriptor?.[key]?.()
}

/** The descriptor just opened is the file `at` names now, reached without a link. */
const openedWhatItNames = (descriptor: any, host: string, at: ReadonlyArray<string>) => {
  try {
    const path = hostPath(host, at)
    if (realpathSync(path) !== path) return false
    return lstatSync(path, { bigint: true }).ino === descriptor.metadataHash().lower
  } catch {
    return false
  }
}

let patched = false

/**
 * Patches the shim's `Descriptor` (once per realm). Descriptors no confinement knows of keep the
 * shim's behaviour, minus its `mutateDirectory` refusal: wasi-libc sets that flag on every open
 * for writing, and it asks for nothing the preopen does not already allow.
 */
const patch = (Descriptor: any) => {
  if (patched) return
  patched = true
  const proto = Descriptor.prototype
  const original: Record<string, (...args: Array<any>) => any> = {}
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (typeof proto[name] === "function" && name !== "constructor") original[name] = proto[name]
  }
  const call = (name: string, self: any, args: ReadonlyArray<any>) => original[name]!.apply(self, args as Array<any>)
  const clearMutate = (flags: any) => (flags?.mutateDirectory ? { ...flags, mutateDirectory: false } : flags)

  proto.openAt = function(this: any, pathFlags: any, path: string, openFlags: any, flags: any) {
    const place = placeOf(this)
    if (place === undefined) return call("openAt", this, [pathFlags, path, openFlags, clearMutate(flags)])
    const { confinement } = place
    const resolved = resolveAt(place, path, pathFlags?.symlinkFollow === true)
    const writes = openFlags?.create || openFlags?.truncate || flags?.write
    if (writes && covered(confinement, resolved.at)) throw REFUSED
    const opened = call("openAt", confinement.root, [NOFOLLOW, relativeOf(resolved), openFlags, clearMutate(flags)])
    if (!openedWhatItNames(opened, confinement.host, resolved.at)) {
      dispose(opened)
      throw REFUSED
    }
    places.set(opened, { confinement, at: resolved.at })
    return opened
  }

  /** A path operation: resolved, refused when `refuse` says so, then made from the preopen. */
  const viaRoot = (name: string, pathIndex: number, follow: (args: ReadonlyArray<any>) => boolean, refuse?: (c: Confinement, at: ReadonlyArray<string>) => boolean) => {
    proto[name] = function(this: any, ...args: Array<any>) {
      const place = placeOf(this)
      if (place === undefined) return call(name, this, args)
      const resolved = resolveAt(place, args[pathIndex], follow(args))
      if (refuse?.(place.confinement, resolved.at)) throw REFUSED
      const next = [...args]
      next[pathIndex] = relativeOf(resolved)
      if (pathIndex === 1) next[0] = NOFOLLOW
      return call(name, place.confinement.root, next)
    }
  }
  const followFlag = (args: ReadonlyArray<any>) => args[0]?.symlinkFollow === true
  const never = () => false
  viaRoot("statAt", 1, followFlag)
  viaRoot("metadataHashAt", 1, followFlag)
  viaRoot("setTimesAt", 1, followFlag, covered)
  viaRoot("readlinkAt", 0, never)
  viaRoot("createDirectoryAt", 0, never, covered)
  viaRoot("unlinkFileAt", 0, never, related)
  viaRoot("removeDirectoryAt", 0, never, related)

  proto.symlinkAt = function(this: any, target: string, path: string) {
    const place = placeOf(this)
    if (place === undefined) return call("symlinkAt", this, [target, path])
    const resolved = resolveAt(place, path, false)
    // The link's directory is `at` minus its own name: its target may climb that far, no further.
    if (climbOf(target) > resolved.at.length - 1) throw REFUSED
    if (covered(place.confinement, resolved.at)) throw REFUSED
    return call("symlinkAt", place.confinement.root, [target, relativeOf(resolved)])
  }

  proto.renameAt = function(this: any, oldPath: string, newDescriptor: any, newPath: string) {
    const from = placeOf(this)
    const to = placeOf(newDescriptor)
    if (from === undefined || to === undefined) return call("renameAt", this, [oldPath, newDescriptor, newPath])
    const source = resolveAt(from, oldPath, false)
    const target = resolveAt(to, newPath, false)
    if (related(from.confinement, source.at) || related(to.confinement, target.at)) throw REFUSED
    const depth = target.at.length - 1
    if (!linkFits(from.confinement.host, source.at, depth)) throw REFUSED
    // A directory moved nearer the preopen takes its links along: each must still fit.
    if (depth < source.at.length - 1 && !linksFitUnder(from.confinement.host, source.at, depth + 1)) throw REFUSED
    return call("renameAt", from.confinement.root, [relativeOf(source), to.confinement.root, relativeOf(target)])
  }

  proto.linkAt = function(this: any, oldPathFlags: any, oldPath: string, newDescriptor: any, newPath: string) {
    const from = placeOf(this)
    const to = placeOf(newDescriptor)
    if (from === undefined || to === undefined) return call("linkAt", this, [oldPathFlags, oldPath, newDescriptor, newPath])
    const source = resolveAt(from, oldPath, oldPathFlags?.symlinkFollow === true)
    const target = resolveAt(to, newPath, false)
    // A hard link out of a read-only subtree would make its file writable under another name.
    if (covered(from.confinement, source.at) || covered(to.confinement, target.at)) throw REFUSED
    if (!linkFits(from.confinement.host, source.at, target.at.length - 1)) throw REFUSED
    return call("linkAt", from.confinement.root, [NOFOLLOW, relativeOf(source), to.confinement.root, relativeOf(target)])
  }

  proto.readDirectory = function(this: any) {
    const place = placeOf(this)
    if (place !== undefined) {
      checkRoot(place.confinement)
      const path = hostPath(place.confinement.host, place.at)
      let real: string | undefined
      try {
        real = realpathSync(path)
      } catch {
        // the shim reports it
      }
      if (real !== undefined && real !== path) throw REFUSED
    }
    return call("readDirectory", this, [])
  }

  /** Changes through the descriptor itself: refused in a read-only subtree. */
  for (const name of ["setSize", "setTimes", "write", "writeViaStream", "appendViaStream"]) {
    proto[name] = function(this: any, ...args: Array<any>) {
      const place = placeOf(this)
      if (place !== undefined && covered(place.confinement, place.at)) throw REFUSED
      return call(name, this, args)
    }
  }
}

export interface GuestFsGrant {
  /** Host directory preopened as `.` (a path without links). */
  readonly preopen: string
  /** Read-only subtrees, relative to the preopen (`""`: all of it). */
  readonly readOnly: ReadonlyArray<string>
}

/**
 * Confines the preopen descriptors of one instance (what its `wasi:filesystem/preopens` hands
 * out) and every descriptor opened from them. Throws when the preopen is reached through a link.
 */
export const confine = (Descriptor: any, preopens: ReadonlyArray<readonly [any, string]>, grant: GuestFsGrant): void => {
  patch(Descriptor)
  const real = realpathSync(grant.preopen)
  if (real !== grant.preopen) {
    throw new Error(`preopen ${grant.preopen} is reached through a symbolic link (it is ${real}); refusing to preopen it`)
  }
  const readOnly = grant.readOnly.flatMap((entry) => {
    try {
      return [lexical([], entry.replace(/\\/g, "/").split("/"), 0)]
    } catch {
      return []
    }
  })
  for (const [descriptor] of preopens) {
    places.set(descriptor, { confinement: { root: descriptor, host: real, readOnly }, at: [] })
  }
}
