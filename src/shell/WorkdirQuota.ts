/**
 * `capabilities.resources.workdir_max_bytes` (default 10 GiB, spec §5.2): the bytes of the files
 * under the accessible workdir, walked every 10 s while the session lives and again before each
 * subprocess starts. Past the budget the session ends (E-RUN-013): no subprocess starts, the task
 * running ends before its next turn (a command or guest already running finishes, under its own
 * deadline and output caps), and every later task ends the same way without a turn. The breach is
 * final: deleting files afterwards does not reopen it.
 *
 * The walk counts files' sizes from `lstat`, never follows a link (a link counts as itself), and
 * stops as soon as the count passes the budget. An entry that vanishes mid-walk is skipped.
 */
import type { Dirent } from "node:fs"
import { lstat, readdir } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Schedule, type Scope } from "effect"

export const DEFAULT_WORKDIR_MAX_BYTES = 10 * 1024 ** 3
const EVERY = "10 seconds"

export interface WorkdirBreach {
  readonly bytes: number
  readonly limit: number
  /** "E-RUN-013: …", for the task's failure and a refused command. */
  readonly message: string
}

export interface WorkdirQuota {
  /** Walks the workdir now (unless it is over already); the breach, if it is over. */
  readonly check: Effect.Effect<WorkdirBreach | undefined>
  /** The breach found so far, without walking. */
  readonly found: () => WorkdirBreach | undefined
}

/**
 * Bytes under `root` counted until they pass `stopAbove` (then a count past it). Asynchronous, a
 * directory at a time, so a large tree never holds the event loop for the whole walk.
 */
export const workdirBytes = async (root: string, stopAbove: number): Promise<number> => {
  let total = 0
  const pending = [root]
  while (pending.length > 0 && total <= stopAbove) {
    const dir = pending.pop()!
    let entries: Array<Dirent>
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        pending.push(path)
        continue
      }
      try {
        total += (await lstat(path)).size
      } catch {
        // gone since the listing
      }
      if (total > stopAbove) break
    }
  }
  return total
}

const breachOf = (bytes: number, limit: number): WorkdirBreach => ({
  bytes,
  limit,
  message: `E-RUN-013: the workdir holds more than capabilities.resources.workdir_max_bytes (${limit} bytes; ${bytes} counted): the session ends and starts no more subprocesses`
})

/** The workdir's budget for a session, watched every 10 s in `Scope`. */
export const makeWorkdirQuota = (workdir: string, limit: number): Effect.Effect<WorkdirQuota, never, Scope.Scope> =>
  Effect.gen(function*() {
    let found: WorkdirBreach | undefined
    const check = Effect.gen(function*() {
      if (found !== undefined) return found
      const bytes = yield* Effect.promise(() => workdirBytes(workdir, limit))
      if (bytes <= limit || found !== undefined) return found
      found = breachOf(bytes, limit)
      return found
    })
    yield* check.pipe(Effect.repeat(Schedule.spaced(EVERY)), Effect.forkScoped)
    return { check, found: () => found }
  })
