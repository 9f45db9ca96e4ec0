/**
 * The sessions of this machine (../records/RunningSessions.ts), as the command line meets them.
 * `registerSession` is what a `serve` or `run` does once its door listens: it writes the
 * session's file, refreshes its task counts each second while they change, and removes it when
 * the session's scope closes. `localSessions` lists the sessions still running and prunes those
 * whose process is gone, each noted as crashed in its trace; `crashedSessions` does the same for
 * one capsule directory, at its next start. `endProcess` ends a session's process: SIGTERM, which
 * shuts it down gracefully, then SIGKILL once the grace is out.
 */
import { resolve } from "node:path"
import { Data, Duration, Effect, Equal, Schedule } from "effect"
import { murmurHome } from "../project/MurmurHome.js"
import {
  noteEnd,
  readRunning,
  removeRunning,
  type RunningSession,
  type SessionTasks,
  writeRunning
} from "../records/RunningSessions.js"
import { processStart, sameProcess } from "../services/ProcessAlive.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { HostEnvironment } from "./Host.js"

export type { RunningSession, SessionTasks } from "../records/RunningSessions.js"

/** How often a session's task counts are looked at (and rewritten when they changed). */
const REFRESH = Duration.seconds(1)

/** What the `serve` or `run` that lists its session says of it. */
export interface Registration {
  readonly command: "serve" | "run"
  /** The capsule directory; absent: the built-in echo capsule. */
  readonly directory: string | undefined
}

/** Where this machine's sessions are listed: `$MURMUR_HOME/sessions/`. */
export const sessionsHome = Effect.map(HostEnvironment, (host) => murmurHome(host.env))

/**
 * Lists the session (in the scope it lives in) until the scope closes. A file that cannot be
 * written is logged and the session runs unlisted: `ps` is an operator's view, never a reason
 * to refuse a session.
 */
export const registerSession = (registration: Registration) =>
  Effect.gen(function*() {
    const identity = yield* SessionIdentity
    const registry = yield* TaskRegistry
    const home = yield* sessionsHome
    const start = processStart(process.pid)
    const base = {
      session_id: identity.sessionId,
      capsule: identity.capsule.name,
      version: identity.capsule.version,
      url: identity.url,
      pid: process.pid,
      ...(start === undefined ? {} : { process_start: start }),
      started_at: new Date().toISOString(),
      command: registration.command,
      ...(registration.directory === undefined ? {} : { directory: resolve(registration.directory) })
    }
    const counts = Effect.map(registry.stats(), (stats): SessionTasks => ({
      active: stats.active,
      queued: stats.queued,
      parked: stats.parked,
      finished: Math.max(0, stats.retained - stats.active - stats.queued - stats.parked)
    }))
    const write = (tasks: SessionTasks) => Effect.try(() => writeRunning(home, { ...base, tasks }))
    let written = Data.struct(yield* counts)
    const listed = yield* write(written).pipe(
      Effect.as(true),
      Effect.catchAll((error) => Effect.logWarning("session not listed for ps", error).pipe(Effect.as(false)))
    )
    if (!listed) return
    // Removed last: the refresh below (forked after) is interrupted first when the scope closes.
    yield* Effect.addFinalizer(() => Effect.sync(() => removeRunning(home, base.session_id)))
    yield* counts.pipe(
      Effect.flatMap((tasks) => {
        const now = Data.struct(tasks)
        if (Equal.equals(now, written)) return Effect.void
        written = now
        return write(now)
      }),
      Effect.ignore,
      Effect.repeat(Schedule.spaced(REFRESH)),
      Effect.forkScoped
    )
  }).pipe(Effect.annotateLogs({ service: "LocalSessions" }))

/** A session whose process is gone: its file removed, its trace's `session_end` written if it had none. */
export interface Pruned {
  readonly session: RunningSession
  /** The trace that was given its `session_end`. */
  readonly trace: string | undefined
}

const prune = (home: string, session: RunningSession, notedBy: string): Pruned => {
  const trace = noteEnd(session, notedBy)
  removeRunning(home, session.session_id)
  return { session, trace }
}

/** Whether the session's own process still runs. */
export const isRunning = (session: RunningSession): boolean => sameProcess(session.pid, session.process_start)

/** The sessions running on this machine, newest first, and those pruned on the way. */
export const localSessions = (home: string, notedBy: string) =>
  Effect.sync(() => {
    const live: Array<RunningSession> = []
    const pruned: Array<Pruned> = []
    for (const session of readRunning(home)) {
      if (isRunning(session)) live.push(session)
      else pruned.push(prune(home, session, notedBy))
    }
    return { live, pruned }
  })

/** What `pruned` says, one line each. */
export const prunedLine = ({ session, trace }: Pruned): string =>
  `session ${session.session_id} (${session.capsule}@${session.version}, pid ${session.pid}) ended without shutting down: it crashed or was killed` +
  (trace === undefined ? "" : `; session_end (exit_status crashed) written to ${trace}`)

/**
 * The sessions of `directory` that never ended (their process is gone, their file still there),
 * pruned: what a new session of the directory tells its operator at start.
 */
export const crashedSessions = (directory: string, notedBy: string) =>
  Effect.gen(function*() {
    const home = yield* sessionsHome
    const mine = resolve(directory)
    return readRunning(home)
      .filter((session) => session.directory === mine && !isRunning(session))
      .map((session) => `warning: ${prunedLine(prune(home, session, notedBy))}`)
  })

/** How a process was ended: it was already gone, SIGTERM did it, SIGKILL did, or nothing did. */
export type Ending = "gone" | "SIGTERM" | "SIGKILL" | "still running"

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name)
  } catch {
    // Gone since it was last looked at.
  }
}

/** Waits up to `ms` for the session's process to be gone; whether it is. */
const gone = (session: RunningSession, ms: number) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < ms; waited += 100) {
      if (!isRunning(session)) return true
      yield* Effect.sleep(100)
    }
    return !isRunning(session)
  })

/**
 * Ends the session's process: SIGTERM (a graceful shutdown: live tasks canceled, observers told),
 * then SIGKILL once `graceMs` is out. Signals only the process the file names (pid and start).
 * Afterwards the file is removed, and a session that could not shut down gracefully gets its
 * `session_end` noted.
 */
export const endProcess = (home: string, session: RunningSession, graceMs: number, notedBy: string) =>
  Effect.gen(function*() {
    const ending: Ending = yield* Effect.gen(function*() {
      if (!isRunning(session)) return "gone" as const
      signal(session.pid, "SIGTERM")
      if (yield* gone(session, graceMs)) return "SIGTERM" as const
      signal(session.pid, "SIGKILL")
      return (yield* gone(session, 5_000)) ? "SIGKILL" as const : "still running" as const
    })
    if (ending !== "still running") prune(home, session, notedBy)
    return ending
  })
