/**
 * Session workdirs under one documented place: a `serve` or `run` without `--workdir` works in
 * `<capsule dir>/workdir/<session id>`, and before it starts, the older session workdirs there
 * are deleted so that at most `keep` remain with the new one (`--keep-sessions`, default 20).
 * Session ids are UUIDv7 (`ses_<time-ordered hex>`), so their names sort by age.
 *
 * Nothing is deleted through a link (./WorkdirFs.ts discipline): `workdir/` is opened without
 * following one (a link there refuses the pruning), each session directory is checked with
 * `lstat` from that open directory and removed by a path through it, and the recursive removal
 * unlinks any link it meets instead of following it. Only names shaped like session ids are
 * touched; anything else under `workdir/` is left alone.
 */
import { lstatSync, readdirSync, rmSync } from "node:fs"
import { Effect } from "effect"
import * as WorkdirFs from "./WorkdirFs.js"

export const defaultKeepSessions = 20

const SESSION = /^ses_[0-9a-f]{16,}$/

export interface Pruned {
  /** Session ids whose workdirs were deleted, oldest first. */
  readonly deleted: ReadonlyArray<string>
}

/** Deletes the oldest session workdirs under `<capsuleDir>/workdir/` so `keep - 1` remain (the new session makes `keep`). */
export const pruneSessions = (capsuleDir: string, keep: number): Effect.Effect<Pruned, WorkdirFs.WorkdirPathRefused> =>
  WorkdirFs.attempt(() =>
    WorkdirFs.inDirectory(capsuleDir, "workdir", (entry) => {
      const sessions = readdirSync(entry("."))
        .filter((name) => SESSION.test(name) && lstatSync(entry(name)).isDirectory())
        .sort()
      const excess = sessions.slice(0, Math.max(0, sessions.length - Math.max(0, keep - 1)))
      for (const name of excess) rmSync(entry(name), { recursive: true, force: true })
      return { deleted: excess }
    })
  )
