/**
 * Every host-side access to a path in a workdir (`task.md`, `out/result.txt`, `logs/*`, `tools/`,
 * …) or a runtime-owned tree (a session's records, the conversation store) goes through here, because guests and shell commands
 * write that tree: a link they plant must never carry a host write or read outside it.
 *
 * The policy is to follow no link at all, even one that points inside the workdir: each directory
 * on the way is opened with `O_DIRECTORY | O_NOFOLLOW`, the last component with `O_NOFOLLOW`, and
 * a symbolic link anywhere on the path fails with `WorkdirPathRefused` naming it. On Linux the
 * walk goes from directory descriptor to directory descriptor (`/proc/self/fd/<fd>/<name>`, the
 * `openat` Node lacks), so a component swapped for a link mid-walk cannot redirect it; elsewhere
 * each component is checked with `lstat` first (racy against a concurrent swap).
 */
import {
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync
} from "node:fs"
import { isAbsolute, join, normalize } from "node:path"
import { Data, Effect } from "effect"

const { O_APPEND, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_RDONLY, O_TRUNC, O_WRONLY } = constants

/** A workdir path the host refused to open. */
export class WorkdirPathRefused extends Data.TaggedError("WorkdirPathRefused")<{
  /** The workdir-relative path asked for. */
  readonly path: string
  /** The component that is the problem (the path itself, or one of its directories). */
  readonly component: string
  readonly reason: "SymbolicLink" | "OutsideWorkdir"
}> {
  override get message() {
    const on = this.component === this.path ? "" : ` (opening ${this.path})`
    return this.reason === "SymbolicLink"
      ? `${this.component} is a symbolic link; refusing to follow it out of the workdir${on}`
      : `${this.path} is outside the workdir`
  }
}

/** `path` split into workdir-relative components; `..` that leaves the workdir is refused. */
const componentsOf = (path: string): Array<string> => {
  const normal = normalize(path)
  if (isAbsolute(normal) || normal === ".." || normal.startsWith("../")) {
    throw new WorkdirPathRefused({ path, component: path, reason: "OutsideWorkdir" })
  }
  return normal.split("/").filter((part) => part !== "" && part !== ".")
}

const viaProc = existsSync("/proc/self/fd")

/** An open directory of a walk: `entry(name)` is a path the kernel resolves from that directory. */
interface Directory {
  readonly entry: (name: string) => string
  readonly close: () => void
  /** The open descriptor (Linux), which another process reaches as `/proc/<our pid>/fd/<it>`. */
  readonly descriptor?: number
}

const isLink = (path: string) => {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

/** Opens a directory of the walk; `refuse` undefined: the workdir itself, which may be reached through a link. */
const openDirectory = (path: string, refuse: (() => WorkdirPathRefused) | undefined): Directory => {
  if (refuse !== undefined && !viaProc && isLink(path)) throw refuse()
  let fd: number
  try {
    fd = openSync(path, O_RDONLY | O_DIRECTORY | (refuse === undefined ? 0 : O_NOFOLLOW))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (refuse !== undefined && (code === "ENOTDIR" || code === "ELOOP") && isLink(path)) throw refuse()
    throw error
  }
  if (viaProc) return { entry: (name) => `/proc/self/fd/${fd}/${name}`, close: () => closeSync(fd), descriptor: fd }
  closeSync(fd)
  return { entry: (name) => join(path, name), close: () => undefined }
}

/** Opens the directory `parts` beneath `workdir`, one component at a time (made on the way when `create`). */
const walk = (workdir: string, path: string, parts: ReadonlyArray<string>, create: boolean): Directory => {
  let directory = openDirectory(workdir, undefined)
  try {
    for (let index = 0; index < parts.length; index++) {
      const entry = directory.entry(parts[index]!)
      const component = parts.slice(0, index + 1).join("/")
      const openNext = () => openDirectory(entry, () => new WorkdirPathRefused({ path, component, reason: "SymbolicLink" }))
      // Opened first, made only when missing: the directory is there on every write but the
      // first, and a failed mkdir (EEXIST) costs an error object each time.
      let next: Directory
      try {
        next = openNext()
      } catch (error) {
        if (!create || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error
        try {
          mkdirSync(entry)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
        }
        next = openNext()
      }
      directory.close()
      directory = next
    }
    return directory
  } catch (error) {
    directory.close()
    throw error
  }
}

const using = <A>(directory: Directory, body: (directory: Directory) => A): A => {
  try {
    return body(directory)
  } finally {
    directory.close()
  }
}

/**
 * Runs `body` with a path for `path`'s last component that resolves from its open directory,
 * reached from `workdir` without following a link (its directories made when `create`).
 */
const inParent = <A>(workdir: string, path: string, create: boolean, body: (entry: string) => A): A => {
  const parts = componentsOf(path)
  if (parts.length === 0) throw new WorkdirPathRefused({ path, component: path, reason: "OutsideWorkdir" })
  return using(walk(workdir, path, parts.slice(0, -1), create), (directory) => {
    const entry = directory.entry(parts.at(-1)!)
    if (!viaProc && isLink(entry)) throw new WorkdirPathRefused({ path, component: parts.join("/"), reason: "SymbolicLink" })
    return body(entry)
  })
}

/** Opens `path` beneath `workdir` (`O_NOFOLLOW` added); missing directories are made when `flags` has `O_CREAT`. */
const linkAt = (path: string) => new WorkdirPathRefused({ path, component: componentsOf(path).join("/"), reason: "SymbolicLink" })

/** Opens the last component of `path` (at `entry`) without following a link there. */
const openEntry = (entry: string, path: string, flags: number, mode: number): number => {
  try {
    return openSync(entry, flags | O_NOFOLLOW, mode)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP" && isLink(entry)) throw linkAt(path)
    throw error
  }
}

export const open = (workdir: string, path: string, flags: number, mode = 0o666): number =>
  inParent(workdir, path, (flags & O_CREAT) !== 0, (entry) => openEntry(entry, path, flags, mode))

const withFd = <A>(fd: number, body: (fd: number) => A): A => {
  try {
    return body(fd)
  } finally {
    closeSync(fd)
  }
}

const missing = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code
  return code === "ENOENT" || code === "ENOTDIR"
}

/** The text of `path`, or `undefined` when it does not exist. */
export const read = (workdir: string, path: string): string | undefined => {
  let fd: number
  try {
    fd = open(workdir, path, O_RDONLY)
  } catch (error) {
    if (missing(error)) return undefined
    throw error
  }
  return withFd(fd, (fd) => readFileSync(fd, "utf8"))
}

/** Writes `content` as `path` (created or truncated), making its directories. */
export const write = (workdir: string, path: string, content: string | Uint8Array, mode = 0o666): void =>
  withFd(inParent(workdir, path, true, (entry) => createFresh(entry, path, mode)), (fd) => writeFileSync(fd, content))

/**
 * A new file at `entry`: an existing file there is unlinked first, never truncated. Truncating a
 * file that has data and writing it again makes ext4 start its writeback on close (its
 * replace-via-truncate safeguard): 0.25 ms on a quiet disk, milliseconds on a busy one, on every
 * task's `task.md` and `out/result.txt` (docs/benchmarks.md, issue 24); unlinking and creating
 * costs 0.03 ms. A new inode also means nothing is ever written into a hard link a command planted
 * at the name. A link there is refused as before.
 */
const createFresh = (entry: string, path: string, mode: number): number => {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return openSync(entry, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    }
    if (isLink(entry)) throw linkAt(path)
    try {
      unlinkSync(entry)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
    }
  }
  // Something keeps putting a file back: write the one that is there, as before.
  return openEntry(entry, path, O_WRONLY | O_CREAT | O_TRUNC, mode)
}

