/**
 * `--keep-sessions N`: the older sessions under `<dir>/workdir/` (and their records under
 * `<dir>/.murmur/sessions/`) are deleted at start so N remain with the new one; nothing is deleted through a link (a planted `ses_…` link, or
 * `workdir/` itself a link), and names that are not session ids are left alone. The CLI part
 * needs `npm run build`.
 */
import { Effect, Exit } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { pruneSessions } from "../../src/records/SessionRetention.js"
import { endTurn } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const temp = () => {
  const dir = mkdtempSync(join(tmpdir(), "keep-sessions-"))
  dirs.push(dir)
  return dir
}
const session = (n: number) => `ses_01a22f6d${String(n).padStart(24, "0")}`

describe("pruneSessions", () => {
  it("keeps the newest keep-1, by id; a planted ses_ link and other names stay, and so does what the link points at", async () => {
    const capsule = temp()
    const outside = temp()
    writeFileSync(join(outside, "precious"), "keep me")
    for (const n of [1, 2, 3, 4, 5]) {
      mkdirSync(join(capsule, "workdir", session(n), "out"), { recursive: true })
      writeFileSync(join(capsule, "workdir", session(n), "out", "result.txt"), "x")
    }
    mkdirSync(join(capsule, "workdir", "notes"))
    symlinkSync(outside, join(capsule, "workdir", session(0)))
    // A link inside a session that goes away: removed as a link, its target untouched.
    symlinkSync(outside, join(capsule, "workdir", session(1), "escape"))
    const pruned = await Effect.runPromise(pruneSessions(capsule, 3, { sessionId: session(9), pid: process.pid }))
    expect(pruned.deleted).toEqual([session(1), session(2), session(3)])
    expect(readdirSync(join(capsule, "workdir")).sort()).toEqual(["notes", session(0), session(4), session(5)].sort())
    expect(readdirSync(outside)).toEqual(["precious"])
  })

  it("a workdir/ that is a link is refused and nothing behind it is deleted", async () => {
    const capsule = temp()
    const elsewhere = temp()
    mkdirSync(join(elsewhere, session(1)))
    mkdirSync(join(elsewhere, session(2)))
    symlinkSync(elsewhere, join(capsule, "workdir"))
    const exit = await Effect.runPromiseExit(pruneSessions(capsule, 1, { sessionId: session(9), pid: process.pid }))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(JSON.stringify(exit)).toContain("WorkdirPathRefused")
    expect(readdirSync(elsewhere).sort()).toEqual([session(1), session(2)])
  })

  it("a session's records (.murmur/sessions/<id>) go with its workdir; records left by a --workdir session count as a session", async () => {
    const capsule = temp()
    for (const n of [1, 2, 3]) mkdirSync(join(capsule, "workdir", session(n)), { recursive: true })
    for (const n of [0, 1, 2, 3]) {
      mkdirSync(join(capsule, ".murmur", "sessions", session(n)), { recursive: true })
      writeFileSync(join(capsule, ".murmur", "sessions", session(n), "trace.jsonl"), "{}\n")
    }
    const pruned = await Effect.runPromise(pruneSessions(capsule, 2, { sessionId: session(9), pid: process.pid }))
    expect(pruned.deleted).toEqual([session(0), session(1), session(2)])
    expect(readdirSync(join(capsule, "workdir"))).toEqual([session(3)])
    expect(readdirSync(join(capsule, ".murmur", "sessions"))).toEqual([session(3)])
  })

  it("a session still running is never deleted, however old; a dead one's marker goes with it", async () => {
    const capsule = temp()
    for (const n of [1, 2, 3]) mkdirSync(join(capsule, "workdir", session(n)), { recursive: true })
    // session 1 is this test process (alive); session 2 names a pid that cannot exist.
    mkdirSync(join(capsule, ".murmur", "live"), { recursive: true })
    writeFileSync(join(capsule, ".murmur", "live", session(1)), `${process.pid}\n`)
    writeFileSync(join(capsule, ".murmur", "live", session(2)), "4194304999\n")
    const pruned = await Effect.runPromise(pruneSessions(capsule, 1, { sessionId: session(4), pid: process.pid }))
    expect(pruned.deleted).toEqual([session(2), session(3)])
    expect(readdirSync(join(capsule, "workdir"))).toEqual([session(1)])
    expect(readdirSync(join(capsule, ".murmur", "live")).sort()).toEqual([session(1), session(4)].sort())
  })
})

describe("run --keep-sessions", () => {
  it("a second run with --keep-sessions 1 deletes the first run's workdir and says so", async () => {
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [endTurn("done")] } })
    dirs.push(dir)
    const first = await runCli(["run", dir, "--task", "one", "--json"])
    expect(first.code, first.stderr).toBe(0)
    const firstWorkdir = exitEvent(first).workdir
    const second = await runCli(["run", dir, "--task", "two", "--json", "--keep-sessions", "1"])
    expect(second.code, second.stderr).toBe(0)
    expect(existsSync(firstWorkdir)).toBe(false)
    expect(readdirSync(join(dir, "workdir"))).toEqual([exitEvent(second).workdir.split("/").at(-1)])
    expect(second.stderr).toContain(`deleted 1 older session workdir under ${dir}/workdir/ (--keep-sessions 1)`)
    const bad = await runCli(["run", dir, "--task", "x", "--keep-sessions", "0"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("error[E-CLI-001]: --keep-sessions: '0' is out of range")
  })
})
