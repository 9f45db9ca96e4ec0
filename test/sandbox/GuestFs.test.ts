/**
 * The guest's filesystem (src/sandbox/host/GuestFs.ts) through the very imports a guest gets
 * (`wasiImports`), called as the jco glue calls them (issue 8 items 1 and 3):
 *
 * - a link whose target leaves the preopen cannot be made, nor moved (rename, hard link) to
 *   where its target would leave it; links that were already there (a shell's, the operator's)
 *   are never followed out, not through a subdirectory descriptor either;
 * - `read_only` subtrees refuse every change with `not-permitted` (Wasmtime's answer for a preopen
 *   without write permissions), compared after resolution; writes elsewhere still work.
 *
 * The same guards are exercised by real components in ReadOnly.test.ts and PlantedLinks.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { GuestGrant } from "../../src/sandbox/GuestJob.js"
import { climbOf, resolveBeneath } from "../../src/sandbox/host/GuestPaths.js"
import { wasiImports } from "../../src/sandbox/host/WasiImports.js"
import { snapshot } from "../lib/TreeSnapshot.js"

const sinks = { stdout: () => undefined, stderr: () => undefined }

/** A workdir (the preopen) with `ro/keep.txt` and `ro/sub/`, beside an outside directory with a secret. */
const layout = () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "guestfs-")))
  const workdir = join(base, "workdir")
  const outside = join(base, "outside")
  mkdirSync(join(workdir, "ro", "sub"), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(workdir, "ro", "keep.txt"), "KEEP")
  writeFileSync(join(outside, "secret.txt"), "SECRET")
  return { base, workdir, outside }
}

/** The preopen descriptor a guest with this grant gets. */
const preopenOf = (workdir: string, readOnly: ReadonlyArray<string> = []): any => {
  const grant: GuestGrant = { preopen: workdir, readOnly, env: {}, network: [], memoryBytes: 1 << 24, instances: 100 }
  const [[dir]] = wasiImports(grant, sinks)["wasi:filesystem/preopens"].getDirectories()
  return dir
}

/** The WASI error code the call answered (the shim throws the code itself). */
const errorOf = (call: () => unknown): string => {
  try {
    call()
  } catch (error) {
    return typeof error === "string" ? error : `unexpected: ${String(error)}`
  }
  return "ok"
}

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (data: Uint8Array) => new TextDecoder().decode(data)

const writeVia = (dir: any, path: string, content: string, pathFlags: object = {}) => {
  const file = dir.openAt(pathFlags, path, { create: true, truncate: true }, { write: true })
  file.write(bytes(content), 0n)
}


