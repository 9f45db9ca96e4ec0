/**
 * `--keep-sessions N` for `serve` and `run`: the older session workdirs under `<dir>/workdir/` are
 * deleted before the session starts (../sandbox/SessionRetention.ts). A `workdir/` that is a link
 * is not pruned: a warning says so and the launch goes on.
 */
import { Console, Effect } from "effect"
import { pruneSessions } from "../records/SessionRetention.js"

/** Prunes before session `sessionId` (this process) starts, and marks it running so no later prune deletes it. */
export const keepNewest = (capsuleDir: string, keep: number, sessionId: string) =>
  pruneSessions(capsuleDir, keep, { sessionId, pid: process.pid }).pipe(
    Effect.flatMap(({ deleted }) =>
      deleted.length === 0 ? Effect.void : Console.error(`deleted ${deleted.length} older session workdir${deleted.length === 1 ? "" : "s"} under ${capsuleDir}/workdir/ (--keep-sessions ${keep})`)
    ),
    Effect.catchTag("WorkdirPathRefused", (error) => Console.error(`warning: session workdirs not pruned: ${error.message}`))
  )
