/**
 * Where a session works, for agent and script capsules alike: what guests see as `.` (`--workdir`,
 * else `<capsule dir>/workdir/<session>`), and where the runtime keeps the session's records
 * (`trace.jsonl`, …): the same directory, or `<workdir>/.murmur/<session>` with `--workdir`.
 */
import { join, resolve } from "node:path"

export interface SessionWorkdirs {
  /** What guests see as `.` and the shell's cwd. */
  readonly accessible: string
  /** The runtime's bookkeeping: `<accessible>/.murmur/<session>` with `--workdir`, else `accessible`. */
  readonly session: string
}

export const sessionWorkdirs = (directory: string, sessionId: string, workdir: string | undefined): SessionWorkdirs => {
  if (workdir === undefined) {
    const accessible = resolve(directory, "workdir", sessionId)
    return { accessible, session: accessible }
  }
  const accessible = resolve(workdir)
  return { accessible, session: join(accessible, ".murmur", sessionId) }
}
