/**
 * The sessions running on this machine, where `ps`, `stop` and `cancel` find them: one file per
 * session, `$MURMUR_HOME/sessions/<session id>.json` (mode 0600, in a directory only its owner
 * can open), written by `serve` and `run` once their door listens, its task counts kept current
 * while the session runs, and removed when it ends. A file whose process is gone is a session
 * that never ended: it crashed or was killed. `noteEnd` then writes the `session_end` its trace
 * lacks, `exit_status: "crashed"`, so the trace says so too. Each file is replaced whole (a
 * temporary file renamed over it), so a reader never sees half of one.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Either, Schema } from "effect"
import { mintId } from "../services/Ids.js"
import { RECORDS_UNDER, sessionRecords } from "./SessionWorkdirs.js"
import * as WorkdirFs from "./WorkdirFs.js"

export const SessionTasks = Schema.Struct({
  /** Holding a slot: running. */
  active: Schema.Number,
  /** Accepted, waiting for a slot. */
  queued: Schema.Number,
  /** Live but without a slot (waiting for input, or for a slot again). */
  parked: Schema.Number,
  /** Ended, and still held for `tasks/get`. */
  finished: Schema.Number
})
export type SessionTasks = typeof SessionTasks.Type

export const RunningSession = Schema.Struct({
  session_id: Schema.String,
  capsule: Schema.String,
  version: Schema.String,
  /** The door's absolute URL. */
  url: Schema.String,
  pid: Schema.Number,
  /** `/proc/<pid>/stat`'s start time, so a reused pid is not taken for the session's. */
  process_start: Schema.optional(Schema.String),
  /** ISO 8601. */
  started_at: Schema.String,
  command: Schema.Literal("serve", "run"),
  /** The capsule directory (absent: the built-in echo capsule, which keeps no records). */
  directory: Schema.optional(Schema.String),
  tasks: SessionTasks
})
export type RunningSession = typeof RunningSession.Type

const decode = Schema.decodeUnknownEither(Schema.parseJson(RunningSession))

/** Where the files are. */
export const sessionsDirectory = (home: string): string => join(home, "sessions")

const SESSION_FILE = /^(ses_[0-9a-f]+)\.json$/

/** Writes (or replaces) the session's file. */
export const writeRunning = (home: string, session: RunningSession): void => {
  const directory = sessionsDirectory(home)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  chmodSync(directory, 0o700)
  const file = join(directory, `${session.session_id}.json`)
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(session)}\n`, { mode: 0o600 })
  renameSync(temporary, file)
}

/** Removes the session's file, if it is there. */
export const removeRunning = (home: string, sessionId: string): void => rmSync(join(sessionsDirectory(home), `${sessionId}.json`), { force: true })

/** Every session file that reads, newest session first; one that does not read (torn by hand, say) is skipped. */
export const readRunning = (home: string): ReadonlyArray<RunningSession> => {
  let names: ReadonlyArray<string>
  try {
    names = readdirSync(sessionsDirectory(home))
  } catch {
    return []
  }
  return names
    .filter((name) => SESSION_FILE.test(name))
    .sort()
    .reverse()
    .flatMap((name) => {
      try {
        return Either.match(decode(readFileSync(join(sessionsDirectory(home), name), "utf8")), { onLeft: () => [], onRight: (session) => [session] })
      } catch {
        return []
      }
    })
}

interface TraceLine {
  readonly event_type?: unknown
  readonly event_id?: unknown
  readonly timestamp?: unknown
}

const linesOf = (text: string): ReadonlyArray<TraceLine> =>
  text.split("\n").flatMap((line) => {
    try {
      return line === "" ? [] : [JSON.parse(line) as TraceLine]
    } catch {
      return []
    }
  })

/**
 * Appends the `session_end` a session that never ended lacks: `exit_status: "crashed"`, the time
 * from its `session_start` to its last line, the pid, and who noticed. Its totals are unknown and
 * left out. Returns the trace's path when a line was written; a session with no trace, no
 * `session_start` or a `session_end` already gets nothing.
 */
export const noteEnd = (session: RunningSession, notedBy: string): string | undefined => {
  if (session.directory === undefined) return undefined
  // Read and written from the capsule directory without following a link (./WorkdirFs.ts).
  const trace = join(RECORDS_UNDER, session.session_id, "trace.jsonl")
  try {
    const text = WorkdirFs.read(session.directory, trace)
    if (text === undefined) return undefined
    const lines = linesOf(text)
    // A resumed session (the same id after a restart) starts again: only its last start counts.
    const start = lines.map((line) => line.event_type).lastIndexOf("session_start")
    if (start < 0 || lines.slice(start).some((line) => line.event_type === "session_end")) return undefined
    const first = lines[start]!
    const last = lines.at(-1)!
    const end = {
      event_type: "session_end",
      event_id: mintId("evt"),
      parent_id: first.event_id,
      session_id: session.session_id,
      timestamp: Date.now(),
      exit_status: "crashed",
      duration_ms: typeof last.timestamp === "number" && typeof first.timestamp === "number" ? last.timestamp - first.timestamp : null,
      pid: session.pid,
      noted_by: notedBy
    }
    WorkdirFs.append(session.directory, trace, `${text.endsWith("\n") ? "" : "\n"}${JSON.stringify(end)}\n`)
    return join(sessionRecords(session.directory, session.session_id), "trace.jsonl")
  } catch {
    return undefined
  }
}
