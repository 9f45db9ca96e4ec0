/**
 * `trace.retain`: older sessions' records under `<dir>/.murmur/sessions/` deleted at start past
 * the newest `max_sessions` or once older than `max_age`; running sessions, workdirs, other
 * names and whatever a link points at are left alone. The CLI part needs `npm run build`.
 */
import { Effect, Exit } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { pruneTraces } from "../../src/records/TraceRetention.js"
import { endTurn } from "../lib/AgentE2E.js"
import { makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const temp = () => {
  const dir = mkdtempSync(join(tmpdir(), "trace-retain-"))
  dirs.push(dir)
  return dir
}
const session = (n: number) => `ses_01a22f6d${String(n).padStart(24, "0")}`
const records = (capsule: string, ...rest: Array<string>) => join(capsule, ".murmur", "sessions", ...rest)

/** Records for sessions 1..n, each with a trace last written `ageSecs[i]` seconds ago. */
const withRecords = (capsule: string, ageSecs: ReadonlyArray<number>, now: number) =>
  ageSecs.forEach((age, i) => {
    mkdirSync(records(capsule, session(i + 1)), { recursive: true })
    const trace = records(capsule, session(i + 1), "trace.jsonl")
    writeFileSync(trace, "{}\n")
    const at = (now - age * 1000) / 1000
    utimesSync(trace, at, at)
  })

describe("pruneTraces", () => {
  const now = Date.now()

  it("keeps the newest max_sessions - 1 older sessions by id, this one counted; workdirs and other names stay", async () => {
    const capsule = temp()
    withRecords(capsule, [5, 4, 3, 2, 1], now)
    mkdirSync(join(capsule, "workdir", session(1)), { recursive: true })
    mkdirSync(records(capsule, "notes"))
    const deleted = await Effect.runPromise(pruneTraces(capsule, { maxSessions: 3 }, { sessionId: session(9), pid: process.pid }, now))
    expect(deleted).toEqual([session(1), session(2), session(3)])
    expect(readdirSync(records(capsule)).sort()).toEqual(["notes", session(4), session(5)].sort())
    expect(existsSync(join(capsule, "workdir", session(1)))).toBe(true)
  })

  it("deletes records whose trace was last written more than max_age ago, whatever their number", async () => {
    const capsule = temp()
    withRecords(capsule, [7200, 30, 5000, 10], now)
    const deleted = await Effect.runPromise(pruneTraces(capsule, { maxAgeSecs: 3600 }, { sessionId: session(9), pid: process.pid }, now))
    expect(deleted).toEqual([session(1), session(3)])
    expect(readdirSync(records(capsule)).sort()).toEqual([session(2), session(4)])
  })

  it("never deletes a running session's records, nor anything through a planted link", async () => {
    const capsule = temp()
    const outside = temp()
    writeFileSync(join(outside, "precious"), "keep me")
    withRecords(capsule, [9000, 9000], now)
    // Session 1 is running (its live marker names this process).
    mkdirSync(join(capsule, ".murmur", "live"), { recursive: true })
    writeFileSync(join(capsule, ".murmur", "live", session(1)), `${process.pid}\n`)
    symlinkSync(outside, records(capsule, session(0)))
    symlinkSync(outside, records(capsule, session(2), "escape"))
    const deleted = await Effect.runPromise(pruneTraces(capsule, { maxSessions: 1, maxAgeSecs: 60 }, { sessionId: session(9), pid: process.pid }, now))
    expect(deleted).toEqual([session(2)])
    expect(readdirSync(records(capsule)).sort()).toEqual([session(0), session(1)])
    expect(readdirSync(outside)).toEqual(["precious"])
  })

  it("refuses a sessions directory that is a link, deleting nothing behind it", async () => {
    const capsule = temp()
    const elsewhere = temp()
    mkdirSync(join(elsewhere, session(1)))
    mkdirSync(join(capsule, ".murmur"), { recursive: true })
    symlinkSync(elsewhere, records(capsule))
    const exit = await Effect.runPromiseExit(pruneTraces(capsule, { maxSessions: 1 }, { sessionId: session(9), pid: process.pid }, now))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(JSON.stringify(exit)).toContain("WorkdirPathRefused")
    expect(readdirSync(elsewhere)).toEqual([session(1)])
  })
})

describe("trace.retain through run", () => {
  it("keeps at most max_sessions sessions' records after each run, and says what it deleted", async () => {
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [endTurn("ok")] }, extra: "trace:\n  retain:\n    max_sessions: 2\n" })
    dirs.push(dir)
    const stderrs: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const result = await runCli(["run", dir, "--task", "hi"])
      expect(result.code, result.stderr).toBe(0)
      stderrs.push(result.stderr)
    }
    expect(readdirSync(records(dir)).filter((name) => name.startsWith("ses_"))).toHaveLength(2)
    expect(stderrs[2]).toContain("deleted the records of 1 older session")
    expect(stderrs[2]).toContain("(trace.retain)")
  }, 60_000)
})
