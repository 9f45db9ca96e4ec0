/**
 * A trace line on a disk that fills mid-line is written whole or not at all. The disk is real: a
 * 64 KiB tmpfs mounted in a private mount namespace (`unshare -m`, as root) for a child node that
 * runs the built `Trace` (dist/records/Trace.js) on it. The child fills the disk, so the next line
 * has room for only part of itself; that write fails with E-RUN-007 naming ENOSPC and leaves no
 * torn line, and once space returns the next line is written after the last whole one.
 * (`npm run build` first.)
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const repo = resolve(new URL("../..", import.meta.url).pathname)
const cleanups: Array<() => void> = []
afterAll(() => cleanups.splice(0).reverse().forEach((cleanup) => cleanup()))

const CHILD = `
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { Effect } from "effect"
import { makeTrace } from ${JSON.stringify(join(repo, "dist", "records", "Trace.js"))}
const disk = process.argv[1]
const file = disk + "/ses/trace.jsonl"
const program = Effect.scoped(Effect.gen(function*() {
  const trace = yield* makeTrace({ directory: disk + "/ses", sessionId: "ses_full", capture: "meta" })
  yield* trace.record("probe", undefined, { n: 1 })
  // Every free page taken: what is left is the slack after the trace's last line.
  const fd = openSync(disk + "/filler", "w")
  try { for (;;) writeSync(fd, Buffer.alloc(4096, 1)) } catch {}
  closeSync(fd)
  const full = yield* Effect.either(trace.record("probe", undefined, { n: 2, big: "x".repeat(20000) }))
  const afterFull = readFileSync(file, "utf8")
  unlinkSync(disk + "/filler")
  const again = yield* Effect.either(trace.record("probe", undefined, { n: 3, big: "y".repeat(20000) }))
  return { full: full._tag === "Left" ? full.left : null, afterFull, again: again._tag, final: readFileSync(file, "utf8") }
}))
process.stdout.write(JSON.stringify(await Effect.runPromise(program)))
`

describe("trace.jsonl on a full disk", () => {
  it("a line that does not fit is cut back whole (E-RUN-007, ENOSPC), and the trace goes on once space returns", () => {
    const disk = mkdtempSync(join(tmpdir(), "full-disk-"))
    cleanups.push(() => rmSync(disk, { recursive: true, force: true }))
    const child = spawnSync(
      "unshare",
      ["-m", "--propagation", "private", "sh", "-c", `mount -t tmpfs -o size=64k tmpfs "$0" && exec "${process.execPath}" --input-type=module -e "$1" "$0"`, disk, CHILD],
      { cwd: repo, encoding: "utf8", timeout: 60_000 }
    )
    expect(child.status, child.stderr).toBe(0)
    const result = JSON.parse(child.stdout)
    expect(result.full).toMatchObject({ _tag: "TraceWriteFailed", code: "E-RUN-007" })
    expect(result.full.message).toContain("ENOSPC")
    const whole = (text: string) => {
      expect(text.endsWith("\n")).toBe(true)
      return text.slice(0, -1).split("\n").map((line) => JSON.parse(line).n)
    }
    expect(whole(result.afterFull)).toEqual([1])
    expect(result.again).toBe("Right")
    expect(whole(result.final)).toEqual([1, 3])
  })
})
