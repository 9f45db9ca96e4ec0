/**
 * `trace.retain` (`max_sessions`, `max_age`): before a session starts, the records of older
 * sessions of the same capsule directory (`<dir>/.murmur/sessions/<session id>/`: the trace and
 * what it keeps beside it) are deleted past the newest `max_sessions` (this one counted) or once
 * their trace was last written more than `max_age` ago. Their workdirs are `--keep-sessions`'
 * business (./SessionRetention.ts), not this. A session that is still running is never touched,
 * and nothing is deleted through a link: the same discipline as ./SessionRetention.ts.
 */
import { lstatSync, rmSync } from "node:fs"
import { Effect } from "effect"
import { markRunning, running, sessionsIn } from "./SessionRetention.js"
import { RECORDS_UNDER } from "./SessionWorkdirs.js"
import * as WorkdirFs from "./WorkdirFs.js"

export interface TraceRetain {
  readonly maxSessions?: number | undefined
  readonly maxAgeSecs?: number | undefined
}

/** When the session's trace was last written (its directory's time when it has none). */
const lastWritten = (entry: (name: string) => string, name: string): number => {
  const trace = `${entry(name)}/trace.jsonl`
  try {
    return lstatSync(trace).mtimeMs
  } catch {
    return lstatSync(entry(name)).mtimeMs
  }
}

/** Deletes the records `retain` lets go of; the session ids deleted, oldest first. */
export const pruneTraces = (
  capsuleDir: string,
  retain: TraceRetain,
  current: { readonly sessionId: string; readonly pid: number },
  now = Date.now()
): Effect.Effect<ReadonlyArray<string>, WorkdirFs.WorkdirPathRefused> =>
  WorkdirFs.attempt(() => {
    markRunning(capsuleDir, current)
    // Session ids are time-ordered (UUIDv7), so their names sort by age.
    const older = sessionsIn(capsuleDir, RECORDS_UNDER).filter((name) => name !== current.sessionId).sort()
    if (older.length === 0) return []
    return WorkdirFs.inDirectory(capsuleDir, RECORDS_UNDER, (entry) => {
      const keepOlder = retain.maxSessions === undefined ? older.length : Math.max(0, retain.maxSessions - 1)
      const tooMany = new Set(older.slice(0, Math.max(0, older.length - keepOlder)))
      const cutoff = retain.maxAgeSecs === undefined ? undefined : now - retain.maxAgeSecs * 1000
      const deleted = older.filter((name) =>
        (tooMany.has(name) || (cutoff !== undefined && lastWritten(entry, name) < cutoff)) && !running(capsuleDir, name))
      for (const name of deleted) rmSync(entry(name), { recursive: true, force: true })
      return deleted
    })
  })
