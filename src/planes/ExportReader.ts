/**
 * The host side of an export root (`exports.files`, `exports.peer_files`): open one file, or walk
 * the whole root, without ever following a link. The export root lies in the workdir, which guests
 * and shell commands write, so it gets the workdir's discipline (../sandbox/WorkdirFs.ts): every
 * directory on the way is opened `O_NOFOLLOW` from the one before, the leaf with `O_NOFOLLOW |
 * O_NONBLOCK` (a FIFO must not park the request), and what is served is checked and read from
 * that one descriptor, so nothing can be swapped in between the check and the read. A link
 * anywhere is `symlink_refused`; in a listing it is left out.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readdirSync, readSync, type Stats } from "node:fs"
import { read as readAsync } from "node:fs"
import { createHash } from "node:crypto"
import { join } from "node:path"
import { Effect, Either, Option, Stream } from "effect"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { PlaneRefusal } from "../services/ResourcePlanes.js"

const { O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = constants

export interface OpenedFile {
  readonly fd: number
  readonly size: number
  readonly mtimeMs: number
  /** Identity and version of the inode (device, inode, size, mtime and ctime in ns): the hash cache's key. */
  readonly version: string
}

export interface Failure {
  readonly code: Extract<PlaneRefusal, "not_found" | "outside_root" | "symlink_refused" | "not_a_regular_file" | "too_large" | "io_error">
  readonly detail?: string
}

const fromError = (error: unknown): Failure => {
  if (error instanceof WorkdirFs.WorkdirPathRefused) return { code: error.reason === "SymbolicLink" ? "symlink_refused" : "outside_root" }
  const code = (error as NodeJS.ErrnoException).code
  // A name too long for the filesystem names nothing there either.
  if (code === "ENOENT" || code === "ENOTDIR" || code === "ENAMETOOLONG") return { code: "not_found" }
  if (code === "ELOOP") return { code: "symlink_refused" }
  return { code: "io_error", detail: (error as Error).message }
}

/**
 * Opens `root/<components>` beneath `workdir` read-only, checked from its descriptor to be a
 * regular file of at most `maxBytes`. The caller owns the descriptor.
 */
export const openExportFile = (
  workdir: string,
  root: string,
  components: ReadonlyArray<string>,
  maxBytes: number
): Either.Either<OpenedFile, Failure> => {
  let fd: number
  try {
    fd = WorkdirFs.open(workdir, [root, ...components].join("/"), O_RDONLY | O_NONBLOCK)
  } catch (error) {
    return Either.left(fromError(error))
  }
  try {
    const stat = fstatSync(fd, { bigint: true })
    if (!stat.isFile()) {
      closeSync(fd)
      return Either.left({ code: "not_a_regular_file" })
    }
    if (stat.size > BigInt(maxBytes)) {
      closeSync(fd)
      return Either.left({ code: "too_large" })
    }
    return Either.right({
      fd,
      size: Number(stat.size),
      mtimeMs: Number(stat.mtimeMs),
      version: `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`
    })
  } catch (error) {
    closeSync(fd)
    return Either.left(fromError(error))
  }
}

const CHUNK = 256 * 1024

/**
 * Hashes by inode version: a file read again unchanged is not hashed again. Any write moves its
 * ctime, which no caller can set back, so a changed file never meets a stale hash.
 */
const hashes = new Map<string, string>()
const HASHES_KEPT = 1024

/** SHA-256 (hex) of an opened file, from its descriptor or from the cache for that very inode version. */
export const hashOpened = (file: OpenedFile): string => {
  const known = hashes.get(file.version)
  if (known !== undefined) return known
  const hash = hashFd(file.fd, file.size)
  if (hashes.size >= HASHES_KEPT) hashes.delete(hashes.keys().next().value!)
  hashes.set(file.version, hash)
  return hash
}

/** SHA-256 (hex) of the first `size` bytes of `fd`, read by position (the descriptor's offset is untouched). */
export const hashFd = (fd: number, size: number): string => {
  const hash = createHash("sha256")
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size, 1)))
  let position = 0
  while (position < size) {
    const read = readSync(fd, buffer, 0, Math.min(buffer.length, size - position), position)
    if (read === 0) break
    hash.update(buffer.subarray(0, read))
    position += read
  }
  return hash.digest("hex")
}

