/**
 * Components built before, by the digest of what they were built from (./GuestBuild.ts's
 * `guestDigest`: sources, world, WIT, builders): a guest whose digest is here is copied instead
 * of built, so the same sources build once however many capsules hold them. Concurrent builds of
 * one digest (two terminals, parallel tests) take a lock file: the second waits for the first and
 * reuses its component. The directory is bounded: past `maxBytes` the least recently used
 * components go. Nothing here follows a link: an entry that is not a regular file is ignored.
 */
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, utimesSync, writeSync } from "node:fs"
import { join } from "node:path"
import { replaceFile } from "./ReplaceFile.js"

export interface BuildCache {
  readonly directory: string
  /** The most the cached components may take together. */
  readonly maxBytes: number
}

/** 1 GiB: some seventy StarlingMonkey tools (about 14 MB each), or hundreds of QuickJS ones. */
export const DEFAULT_BUILD_CACHE_BYTES = 1024 * 1_048_576

/** How long a build waits for another process building the same digest. */
const LOCK_WAIT_MS = 10 * 60_000

const isFile = (path: string) => {
  try {
    return lstatSync(path).isFile()
  } catch {
    return false
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const cachedAt = (file: string): Uint8Array | undefined => {
  if (!isFile(file)) return undefined
  const now = new Date()
  // The entry's mtime is its last use: pruning keeps what was used most recently.
  utimesSync(file, now, now)
  return new Uint8Array(readFileSync(file))
}

/** True when the cache holds a component for `digest` (a build of it will be a copy). */
export const isCached = (cache: BuildCache, digest: string): boolean => isFile(join(cache.directory, `${digest}.wasm`))

/** Takes the digest's lock, or answers false while a live process holds it (a dead one's is taken over). */
const tryLock = (lock: string): boolean => {
  try {
    const fd = openSync(lock, "wx", 0o600)
    writeSync(fd, String(process.pid))
    closeSync(fd)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
  const holder = Number(isFile(lock) ? readFileSync(lock, "utf8") : NaN)
  if (Number.isInteger(holder) && holder > 0 && alive(holder)) return false
  rmSync(lock, { force: true })
  return tryLock(lock)
}

/** Removes the least recently used components until the rest fit in `maxBytes`; `keep` is never removed. */
export const prune = (cache: BuildCache, keep?: string) => {
  const entries = readdirSync(cache.directory)
    .filter((name) => name.endsWith(".wasm"))
    .map((name) => join(cache.directory, name))
    .filter(isFile)
    .map((path) => {
      const { mtimeMs, size } = lstatSync(path)
      return { path, mtimeMs, size }
    })
  let total = entries.reduce((sum, entry) => sum + entry.size, 0)
  const oldestFirst = entries.filter((entry) => entry.path !== keep).sort((a, b) => a.mtimeMs - b.mtimeMs)
  for (const entry of oldestFirst) {
    if (total <= cache.maxBytes) break
    rmSync(entry.path, { force: true })
    total -= entry.size
  }
}

/**
 * The component for `digest`: from the cache, else from `build` (then kept). `reused` says which.
 * Without a cache, always built.
 */
export const cachedBuild = async (
  cache: BuildCache | undefined,
  digest: string,
  build: () => Promise<Uint8Array>
): Promise<{ readonly bytes: Uint8Array; readonly reused: boolean }> => {
  if (cache === undefined) return { bytes: await build(), reused: false }
  mkdirSync(cache.directory, { recursive: true, mode: 0o700 })
  const file = join(cache.directory, `${digest}.wasm`)
  const lock = join(cache.directory, `${digest}.lock`)
  const deadline = Date.now() + LOCK_WAIT_MS
  for (;;) {
    const cached = cachedAt(file)
    if (cached !== undefined) return { bytes: cached, reused: true }
    if (tryLock(lock)) break
    if (Date.now() > deadline) return { bytes: await build(), reused: false }
    await sleep(250)
  }
  try {
    // Built by another process between the look and the lock.
    const raced = cachedAt(file)
    if (raced !== undefined) return { bytes: raced, reused: true }
    const bytes = await build()
    replaceFile(file, bytes, 0o600)
    prune(cache, file)
    return { bytes, reused: false }
  } finally {
    rmSync(lock, { force: true })
  }
}
