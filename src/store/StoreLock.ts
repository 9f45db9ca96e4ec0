/**
 * One process per SQLite store: a lock file beside it (`<store>.lock`, created exclusively,
 * holding the owner's pid) for as long as the store is open. A lock left by a process that no
 * longer runs (killed with -9) is taken over; one held by a live process refuses the opener.
 * SQLite's own `locking_mode = EXCLUSIVE` would do this, but libsql does not release a file's
 * lock when a connection is closed, so a store could not be opened again in the same process.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { Effect } from "effect"
import { processAlive } from "../services/ProcessAlive.js"
import { StoreRefused } from "./StoreError.js"

const alive = (pid: number): boolean => Number.isInteger(pid) && pid > 0 && processAlive(pid)

const ownerOf = (lock: string): number | undefined => {
  try {
    return Number.parseInt(readFileSync(lock, "utf8").trim(), 10)
  } catch {
    return undefined
  }
}

/** Takes the lock of `store` (a stale one is replaced), or explains who holds it. */
const take = (store: string): string => {
  const lock = `${store}.lock`
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lock, "wx", 0o600)
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      return lock
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      const owner = ownerOf(lock)
      if (owner !== undefined && alive(owner)) {
        throw new Error(
          `it is in use by process ${owner}${owner === process.pid ? " (this one)" : ""}: a SQLite store serves one process (use --store postgres://… for several; if no capsule-runtime runs as ${owner}, delete ${lock})`
        )
      }
      // The owner is gone (killed, crashed): its lock is stale.
      try {
        unlinkSync(lock)
      } catch {
        // Another opener removed it first: try again.
      }
    }
  }
  throw new Error(`its lock ${lock} could not be taken`)
}

/** The lock of `store`, held until the scope closes. */
export const storeLock = (store: string) =>
  Effect.acquireRelease(
    Effect.try({ try: () => take(store), catch: (cause) => new StoreRefused({ store, reason: cause instanceof Error ? cause.message : String(cause) }) }),
    (lock) =>
      Effect.sync(() => {
        if (ownerOf(lock) === process.pid) unlinkSync(lock)
      })
  )