/**
 * The first `size` bytes of `fd` as a stream, read by position in 256 KiB chunks; the descriptor
 * is closed when the stream ends, fails or is interrupted (a client leaving mid-body).
 */
export const streamFd = (fd: number, size: number): Stream.Stream<Uint8Array> => {
  let position = 0
  const next = Effect.async<Option.Option<Uint8Array>>((resume) => {
    if (position >= size) return resume(Effect.succeed(Option.none()))
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK, size - position))
    readAsync(fd, buffer, 0, buffer.length, position, (error, read) => {
      if (error !== null || read === 0) return resume(Effect.succeed(Option.none()))
      position += read
      resume(Effect.succeed(Option.some(new Uint8Array(buffer.buffer, buffer.byteOffset, read))))
    })
  })
  return Stream.repeatEffectOption(Effect.flatMap(next, Option.match({ onNone: () => Effect.fail(Option.none()), onSome: Effect.succeed }))).pipe(
    Stream.ensuring(Effect.sync(() => closeSync(fd)))
  )
}

export interface ListEntry {
  readonly path: string
  readonly size_bytes: number
  readonly mtime_ms: number
  /** `null` for a file over `max_bytes`: it is listed with its real size but never hashed or served. */
  readonly sha256: string | null
}

const viaProc = existsSync("/proc/self/fd")

/**
 * Calls `onFile` for every regular file under `root` (recursive, `/`-separated paths, in
 * directory order) with a descriptor open on it (`O_NOFOLLOW`) and its `fstat`. A missing root
 * has no files; links and other non-regular entries are left out; a directory that cannot be
 * opened without following a link is skipped.
 */
export const eachExportFile = (
  workdir: string,
  root: string,
  onFile: (path: string, fd: number, stat: Stats) => void
): Either.Either<void, Failure> => {
  let rootFd: number
  try {
    rootFd = WorkdirFs.open(workdir, root, O_RDONLY | O_DIRECTORY)
  } catch (error) {
    const failure = fromError(error)
    return failure.code === "not_found" ? Either.void : Either.left(failure)
  }
  const visit = (fd: number, dirPath: string, prefix: string) => {
    const at = (name: string) => (viaProc ? `/proc/self/fd/${fd}/${name}` : join(dirPath, name))
    for (const dirent of readdirSync(viaProc ? `/proc/self/fd/${fd}` : dirPath, { withFileTypes: true })) {
      const relative = prefix === "" ? dirent.name : `${prefix}/${dirent.name}`
      if (dirent.isDirectory()) {
        let child: number
        try {
          child = openSync(at(dirent.name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
          continue
        }
        try {
          visit(child, join(dirPath, dirent.name), relative)
        } finally {
          closeSync(child)
        }
      } else if (dirent.isFile()) {
        let file: number
        try {
          file = openSync(at(dirent.name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        } catch {
          continue
        }
        try {
          const stat = fstatSync(file)
          if (stat.isFile()) onFile(relative, file, stat)
        } finally {
          closeSync(file)
        }
      }
    }
  }
  try {
    visit(rootFd, join(workdir, root), "")
  } catch (error) {
    return Either.left(fromError(error))
  } finally {
    closeSync(rootFd)
  }
  return Either.void
}

const byPath = (a: { readonly path: string }, b: { readonly path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)

/**
 * Every regular file under `root` (`eachExportFile`), sorted by path, each sized, dated and
 * hashed from the descriptor it was found with (never hashed past `maxBytes`).
 */
export const listExport = (workdir: string, root: string, maxBytes: number): Either.Either<ReadonlyArray<ListEntry>, Failure> => {
  const entries: Array<ListEntry> = []
  const walked = eachExportFile(workdir, root, (path, fd, stat) =>
    entries.push({
      path,
      size_bytes: stat.size,
      mtime_ms: Math.floor(stat.mtimeMs),
      sha256: stat.size > maxBytes ? null : hashFd(fd, stat.size)
    }))
  return Either.map(walked, () => entries.sort(byPath))
}
