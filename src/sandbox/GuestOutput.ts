/**
 * The bound on what guests write to stdout/stderr. A guest can print as fast as its thread runs,
 * and every byte crosses to the main thread (a message each write) and on to `logs/guest.log`, so
 * both ends stop at `MAX_GUEST_OUTPUT_BYTES`: a worker forwards at most that much of one run
 * (./worker/GuestWorker.ts), and one `guest.log` writer (a task's, or a script run's) writes at
 * most that much (./ScriptLaunch.ts `guestLog`). Each says so once, in the log, when it stops
 * (the log's own note taking the place of a run's note that no longer fits).
 */

/** Per guest run, and per task's (or script run's) `guest.log` writing. */
export const MAX_GUEST_OUTPUT_BYTES = 16 * 1024 * 1024

/** Written where a guest run's forwarded output stops. */
export const runOutputCapNote = `\n[guest output past ${MAX_GUEST_OUTPUT_BYTES} bytes in this run was dropped]\n`

/** Written where a task's (or script run's) guest.log writing stops. */
export const logCapNote = `\n[guest.log cap of ${MAX_GUEST_OUTPUT_BYTES} bytes for this task reached: further guest output was dropped]\n`
