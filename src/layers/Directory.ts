/**
 * A session for a capsule directory, whichever kind it is: the one place that loads a directory,
 * mints its session id, prunes old session workdirs and branches to an agent capsule
 * (./AgentSession.ts) or a script capsule (./ScriptSession.ts), run on the host's worker
 * sandbox. `CapsuleRuntime.layerDirectory` is its layer; `serve` and `run` use `prepareDirectory`,
 * which also hands back the workdir, the records and the warnings they print.
 */
import { Effect, Layer } from "effect"
import { loadAnyProject } from "../project/CapsuleProject.js"
import { pruneSessions } from "../records/SessionRetention.js"

export { defaultKeepSessions } from "../records/SessionRetention.js"
import { mintId } from "../services/Ids.js"
import { agentKind } from "./AgentSession.js"
import { HostEnvironment } from "./Host.js"
import type { Options } from "./Session.js"
import { scriptKind } from "./ScriptSession.js"

/** `Options`, plus where the capsule's workdir is and how many old session workdirs to keep. */
export interface DirectoryOptions extends Options {
  /** The capsule's workdir; default `<dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
  /** Without `workdir`: session workdirs kept under `<dir>/workdir/`, this one included; absent: none pruned. */
  readonly keepSessions?: number | undefined
}

/** Prunes before this session starts and marks it running; the line to tell the operator, if any. */
const keepNewest = (capsuleDir: string, keep: number, sessionId: string) =>
  pruneSessions(capsuleDir, keep, { sessionId, pid: process.pid }).pipe(
    Effect.map(({ deleted }) =>
      deleted.length === 0 ? [] : [`deleted ${deleted.length} older session workdir${deleted.length === 1 ? "" : "s"} under ${capsuleDir}/workdir/ (--keep-sessions ${keep})`]
    ),
    Effect.catchTag("WorkdirPathRefused", (error) => Effect.succeed([`warning: session workdirs not pruned: ${error.message}`]))
  )

/**
 * Loads `directory`, mints its session id (unless given) and prunes older session workdirs: what
 * every launch of a directory does first, `run` included. `notes` are the lines for the operator.
 */
export const loadDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Effect.gen(function*() {
    const host = yield* HostEnvironment
    const loaded = yield* loadAnyProject(directory, host.env)
    const sessionId = options.sessionId ?? mintId("ses")
    const notes = options.workdir === undefined && options.keepSessions !== undefined
      ? yield* keepNewest(loaded.project.directory, options.keepSessions, sessionId)
      : []
    return { loaded, sessionId, hostEnv: host.env, notes }
  })

/**
 * Loads `directory` and prepares its session: the session layer (no door), the project, its
 * workdir and records, and the lines to tell the operator (pruning, then the capsule's warnings).
 */
export const prepareDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Effect.gen(function*() {
    const { hostEnv, loaded, notes, sessionId } = yield* loadDirectory(directory, options)
    const kind = loaded.kind === "script"
      ? yield* scriptKind(loaded.project, { ...options, sessionId, hostEnv })
      : yield* agentKind(loaded.project, { ...options, sessionId, workdir: options.workdir, hostEnv })
    return { ...kind, project: loaded.project, notes: [...notes, ...kind.warnings] }
  })

/** The capsule in `directory` as a session layer; what the operator would be told is logged as warnings. */
export const layerDirectory = (directory: string, options: DirectoryOptions = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const prepared = yield* prepareDirectory(directory, options)
    for (const note of prepared.notes) yield* Effect.logWarning(note).pipe(Effect.annotateLogs({ capsule: prepared.project.manifest.name }))
    return prepared.layer
  }))
