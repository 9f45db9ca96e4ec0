/**
 * Session workdirs under one documented place: a `serve` or `run` without `--workdir` works in
 * `<capsule dir>/workdir/<session id>` (its records in `<capsule dir>/.murmur/sessions/<session id>`),
 * and before it starts, the older sessions there (workdir and records) are deleted so that at most
 * `keep` remain with the new one (`--keep-sessions`, default 20).
 * Session ids are UUIDv7 (`ses_<time-ordered hex>`), so their names sort by age.
 *
 * Nothing is deleted through a link (./WorkdirFs.ts discipline): `workdir/` is opened without
 * following one (a link there refuses the pruning), each session directory is checked with
 * `lstat` from that open directory and removed by a path through it, and the recursive removal
 * unlinks any link it meets instead of following it. Only names shaped like session ids are
 * touched; anything else under `workdir/` is left alone.
 *
 * A session that is still running is never deleted, however old: each session leaves
 * `.murmur/live/<session id>` holding its pid in the capsule directory (out of its guests'
 * preopen, so they cannot forge or remove it), and a session whose pid is alive is skipped.
 * Nothing else is created before the launch's own checks pass, so a refused launch leaves no
 * `workdir/`.
 */
import { existsSync, lstatSync, readdirSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { processAlive } from "../services/ProcessAlive.js"
import { RECORDS_UNDER } from "./SessionWorkdirs.js"
import * as WorkdirFs from "./WorkdirFs.js"

export const defaultKeepSessions = 20

export const SESSION = /^ses_[0-9a-f]{16,}$/

export interface Pruned {
  /** Session ids whose workdirs were deleted, oldest first. */
  readonly deleted: ReadonlyArray<string>
}

const LIVE = ".murmur/live"

/** The session's marker names a process that is still running. */
export const running = (capsuleDir: string, session: string): boolean => {
  try {
    const pid = Number((WorkdirFs.read(capsuleDir, `${LIVE}/${session}`) ?? "").trim())
    return Number.isInteger(pid) && pid > 0 && processAlive(pid)
  } catch {
    return false
  }
}

/** Leaves `.murmur/live/<session id>` with the session's pid: no pruning deletes a running session. */
export const markRunning = (capsuleDir: string, current: { readonly sessionId: string; readonly pid: number }) =>
  WorkdirFs.write(capsuleDir, `${LIVE}/${current.sessionId}`, `${current.pid}\n`)

/**
 * Marks `current` as running (its `.live` file), then deletes the oldest session workdirs under
 * `<capsuleDir>/workdir/` that are not running, so that at most `keep` remain with the new one.
 */
export const pruneSessions = (
  capsuleDir: string,
  keep: number,
  current: { readonly sessionId: string; readonly pid: number }
): Effect.Effect<Pruned, WorkdirFs.WorkdirPathRefused> =>
  WorkdirFs.attempt(() => {
    markRunning(capsuleDir, current)
    // A session is its workdir and its records (./SessionWorkdirs.ts); either may be all that is left.
    const sessions = [...new Set([...sessionsIn(capsuleDir, "workdir"), ...sessionsIn(capsuleDir, RECORDS_UNDER)])]
      .filter((name) => name !== current.sessionId)
      .sort()
    const excess = sessions.slice(0, Math.max(0, sessions.length - Math.max(0, keep - 1))).filter((name) => !running(capsuleDir, name))
    for (const parent of ["workdir", RECORDS_UNDER]) {
      if (!existsSync(join(capsuleDir, parent))) continue
      WorkdirFs.inDirectory(capsuleDir, parent, (entry) => {
        for (const name of excess) rmSync(entry(name), { recursive: true, force: true })
      })
    }
    for (const name of excess) WorkdirFs.remove(capsuleDir, `${LIVE}/${name}`)
    return { deleted: excess }
  })

/** The session directories under `parent` of the capsule directory (reached without following a link). */
export const sessionsIn = (capsuleDir: string, parent: string): Array<string> =>
  existsSync(join(capsuleDir, parent))
    ? WorkdirFs.inDirectory(capsuleDir, parent, (entry) =>
      readdirSync(entry(".")).filter((name) => SESSION.test(name) && lstatSync(entry(name)).isDirectory()))
    : []