describe("GuestFs: links", () => {
  it("symlink-at refuses a target that climbs out of the preopen, and makes the link otherwise", () => {
    const { workdir } = layout()
    const dir = preopenOf(workdir)
    dir.createDirectoryAt("out")
    assert.strictEqual(errorOf(() => dir.symlinkAt("../../secret.txt", "out/result.txt")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.symlinkAt("../secret.txt", "task.md")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.symlinkAt("/etc/passwd", "out/abs")), "not-permitted")
    // `..` after a name: the OS resolves it from wherever the name leads (which may become a link).
    assert.strictEqual(errorOf(() => dir.symlinkAt("ro/../../secret.txt", "out/weird")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.symlinkAt("..\\..\\secret.txt", "out/backslash")), "not-permitted")
    assert.isFalse(existsSync(join(workdir, "out", "result.txt")))
    assert.deepStrictEqual(readdirSync(join(workdir, "out")), [])
    assert.strictEqual(errorOf(() => dir.symlinkAt("../ro/keep.txt", "out/inside")), "ok")
    assert.strictEqual(errorOf(() => dir.symlinkAt("ro/keep.txt", "top")), "ok")
    assert.strictEqual(readlinkSync(join(workdir, "out", "inside")), "../ro/keep.txt")
  })

  it("a link already pointing out (a shell's, the operator's) is never followed out", () => {
    const { outside, workdir } = layout()
    symlinkSync("../outside/secret.txt", join(workdir, "relative-out"))
    symlinkSync(join(outside, "secret.txt"), join(workdir, "absolute-out"))
    symlinkSync(outside, join(workdir, "dir-out"))
    const dir = preopenOf(workdir)
    for (const path of ["relative-out", "absolute-out", "dir-out/secret.txt"]) {
      assert.strictEqual(errorOf(() => dir.openAt({ symlinkFollow: true }, path, {}, { read: true })), "not-permitted", path)
      assert.strictEqual(errorOf(() => dir.statAt({ symlinkFollow: true }, path)), "not-permitted", path)
    }
    assert.strictEqual(errorOf(() => writeVia(dir, "dir-out/planted.txt", "x")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.linkAt({ symlinkFollow: true }, "relative-out", dir, "hard")), "not-permitted")
    assert.strictEqual(dir.readlinkAt("relative-out"), "../outside/secret.txt")
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it("a subdirectory descriptor does not follow a link swapped in for its directory", () => {
    const { outside, workdir } = layout()
    mkdirSync(join(workdir, "sub"))
    symlinkSync("../outside", join(workdir, "planted"))
    const dir = preopenOf(workdir)
    const sub = dir.openAt({}, "sub", { directory: true }, { read: true })
    // What a concurrent shell could do: move the directory away and put the link in its place.
    renameSync(join(workdir, "sub"), join(workdir, "sub-away"))
    renameSync(join(workdir, "planted"), join(workdir, "sub"))
    assert.strictEqual(errorOf(() => sub.openAt({}, "secret.txt", {}, { read: true })), "not-permitted")
    assert.strictEqual(errorOf(() => writeVia(sub, "planted.txt", "x")), "not-permitted")
    assert.strictEqual(errorOf(() => sub.readDirectory()), "not-permitted")
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it("a rename or hard link cannot move a link to where its target climbs out", () => {
    const { outside, workdir } = layout()
    mkdirSync(join(workdir, "a", "b"), { recursive: true })
    const dir = preopenOf(workdir)
    assert.strictEqual(errorOf(() => dir.symlinkAt("../../outside/secret.txt", "a/b/link")), "ok")
    assert.strictEqual(errorOf(() => dir.renameAt("a/b/link", dir, "link")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.linkAt({}, "a/b/link", dir, "link")), "not-permitted")
    // The directory holding it, moved nearer the preopen, takes the link along: refused too.
    assert.strictEqual(errorOf(() => dir.renameAt("a/b", dir, "b")), "not-permitted")
    assert.strictEqual(errorOf(() => dir.renameAt("a", dir, "a2")), "ok")
    assert.strictEqual(errorOf(() => dir.renameAt("a2/b/link", dir, "a2/link2")), "not-permitted")
    mkdirSync(join(workdir, "c", "d"), { recursive: true })
    assert.strictEqual(errorOf(() => dir.renameAt("a2/b/link", dir, "c/d/link")), "ok")
    assert.isFalse(existsSync(join(workdir, "link")))
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it("refuses to preopen a directory reached through a link", () => {
    const { base, workdir } = layout()
    symlinkSync(workdir, join(base, "via-link"))
    try {
      preopenOf(join(base, "via-link"))
      assert.fail("expected a refusal")
    } catch (error) {
      assert.match((error as Error).message, /is reached through a symbolic link/)
    }
  })

  it("climbOf and resolveBeneath", () => {
    assert.strictEqual(climbOf("x"), 0)
    assert.strictEqual(climbOf("../x"), 1)
    assert.strictEqual(climbOf("./../../x/./y"), 2)
    assert.strictEqual(climbOf("a/../x"), Infinity)
    assert.strictEqual(climbOf("/x"), Infinity)
    const { workdir } = layout()
    mkdirSync(join(workdir, "d"))
    symlinkSync("d", join(workdir, "to-d"))
    symlinkSync("../ro/keep.txt", join(workdir, "d", "to-keep"))
    assert.deepStrictEqual(resolveBeneath(workdir, [], "./to-d//to-keep", true).at, ["ro", "keep.txt"])
    assert.deepStrictEqual(resolveBeneath(workdir, [], "to-d/to-keep", false).at, ["d", "to-keep"])
    assert.deepStrictEqual(resolveBeneath(workdir, [], "ro/../ro/new/x", false).at, ["ro", "new", "x"])
    assert.throws(() => resolveBeneath(workdir, ["d"], "../ro", false))
  })
})

describe("GuestFs: read_only", () => {
  /** Each change a guest can make to `ro/`, as the jco glue calls it. */
  const changes: ReadonlyArray<readonly [string, (dir: any) => unknown]> = [
    ["create", (dir) => dir.openAt({}, "ro/created.txt", { create: true, exclusive: true }, { write: true })],
    ["overwrite", (dir) => writeVia(dir, "ro/keep.txt", "overwritten")],
    ["open for writing", (dir) => dir.openAt({}, "ro/keep.txt", {}, { write: true })],
    ["append", (dir) => dir.openAt({}, "ro/keep.txt", {}, { read: true }).appendViaStream()],
    ["write at", (dir) => dir.openAt({}, "ro/keep.txt", {}, { read: true }).write(bytes("x"), 0n)],
    ["truncate", (dir) => dir.openAt({}, "ro/keep.txt", { truncate: true }, { read: true })],
    ["set-size", (dir) => dir.openAt({}, "ro/keep.txt", {}, { read: true }).setSize(0n)],
    ["set-times", (dir) => dir.openAt({}, "ro/keep.txt", {}, { read: true }).setTimes({ tag: "now" }, { tag: "now" })],
    ["set-times-at", (dir) => dir.setTimesAt({}, "ro/keep.txt", { tag: "now" }, { tag: "now" })],
    ["unlink", (dir) => dir.unlinkFileAt("ro/keep.txt")],
    ["rename out of", (dir) => dir.renameAt("ro/keep.txt", dir, "stolen.txt")],
    ["rename into", (dir) => (writeVia(dir, "incoming.txt", "in"), dir.renameAt("incoming.txt", dir, "ro/incoming.txt"))],
    ["rename the subtree", (dir) => dir.renameAt("ro", dir, "ro-moved")],
    ["rename over it", (dir) => (dir.createDirectoryAt("empty"), dir.renameAt("empty", dir, "ro/sub"))],
    ["mkdir", (dir) => dir.createDirectoryAt("ro/made")],
    ["rmdir", (dir) => dir.removeDirectoryAt("ro/sub")],
    ["symlink", (dir) => dir.symlinkAt("keep.txt", "ro/link")],
    ["hard link out of", (dir) => dir.linkAt({}, "ro/keep.txt", dir, "hard.txt")],
    ["hard link into", (dir) => (writeVia(dir, "mine.txt", "mine"), dir.linkAt({}, "mine.txt", dir, "ro/mine.txt"))],
    ["normalised path", (dir) => writeVia(dir, "./ro/../ro//keep.txt", "normalised")],
    ["through a link into it", (dir) => (dir.symlinkAt("ro/keep.txt", "into-ro"), writeVia(dir, "into-ro", "linked", { symlinkFollow: true }))],
    ["through a subdirectory descriptor", (dir) => writeVia(dir.openAt({}, "ro/sub", { directory: true }, { read: true }), "x.txt", "x")]
  ]

  for (const [name, change] of changes) {
    it(`${name}: not-permitted, ro/ unchanged`, () => {
      const { workdir } = layout()
      const before = snapshot(join(workdir, "ro"))
      const dir = preopenOf(workdir, ["ro"])
      assert.strictEqual(errorOf(() => change(dir)), "not-permitted")
      assert.deepStrictEqual(snapshot(join(workdir, "ro")), before)
      assert.strictEqual(statSync(join(workdir, "ro", "keep.txt")).size, 4)
    })
  }

  it("reads, and every write outside the subtree, still work", () => {
    const { workdir } = layout()
    const dir = preopenOf(workdir, ["ro"])
    const keep = dir.openAt({}, "ro/keep.txt", {}, { read: true })
    assert.strictEqual(text(keep.read(16n, 0n)[0]), "KEEP")
    assert.strictEqual(dir.statAt({}, "ro/keep.txt").size, 4n)
    assert.strictEqual(errorOf(() => writeVia(dir, "out/result.txt", "fine")), "no-entry")
    dir.createDirectoryAt("out")
    writeVia(dir, "out/result.txt", "fine")
    writeVia(dir, "rom.txt", "a name that only starts like ro")
    dir.renameAt("out/result.txt", dir, "out/renamed.txt")
    dir.symlinkAt("renamed.txt", "out/link")
    dir.unlinkFileAt("out/link")
    assert.strictEqual(readFileSync(join(workdir, "out", "renamed.txt"), "utf8"), "fine")
    assert.strictEqual(readFileSync(join(workdir, "rom.txt"), "utf8"), "a name that only starts like ro")
  })

  it("an entry is a path: case exact, normalised, and `\"\"` covers the whole preopen", () => {
    const { workdir } = layout()
    mkdirSync(join(workdir, "RO"))
    const dir = preopenOf(workdir, ["./ro/"])
    assert.strictEqual(errorOf(() => writeVia(dir, "ro/new.txt", "x")), "not-permitted")
    assert.strictEqual(errorOf(() => writeVia(dir, "RO/new.txt", "x")), "ok")
    const all = preopenOf(workdir, [""])
    assert.strictEqual(errorOf(() => writeVia(all, "anywhere.txt", "x")), "not-permitted")
    assert.strictEqual(errorOf(() => all.createDirectoryAt("made")), "not-permitted")
  })

  it("a read-only entry that is itself a link protects where it leads", () => {
    const { workdir } = layout()
    mkdirSync(join(workdir, "data"))
    writeFileSync(join(workdir, "data", "file.txt"), "DATA")
    symlinkSync("data", join(workdir, "docs"))
    const dir = preopenOf(workdir, ["docs"])
    assert.strictEqual(errorOf(() => writeVia(dir, "data/file.txt", "changed")), "not-permitted")
    assert.strictEqual(errorOf(() => writeVia(dir, "docs/file.txt", "changed", { symlinkFollow: true })), "not-permitted")
    assert.strictEqual(readFileSync(join(workdir, "data", "file.txt"), "utf8"), "DATA")
  })
})
