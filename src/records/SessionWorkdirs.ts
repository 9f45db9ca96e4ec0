/**
 * Where a session works, for agent and script capsules alike: what guests see as `.` (`--workdir`,
 * else `<capsule dir>/workdir/<session>`), where its scaffolding goes (`tools/`, `MURMUR.md`: the
 * same directory, or `<workdir>/.murmur/<session>` with `--workdir`), and where the runtime keeps
 * what it records about the session (`trace.jsonl`, `blobs/`, a delegated child's
 * `completion.json`): `<capsule dir>/.murmur/sessions/<session>`, in both layouts. The records
 * are the audit of what guests and commands did, so they sit outside every tree those can write:
 * a workdir that would contain them is refused.
 */
import { existsSync, realpathSync } from "node:fs"
import { dirname, isAbsolute, join, relative, resolve } from "node:path"

export interface SessionWorkdirs {
  /** What guests see as `.` and the shell's cwd. */
  readonly accessible: string
  /** The session's scaffolding: `<accessible>/.murmur/<session>` with `--workdir`, else `accessible`. */
  readonly session: string
  /** The runtime's records of the session, outside `accessible`: {@link sessionRecords}. */
  readonly records: string
}

/** Beneath the capsule directory: the path of every session's records (the root a no-follow walk starts from). */
export const RECORDS_UNDER = join(".murmur", "sessions")

/** The one place a session's records are: `<capsule dir>/.murmur/sessions/<session id>`. */
export const sessionRecords = (capsuleDirectory: string, sessionId: string): string =>
  join(resolve(capsuleDirectory), RECORDS_UNDER, sessionId)

export const sessionWorkdirs = (directory: string, sessionId: string, workdir: string | undefined): SessionWorkdirs => {
  const records = sessionRecords(directory, sessionId)
  if (workdir === undefined) {
    const accessible = resolve(directory, "workdir", sessionId)
    return { accessible, session: accessible, records }
  }
  const accessible = resolve(workdir)
  return { accessible, session: join(accessible, ".murmur", sessionId), records }
}

/** `path` with its longest existing prefix resolved through links (what it would be once made). */
const realish = (path: string): string => {
  let existing = path
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing)
  return join(realpathSync(existing), relative(existing, path))
}

/**
 * Why the records would be within guests' reach (a `--workdir` that is the capsule directory or
 * holds it), else `undefined`.
 */
export const recordsExposed = (workdirs: SessionWorkdirs): string | undefined => {
  const rel = relative(realish(workdirs.accessible), realish(workdirs.records))
  return rel === "" || (rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel))
    ? `the workdir ${workdirs.accessible} contains the session records ${workdirs.records}, which guests and commands must not write; choose a workdir outside the capsule directory`
    : undefined
}
