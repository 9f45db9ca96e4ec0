/**
 * A session for a capsule directory, whichever kind it is: the one place that loads a directory,
 * mints its session id, prunes old session workdirs and branches to an agent capsule
 * (./AgentSession.ts) or a script capsule (./ScriptSession.ts), run on the host's worker
 * sandbox. `CapsuleRuntime.layerDirectory` is its layer; `serve` and `run` use `prepareDirectory`,
 * which also hands back the workdir, the records and the warnings they print.
 */
import { realpathSync } from "node:fs"
import { Effect, Layer, Option } from "effect"
import { loadAnyProject } from "../project/CapsuleProject.js"
import { SessionStores } from "../store/SessionStores.js"
import { pruneSessions } from "../records/SessionRetention.js"
import { pruneTraces, type TraceRetain } from "../records/TraceRetention.js"

export { defaultKeepSessions } from "../records/SessionRetention.js"
import { mintId } from "../services/Ids.js"
import { agentKind } from "./AgentSession.js"
import { HostEnvironment } from "./Host.js"
import { crashedSessions } from "./LocalSessions.js"
import type { Options } from "./Session.js"
import { scriptKind } from "./ScriptSession.js"

/** `Options`, plus where the capsule's workdir is and how many old session workdirs to keep. */
export interface DirectoryOptions extends Options {
  /** The capsule's workdir; default `<dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
  /** Without `workdir`: session workdirs kept under `<dir>/workdir/`, this one included; absent: none pruned. */
  readonly keepSessions?: number | undefined
  /**
   * The directory as loaded already: sessions of one directory share it (a fleet runner builds
   * many), with its components' bytes, instead of each reading and holding its own copy.
   */
  readonly loaded?: LoadedDirectory | undefined
}

export type LoadedDirectory = Effect.Effect.Success<ReturnType<typeof loadAnyProject>>

/** Prunes before this session starts and marks it running; the line to tell the operator, if any. */
const keepNewest = (capsuleDir: string, keep: number, sessionId: string) =>
  pruneSessions(capsuleDir, keep, { sessionId, pid: process.pid }).pipe(
    Effect.map(({ deleted }) =>
      deleted.length === 0 ? [] : [`deleted ${deleted.length} older session workdir${deleted.length === 1 ? "" : "s"} under ${capsuleDir}/workdir/ (--keep-sessions ${keep})`]
    ),
    Effect.catchTag("WorkdirPathRefused", (error) => Effect.succeed([`warning: session workdirs not pruned: ${error.message}`]))
  )

/** `trace.retain`: older sessions' records deleted before this one starts; the line to tell the operator, if any. */
const retainTraces = (capsuleDir: string, retain: TraceRetain, sessionId: string) =>
  pruneTraces(capsuleDir, retain, { sessionId, pid: process.pid }).pipe(
    Effect.map((deleted) =>
      deleted.length === 0 ? [] : [`deleted the records of ${deleted.length} older session${deleted.length === 1 ? "" : "s"} under ${capsuleDir}/.murmur/sessions/ (trace.retain)`]
    ),
    Effect.catchTag("WorkdirPathRefused", (error) => Effect.succeed([`warning: session records not pruned (trace.retain): ${error.message}`]))
  )

/**
 * The session for a directory: with a store (`SessionStores` in context), the one the store holds
 * for it (the same id, tasks and event ids as before a restart) and its journal; else a new id.
 */
const sessionFor = (directory: string, name: string, version: string, options: DirectoryOptions) =>
  Effect.gen(function*() {
    const stores = yield* Effect.serviceOption(SessionStores)
    if (options.sessionId !== undefined || Option.isNone(stores)) return { sessionId: options.sessionId ?? mintId("ses"), journal: options.journal, notes: [] }
    const store = stores.value
    const claimed = yield* store.claim({
      key: realpathSync(directory),
      capsuleName: name,
      capsuleVersion: version,
      digest: "",
      options: JSON.stringify({ tasks: options.tasks ?? {}, events: options.events ?? {} })
    })
    const recovered = yield* store.load(claimed.sessionId)
    const notes = claimed.resumed
      ? [`session ${claimed.sessionId} resumed from ${store.location}: ${recovered.tasks.length} task(s) held, event ids continue after ${recovered.lastFrameId}`]
      : []
    return { sessionId: claimed.sessionId, journal: store.journal(claimed.sessionId, recovered), notes }
  })

/**
 * Loads `directory`, takes its session id (the store's, else a new one unless given) and prunes
 * older session workdirs: what every launch of a directory does first, `run` included. `notes`
 * are the lines for the operator, a session of the directory that crashed since the last start
 * first (./LocalSessions.ts).
 */
export const loadDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Effect.gen(function*() {
    const host = yield* HostEnvironment
    const loaded = options.loaded ?? (yield* loadAnyProject(directory, host.env))
    const session = yield* sessionFor(directory, loaded.project.manifest.name, loaded.project.manifest.version, options)
    const sessionId = session.sessionId
    // A session of this directory that never ended (crashed, or killed) is said first.
    const crashed = yield* crashedSessions(loaded.project.directory, sessionId)
    const notes = options.workdir === undefined && options.keepSessions !== undefined
      ? yield* keepNewest(loaded.project.directory, options.keepSessions, sessionId)
      : []
    const retain = loaded.project.manifest.trace?.retain
    const traces = retain === undefined ? [] : yield* retainTraces(loaded.project.directory, retain, sessionId)
    return { loaded, sessionId, journal: session.journal, hostEnv: host.env, notes: [...crashed, ...session.notes, ...notes, ...traces] }
  })

/**
 * Loads `directory` and prepares its session: the session layer (no door), the project, its
 * workdir and records, and the lines to tell the operator (pruning, then the capsule's warnings).
 */
export const prepareDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Effect.gen(function*() {
    const { hostEnv, journal, loaded, notes, sessionId } = yield* loadDirectory(directory, options)
    const kind = loaded.kind === "script"
      ? yield* scriptKind(loaded.project, { ...options, sessionId, journal, hostEnv })
      : yield* agentKind(loaded.project, { ...options, sessionId, journal, workdir: options.workdir, hostEnv })
    return { ...kind, project: loaded.project, notes: [...notes, ...kind.warnings] }
  })

/** The capsule in `directory` as a session layer; what the operator would be told is logged as warnings. */
export const layerDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const prepared = yield* prepareDirectory(directory, options)
    for (const note of prepared.notes) yield* Effect.logWarning(note).pipe(Effect.annotateLogs({ capsule: prepared.project.manifest.name }))
    return prepared.layer
  }))
