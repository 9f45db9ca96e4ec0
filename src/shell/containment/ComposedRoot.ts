/**
 * The composed root of the sealed tier, as bubblewrap arguments: every file the command may
 * execute or load (the allowlisted binaries, a script's `#!` interpreter chain, `env`'s program
 * included, their ELF loader and shared-library closure from `ldd`, cached per binary) bound
 * read-only at its host path, with
 * every symlink on the way reproduced as a symlink so that `PATH` lookups, `/bin -> usr/bin` and
 * `/lib64/ld-linux-x86-64.so.2` resolve as on the host. Nothing else of the host is present.
 */
import { execFileSync } from "node:child_process"
import { accessSync, closeSync, constants, existsSync, lstatSync, openSync, readlinkSync, readSync, statSync } from "node:fs"
import { basename, delimiter, dirname, isAbsolute, join, resolve } from "node:path"

const MAX_LINKS = 40
const HELD_DESCRIPTOR = /^\/proc\/\d+\/fd\/\d+$/

/** Collects bwrap mount arguments for host paths, each path made present once. */
export class RootBuilder {
  readonly args: Array<string> = []
  private readonly present = new Set<string>()

  /** Adds `path` (absolute) as on the host; `false` when it does not exist. */
  add(path: string, mode: "ro" | "rw" = "ro"): boolean {
    return this.walk(resolve(path), mode, 0)
  }

  /** Raw arguments (`--tmpfs /tmp`, …), kept in order with the binds. */
  push(...args: ReadonlyArray<string>): void {
    this.args.push(...args)
  }

  private walk(path: string, mode: "ro" | "rw", links: number): boolean {
    if (links > MAX_LINKS) return false
    const parts = path.split("/").filter((part) => part !== "")
    let current = "/"
    for (let index = 0; index < parts.length; index++) {
      const next = join(current, parts[index]!)
      let stat
      try {
        stat = lstatSync(next)
      } catch {
        return false
      }
      if (stat.isSymbolicLink()) {
        const target = readlinkSync(next)
        // A directory another process holds open (a delegated child's workdir) appears at this
        // path itself. bwrap, in a user namespace of its own, may not open another process's
        // descriptor, so it binds the directory by its name now: a name swapped for a link at
        // that instant leads nowhere (the child's id is not a directory outside), and a bind
        // creates nothing.
        if (HELD_DESCRIPTOR.test(target)) {
          const at = join(next, ...parts.slice(index + 1))
          const key = `${mode}:${at}`
          if (!this.present.has(key)) {
            this.present.add(key)
            this.args.push(mode === "ro" ? "--ro-bind" : "--bind", join(readlinkSync(target), ...parts.slice(index + 1)), at)
          }
          return true
        }
        if (!this.present.has(next)) {
          this.present.add(next)
          this.args.push("--symlink", target, next)
        }
        return this.walk(join(resolve(dirname(next), target), ...parts.slice(index + 1)), mode, links + 1)
      }
      current = next
    }
    const key = `${mode}:${current}`
    if (!this.present.has(key)) {
      this.present.add(key)
      this.args.push(mode === "ro" ? "--ro-bind" : "--bind", current, current)
    }
    return true
  }
}

const closures = new Map<string, ReadonlyArray<string>>()

/** The loader and shared libraries `ldd` lists for `binary` (none for a static binary or a script). */
export const libraryClosure = (binary: string): ReadonlyArray<string> => {
  const known = closures.get(binary)
  if (known !== undefined) return known
  let output = ""
  try {
    output = execFileSync("ldd", [binary], { encoding: "utf8", env: { LC_ALL: "C", PATH: "/usr/bin:/bin:/usr/sbin:/sbin" }, stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 })
  } catch {
    // "not a dynamic executable"
  }
  const paths: Array<string> = []
  for (const line of output.split("\n")) {
    const match = /=>\s+(\/\S+)/u.exec(line) ?? /^\s*(\/\S+)\s+\(/u.exec(line)
    if (match !== null) paths.push(match[1]!)
  }
  closures.set(binary, paths)
  return paths
}

/** A `#!` script's interpreter line: the interpreter's path and its arguments, else undefined. */
export const shebang = (path: string): { readonly interpreter: string; readonly args: ReadonlyArray<string> } | undefined => {
  let fd: number | undefined
  try {
    fd = openSync(path, "r")
    const head = Buffer.alloc(256)
    const read = readSync(fd, head, 0, head.length, 0)
    const text = head.subarray(0, read).toString("latin1")
    if (!text.startsWith("#!")) return undefined
    const [interpreter, ...args] = text.slice(2).split("\n")[0]!.trim().split(/\s+/u)
    return interpreter !== undefined && interpreter.startsWith("/") ? { interpreter, args } : undefined
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The interpreter of a `#!` script, else undefined. */
export const shebangInterpreter = (path: string): string | undefined => shebang(path)?.interpreter

/** How deep a script run by a script run by a script is followed. */
const MAX_CHAIN = 4

/** Where `name` is found on `path`, unresolved (a symlink stays a symlink), else undefined. */
export const locate = (name: string, path: string | undefined): string | undefined => {
  if (name.includes("/")) return isAbsolute(name) && existsSync(name) ? name : undefined
  for (const dir of (path ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue
    const candidate = join(dir, name)
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

export interface InterpreterChain {
  /** Every program the executable needs to start: itself, its interpreter, what `env` runs, and theirs. */
  readonly programs: ReadonlyArray<string>
  /** A program a `#!/usr/bin/env <name>` line names that `path` does not have. */
  readonly missing?: string | undefined
}

/**
 * What an executable really runs: a `#!` script's interpreter, and when that is `env`, the program
 * it names looked up on `path` (`-S` and option arguments skipped), followed a few levels (a shim
 * run by a script run by `env`).
 */
export const interpreterChain = (path: string, pathEnv: string | undefined): InterpreterChain => {
  const programs = [path]
  let current = path
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const line = shebang(current)
    if (line === undefined) break
    programs.push(line.interpreter)
    if (basename(line.interpreter) !== "env") {
      current = line.interpreter
      continue
    }
    const words = line.args.flatMap((arg) => arg.split(/\s+/u)).filter((word) => word !== "")
    const name = words.find((word) => !word.startsWith("-") && !word.includes("="))
    if (name === undefined) break
    const found = locate(name, pathEnv)
    if (found === undefined) return { programs, missing: name }
    programs.push(found)
    current = found
  }
  return { programs }
}

/** Adds an executable, the programs its `#!` chain runs (./interpreterChain) and their library closures. */
export const addExecutable = (root: RootBuilder, path: string, pathEnv?: string): boolean => {
  if (!root.add(path)) return false
  for (const program of interpreterChain(path, pathEnv).programs) {
    root.add(program)
    for (const library of libraryClosure(program)) root.add(library)
  }
  return true
}

/** The dynamic loader's cache, so libraries outside the default dirs resolve as on the host. */
export const addLoaderCache = (root: RootBuilder): void => {
  if (existsSync("/etc/ld.so.cache")) root.add("/etc/ld.so.cache")
}
