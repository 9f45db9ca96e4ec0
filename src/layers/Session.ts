/**
 * Composition only: a session's services around a capsule (registry, event log, residue sources,
 * runner and the identity it advertises), with the one `Options` shape every kind of session
 * takes. The door that serves a session is `./DoorServer.ts` and `../http/Door.ts`; what picks
 * the capsule is the caller (`./Directory.ts`, `EchoCapsule`, a host's own layer).
 */
import { Effect, Layer } from "effect"
import { DoorConfig, type DoorSettings, defaultDoorSettings } from "../http/DoorConfig.js"
import { credentialsOf } from "../http/DoorCredentials.js"
import { Capsule } from "../services/Capsule.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import type { DoorAddress } from "../services/DoorAddress.js"
import { EventLog, type EventLogConfig } from "../services/EventLog.js"
import { Journal } from "../services/Journal.js"
import { PushConfigs, type PushLimits } from "../services/PushConfigs.js"
import { ResourcePlanes } from "../services/ResourcePlanes.js"
import { SessionRecord } from "../services/SessionRecord.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { TaskRegistry, type TaskRegistryConfig } from "../services/TaskRegistry.js"
import { TaskRunner, type TaskRunnerConfig } from "../services/TaskRunner.js"

/**
 * What a session provides: its task services, its residue sources, who it is, and the export
 * planes its door serves (`ResourcePlanes.undeclared` for a capsule that declares none). The door
 * requires the planes, so a composition that leaves them out does not compile, rather than
 * serving "no plane" for a capsule that declared one.
 */
export type Session =
  | TaskRegistry
  | TaskRunner
  | EventLog
  | SessionIdentity
  | DelegationTracker
  | DetachedRegistry
  | ResourcePlanes
  | PushConfigs
  | SessionRecord

/** A session's settings, the same for every kind of capsule. */
export interface Options {
  /** The session's `ses_` id, when the caller minted it already; else a new one. */
  readonly sessionId?: string | undefined
  /** The registry: acceptance (default: the door's), queue depth, concurrency, retention. */
  readonly tasks?: Partial<TaskRegistryConfig> | undefined
  readonly runner?: Partial<TaskRunnerConfig> | undefined
  readonly events?: Partial<EventLogConfig> | undefined
  /** Most push-notification configs per task and per session. */
  readonly push?: Partial<PushLimits> | undefined
  /** Where the session's tasks and frames are kept (`SessionStores.journal`); none: in memory only. */
  readonly journal?: Layer.Layer<Journal> | undefined
}

/**
 * Registry, event log, residue sources and runner around a capsule layer, which gets the residue
 * sources (a capsule that delegates or detaches shell work reports it there). No door: the
 * registry's acceptance is `options.tasks.acceptance`, else the registry's default.
 */
export const servicesLayer = <E, R, EP = never, RP = never, ER = never>(
  capsule: Layer.Layer<Capsule, E, R>,
  options: Options = {},
  planes: Layer.Layer<ResourcePlanes, EP, RP> = ResourcePlanes.layerUndeclared as Layer.Layer<ResourcePlanes, EP, RP>,
  record: Layer.Layer<SessionRecord, ER> = SessionRecord.none as Layer.Layer<SessionRecord, ER>
) => {
  const residue = Layer.merge(DetachedRegistry.layer, DelegationTracker.layer)
  const base = Layer.mergeAll(
    TaskRegistry.layer(options.tasks),
    EventLog.layer(options.events),
    PushConfigs.layer(options.push),
    record,
    residue,
    planes,
    capsule.pipe(Layer.provide(residue))
  )
  // The journal is built first and released last: the runner's last changes at the end are kept.
  return TaskRunner.layer(options.runner).pipe(Layer.provideMerge(base), Layer.provide(options.journal ?? Journal.none))
}

/**
 * A session around a capsule layer and the export planes its door serves (none declared, unless
 * given). Reads the door's settings for the registry's default acceptance and for what the card
 * advertises (streaming, bearer auth).
 */
export const withCapsule = <E, R, EP = never, RP = never, ER = never>(
  capsule: Layer.Layer<Capsule, E, R>,
  options: Options = {},
  planes: Layer.Layer<ResourcePlanes, EP, RP> = ResourcePlanes.layerUndeclared as Layer.Layer<ResourcePlanes, EP, RP>,
  /** Where the door records for the session (an agent session: its trace); nothing unless given. */
  record: Layer.Layer<SessionRecord, ER> = SessionRecord.none as Layer.Layer<SessionRecord, ER>
): Layer.Layer<Session, E | EP | ER, Exclude<R, DelegationTracker | DetachedRegistry> | RP | DoorAddress | DoorConfig> =>
  Layer.unwrapEffect(Effect.map(DoorConfig, (door) =>
    SessionIdentity.layer({
      streaming: door.acceptance !== "none",
      bearer: !credentialsOf(door).open,
      sessionId: options.sessionId,
      signer: door.cardSigner
    }).pipe(Layer.provideMerge(servicesLayer(capsule, { ...options, tasks: { acceptance: door.acceptance, ...options.tasks } }, planes, record)))))

/** The session services around the `Capsule` in context (`CapsuleRuntime.layer`). */
export const layer = (options: Options = {}): Layer.Layer<Session, never, Capsule | DoorAddress | DoorConfig> =>
  withCapsule(Layer.service(Capsule), options)

/**
 * The door's settings as the door and the session share them: the credentials table is made
 * once here, so the door and whoever composed the session hold the same one.
 */
export const doorConfigLayer = (settings: Partial<DoorSettings> = {}): Layer.Layer<DoorConfig> =>
  Layer.sync(DoorConfig, () => {
    const given: DoorSettings = { ...defaultDoorSettings, ...settings }
    return { ...given, credentials: credentialsOf(given) }
  })
