/**
 * Host-side workdir access never follows a link (issue 8 item 1): not a symlinked directory on
 * the way, not a symlinked file, not a dangling link, not even a link that points inside the
 * workdir. Every refusal names the component; nothing outside is read, written or removed.
 */
import { assert, describe, it } from "@effect/vitest"
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit } from "effect"
import * as WorkdirFs from "../../src/records/WorkdirFs.js"

/** A workdir and, beside it, a directory the host must never touch through the workdir. */
const layout = () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "workdirfs-")))
  const workdir = join(base, "workdir")
  const outside = join(base, "outside")
  mkdirSync(workdir)
  mkdirSync(outside)
  const secret = join(outside, "secret.txt")
  writeFileSync(secret, "SECRET")
  return { base, workdir, outside, secret }
}

/** Runs `body` and returns what it threw (it must throw). */
const thrown = (body: () => unknown): unknown => {
  try {
    body()
  } catch (error) {
    return error
  }
  return assert.fail("expected a refusal")
}

const refusal = (body: () => unknown, component: string): WorkdirFs.WorkdirPathRefused => {
  const error = thrown(body)
  assert.instanceOf(error, WorkdirFs.WorkdirPathRefused)
  const refused = error as WorkdirFs.WorkdirPathRefused
  assert.strictEqual(refused.component, component)
  return refused
}

/** The secret's bytes and modification time are what they were. */
const untouched = (secret: string) => {
  const before = { text: readFileSync(secret, "utf8"), mtime: statSync(secret).mtimeMs }
  return () => {
    assert.strictEqual(readFileSync(secret, "utf8"), before.text)
    assert.strictEqual(statSync(secret).mtimeMs, before.mtime)
  }
}