/**
 * Writes `content` as `path` whole: into `<name>.tmp` beside it (never through a link planted
 * there), fsynced, then renamed over it, so a reader sees the old file or the new one, never half; the
 * rename replaces a link at `path`, never follows it.
 */
export const replace = (workdir: string, path: string, content: string | Uint8Array, mode = 0o666): void => {
  const parts = componentsOf(path)
  if (parts.length === 0) throw new WorkdirPathRefused({ path, component: path, reason: "OutsideWorkdir" })
  const name = parts.at(-1)!
  using(walk(workdir, path, parts.slice(0, -1), true), (directory) => {
    const temporary = directory.entry(`${name}.tmp`)
    if (!viaProc && isLink(temporary)) throw new WorkdirPathRefused({ path, component: `${parts.join("/")}.tmp`, reason: "SymbolicLink" })
    let fd: number
    try {
      fd = openSync(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ELOOP") throw new WorkdirPathRefused({ path, component: `${parts.join("/")}.tmp`, reason: "SymbolicLink" })
      throw error
    }
    // fsync before the rename: after a crash the name holds the old content or the new, whole.
    withFd(fd, (fd) => {
      writeFileSync(fd, content)
      fsyncSync(fd)
    })
    renameSync(temporary, directory.entry(name))
  })
}

/** An append-only descriptor for `path` (created, with its directories, if missing). */
export const openAppend = (workdir: string, path: string): number => open(workdir, path, O_WRONLY | O_CREAT | O_APPEND)

/** Appends `text` to `path` (created, with its directories, if missing) in one O_APPEND write. */
export const append = (workdir: string, path: string, text: string): void => withFd(openAppend(workdir, path), (fd) => writeFileSync(fd, text))

/** Removes the file (or link) `path` if it is there: the link itself, never what it points to. */
export const remove = (workdir: string, path: string): void => {
  try {
    inParent(workdir, path, false, (entry) => unlinkSync(entry))
  } catch (error) {
    if (!missing(error)) throw error
  }
}

/** Makes the directory `path` and the ones above it, refusing a link anywhere on the way. */
export const makeDirectory = (workdir: string, path: string): void => walk(workdir, path, componentsOf(path), true).close()

/**
 * Runs `body` with the directory `path` beneath `workdir` (made if missing): `entry(name)` is a
 * path for a name in it that resolves from the open directory, so no link on the way is followed.
 */
export const inDirectory = <A>(workdir: string, path: string, body: (entry: (name: string) => string) => A): A =>
  using(walk(workdir, path, componentsOf(path), true), (directory) => body(directory.entry))

/**
 * Keeps the directory `path` beneath `workdir` open for a while (a trace's session directory),
 * made if missing and reached without following a link: `root` names it for later calls here as
 * the directory opened now, whatever is moved or linked in its place since.
 */
export const hold = (workdir: string, path = "."): { readonly root: string; readonly descriptor: number | undefined; readonly close: () => void } => {
  const directory = walk(workdir, path, componentsOf(path), true)
  return { root: directory.entry("."), descriptor: directory.descriptor, close: directory.close }
}

/** Runs a WorkdirFs call as an effect: a refused path fails, any other I/O error is a defect. */
export const attempt = <A>(body: () => A): Effect.Effect<A, WorkdirPathRefused> =>
  Effect.try({ try: body, catch: (error) => error }).pipe(
    Effect.catchAll((error) => (error instanceof WorkdirPathRefused ? Effect.fail(error) : Effect.die(error)))
  )
