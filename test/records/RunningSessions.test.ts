/**
 * The files `ps` reads (`$MURMUR_HOME/sessions/<id>.json`) and the `session_end` written for a
 * session that never ended: written once, under the last `session_start` (a resumed session
 * starts again in the same trace), never for a trace that ended or never started; a file that
 * does not read is skipped; a pid now naming another process is not the session's.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { noteEnd, readRunning, removeRunning, type RunningSession, sessionsDirectory, writeRunning } from "../../src/records/RunningSessions.js"
import { processStart, sameProcess } from "../../src/services/ProcessAlive.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "running-sessions-"))
  dirs.push(dir)
  return dir
}

const session = (directory: string | undefined, id = "ses_0123456789abcdef"): RunningSession => ({
  session_id: id,
  capsule: "c",
  version: "1",
  url: "http://127.0.0.1:1/",
  pid: 999_999_999,
  started_at: "2026-01-01T00:00:00.000Z",
  command: "serve",
  ...(directory === undefined ? {} : { directory }),
  tasks: { active: 0, queued: 0, parked: 0, finished: 0 }
})

const withTrace = (lines: ReadonlyArray<Record<string, unknown>>) => {
  const directory = scratch()
  const records = join(directory, ".murmur", "sessions", "ses_0123456789abcdef")
  mkdirSync(records, { recursive: true })
  writeFileSync(join(records, "trace.jsonl"), lines.map((line) => `${JSON.stringify(line)}\n`).join(""))
  return { directory, trace: join(records, "trace.jsonl") }
}

const eventsOf = (trace: string) => readFileSync(trace, "utf8").trim().split("\n").map((line) => JSON.parse(line))

describe("RunningSessions", () => {
  it("writes, lists newest first and removes; the directory only its owner opens; an unreadable file is skipped", () => {
    const home = scratch()
    writeRunning(home, session(undefined, "ses_01"))
    writeRunning(home, session(undefined, "ses_02"))
    writeFileSync(join(sessionsDirectory(home), "ses_03.json"), "{ torn")
    assert.deepStrictEqual(readRunning(home).map((listed) => listed.session_id), ["ses_02", "ses_01"])
    assert.strictEqual(statSync(sessionsDirectory(home)).mode & 0o777, 0o700)
    assert.strictEqual(statSync(join(sessionsDirectory(home), "ses_01.json")).mode & 0o777, 0o600)
    removeRunning(home, "ses_01")
    removeRunning(home, "ses_01")
    assert.deepStrictEqual(readRunning(home).map((listed) => listed.session_id), ["ses_02"])
    assert.deepStrictEqual(readRunning(join(home, "missing")), [])
  })

  it("noteEnd appends a crashed session_end under the last session_start, once", () => {
    const { directory, trace } = withTrace([
      { event_type: "session_start", event_id: "evt_1", timestamp: 1000 },
      { event_type: "session_end", event_id: "evt_2", timestamp: 1500 },
      // The same session resumed after a restart, then killed.
      { event_type: "session_start", event_id: "evt_3", timestamp: 2000 },
      { event_type: "task_start", event_id: "evt_4", timestamp: 2600 }
    ])
    assert.strictEqual(noteEnd(session(directory), "ps"), trace)
    const end = eventsOf(trace).at(-1)
    assert.deepInclude(end, { event_type: "session_end", parent_id: "evt_3", session_id: "ses_0123456789abcdef", exit_status: "crashed", duration_ms: 600, pid: 999_999_999, noted_by: "ps" })
    assert.match(end.event_id, /^evt_/)
    assert.strictEqual(noteEnd(session(directory), "ps"), undefined)
    assert.strictEqual(eventsOf(trace).length, 5)
  })

  it("noteEnd writes nothing for a trace without session_start, a session without records, or the echo capsule", () => {
    const { directory, trace } = withTrace([])
    assert.strictEqual(noteEnd(session(directory), "ps"), undefined)
    assert.strictEqual(readFileSync(trace, "utf8"), "")
    assert.strictEqual(noteEnd(session(scratch()), "ps"), undefined)
    assert.strictEqual(noteEnd(session(undefined), "ps"), undefined)
  })

  it("a pid is the session's only while it names the process that started then", () => {
    const start = processStart(process.pid)
    assert.isDefined(start)
    assert.isTrue(sameProcess(process.pid, start))
    assert.isTrue(sameProcess(process.pid, undefined))
    assert.isFalse(sameProcess(process.pid, `${start}0`))
    assert.isFalse(sameProcess(999_999_999, undefined))
  })
})