describe("WorkdirFs", () => {
  it("writes, reads, appends and removes beneath the workdir, making directories", () => {
    const { workdir } = layout()
    WorkdirFs.write(workdir, "out/result.txt", "answer")
    assert.strictEqual(WorkdirFs.read(workdir, "out/result.txt"), "answer")
    assert.strictEqual(WorkdirFs.read(workdir, "out/missing.txt"), undefined)
    assert.strictEqual(WorkdirFs.read(workdir, "nowhere/missing.txt"), undefined)
    const fd = WorkdirFs.openAppend(workdir, "logs/guest.log")
    writeFileSync(fd, "one\n")
    writeFileSync(fd, "two\n")
    assert.strictEqual(readFileSync(join(workdir, "logs", "guest.log"), "utf8"), "one\ntwo\n")
    WorkdirFs.remove(workdir, "out/result.txt")
    WorkdirFs.remove(workdir, "out/result.txt")
    assert.deepStrictEqual(readdirSync(join(workdir, "out")), [])
    WorkdirFs.makeDirectory(workdir, "a/b/c")
    assert.isTrue(statSync(join(workdir, "a", "b", "c")).isDirectory())
  })

  it("refuses a symlinked directory on the way: nothing lands where it leads", () => {
    const { outside, secret, workdir } = layout()
    const same = untouched(secret)
    symlinkSync(outside, join(workdir, "out"))
    const error = refusal(() => WorkdirFs.write(workdir, "out/result.txt", "x"), "out")
    assert.strictEqual(error.reason, "SymbolicLink")
    assert.strictEqual(error.message, "out is a symbolic link; refusing to follow it out of the workdir (opening out/result.txt)")
    refusal(() => WorkdirFs.read(workdir, "out/secret.txt"), "out")
    refusal(() => WorkdirFs.remove(workdir, "out/secret.txt"), "out")
    refusal(() => WorkdirFs.makeDirectory(workdir, "out/deeper"), "out")
    refusal(() => WorkdirFs.openAppend(workdir, "out/guest.log"), "out")
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
    same()
  })

  it("refuses a symlinked directory deeper down, naming the path to it", () => {
    const { outside, workdir } = layout()
    mkdirSync(join(workdir, "logs"))
    symlinkSync(outside, join(workdir, "logs", "deep"))
    const error = refusal(() => WorkdirFs.write(workdir, "logs/deep/shell-1.log", "x"), "logs/deep")
    assert.match(error.message, /^logs\/deep is a symbolic link/)
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it("refuses a symlinked file: its target is neither read nor written nor appended to", () => {
    const { secret, workdir } = layout()
    const same = untouched(secret)
    mkdirSync(join(workdir, "out"))
    symlinkSync(secret, join(workdir, "out", "result.txt"))
    const error = refusal(() => WorkdirFs.read(workdir, "out/result.txt"), "out/result.txt")
    assert.strictEqual(error.message, "out/result.txt is a symbolic link; refusing to follow it out of the workdir")
    refusal(() => WorkdirFs.write(workdir, "out/result.txt", "overwritten"), "out/result.txt")
    refusal(() => WorkdirFs.openAppend(workdir, "out/result.txt"), "out/result.txt")
    same()
  })

  it("refuses a dangling link: its target is not created", () => {
    const { outside, workdir } = layout()
    symlinkSync(join(outside, "created.txt"), join(workdir, "task.md"))
    refusal(() => WorkdirFs.write(workdir, "task.md", "the task"), "task.md")
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it("refuses a link that points inside the workdir too (no link is followed at all)", () => {
    const { workdir } = layout()
    writeFileSync(join(workdir, "task.md"), "inside")
    mkdirSync(join(workdir, "out"))
    symlinkSync("../task.md", join(workdir, "out", "result.txt"))
    mkdirSync(join(workdir, "real-logs"))
    symlinkSync("real-logs", join(workdir, "logs"))
    refusal(() => WorkdirFs.read(workdir, "out/result.txt"), "out/result.txt")
    refusal(() => WorkdirFs.write(workdir, "logs/guest.log", "x"), "logs")
    assert.strictEqual(readFileSync(join(workdir, "task.md"), "utf8"), "inside")
    assert.deepStrictEqual(readdirSync(join(workdir, "real-logs")), [])
  })

  it("writes a new file over a hard link planted at the name: the linked file outside keeps its content", () => {
    const { secret, workdir } = layout()
    mkdirSync(join(workdir, "out"))
    linkSync(secret, join(workdir, "out", "result.txt"))
    WorkdirFs.write(workdir, "out/result.txt", "the answer")
    assert.strictEqual(readFileSync(secret, "utf8"), "SECRET")
    assert.strictEqual(readFileSync(join(workdir, "out", "result.txt"), "utf8"), "the answer")
    assert.strictEqual(statSync(secret).nlink, 1)
  })

  it("rewrites an existing file whole, shorter or longer", () => {
    const { workdir } = layout()
    WorkdirFs.write(workdir, "task.md", "a long first task text")
    WorkdirFs.write(workdir, "task.md", "short")
    assert.strictEqual(readFileSync(join(workdir, "task.md"), "utf8"), "short")
    WorkdirFs.write(workdir, "task.md", "a longer one than before, again")
    assert.strictEqual(readFileSync(join(workdir, "task.md"), "utf8"), "a longer one than before, again")
  })

  it("removes a link itself, never what it points to", () => {
    const { secret, workdir } = layout()
    mkdirSync(join(workdir, "out"))
    symlinkSync(secret, join(workdir, "out", "result.txt"))
    WorkdirFs.remove(workdir, "out/result.txt")
    assert.deepStrictEqual(readdirSync(join(workdir, "out")), [])
    assert.strictEqual(readFileSync(secret, "utf8"), "SECRET")
  })

  it("refuses a path that leaves the workdir", () => {
    const { workdir } = layout()
    const error = refusal(() => WorkdirFs.write(workdir, "../outside/secret.txt", "x"), "../outside/secret.txt")
    assert.strictEqual(error.reason, "OutsideWorkdir")
    refusal(() => WorkdirFs.read(workdir, "/etc/hostname"), "/etc/hostname")
    assert.strictEqual(WorkdirFs.read(workdir, "out/../task.md"), undefined)
  })

  it("reaches the workdir itself through a link (the operator's choice of path)", () => {
    const { base, workdir } = layout()
    symlinkSync(workdir, join(base, "via-link"))
    WorkdirFs.write(join(base, "via-link"), "task.md", "through the operator's link")
    assert.strictEqual(readFileSync(join(workdir, "task.md"), "utf8"), "through the operator's link")
  })

  it("a held directory keeps being the one opened, whatever is linked in its place", () => {
    const { base, outside, workdir } = layout()
    const held = WorkdirFs.hold(workdir, ".murmur/ses")
    try {
      renameSync(join(workdir, ".murmur"), join(workdir, "moved"))
      symlinkSync(outside, join(workdir, ".murmur"))
      WorkdirFs.write(held.root, "blobs/abc", "blob")
      WorkdirFs.inDirectory(held.root, "blobs", (entry) => writeFileSync(entry("def"), "blob two"))
    } finally {
      held.close()
    }
    assert.deepStrictEqual(readdirSync(join(workdir, "moved", "ses", "blobs")).sort(), ["abc", "def"])
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
    assert.isTrue(statSync(base).isDirectory())
  })

  it("a held directory is made beneath the workdir without following a link on the way", () => {
    const { outside, workdir } = layout()
    symlinkSync(outside, join(workdir, ".murmur"))
    assert.throws(() => WorkdirFs.hold(workdir, ".murmur/ses"), WorkdirFs.WorkdirPathRefused)
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
  })

  it.effect("attempt: a refusal is a typed failure, any other error a defect", () =>
    Effect.gen(function*() {
      const { secret, workdir } = layout()
      symlinkSync(secret, join(workdir, "task.md"))
      const refused = yield* Effect.flip(WorkdirFs.attempt(() => WorkdirFs.write(workdir, "task.md", "x")))
      assert.strictEqual(refused._tag, "WorkdirPathRefused")
      writeFileSync(join(workdir, "file"), "")
      const exit = yield* Effect.exit(WorkdirFs.attempt(() => WorkdirFs.write(workdir, "file/below", "x")))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Die")
    }))

  it("replace writes a file whole beneath the workdir, replacing a link at its name and never following one at its temporary name or on the way", () => {
    const { workdir, outside, secret } = layout()
    const same = untouched(secret)
    WorkdirFs.replace(workdir, ".murmur/ses_x/completion.json", "first")
    WorkdirFs.replace(workdir, ".murmur/ses_x/completion.json", "second")
    assert.strictEqual(WorkdirFs.read(workdir, ".murmur/ses_x/completion.json"), "second")
    // A link at the name is replaced by the file, not written through.
    symlinkSync(secret, join(workdir, ".murmur/ses_x/record.json"))
    WorkdirFs.replace(workdir, ".murmur/ses_x/record.json", "record")
    assert.strictEqual(WorkdirFs.read(workdir, ".murmur/ses_x/record.json"), "record")
    // A link planted at the temporary name, and a directory on the way swapped for a link.
    symlinkSync(secret, join(workdir, ".murmur/ses_x/other.json.tmp"))
    refusal(() => WorkdirFs.replace(workdir, ".murmur/ses_x/other.json", "x"), ".murmur/ses_x/other.json.tmp")
    symlinkSync(outside, join(workdir, ".murmur/ses_y"))
    refusal(() => WorkdirFs.replace(workdir, ".murmur/ses_y/completion.json", "x"), ".murmur/ses_y")
    symlinkSync(join(outside, "missing"), join(workdir, ".murmur/ses_z"))
    refusal(() => WorkdirFs.replace(workdir, ".murmur/ses_z/completion.json", "x"), ".murmur/ses_z")
    assert.deepStrictEqual(readdirSync(outside), ["secret.txt"])
    same()
  })
})
