/**
 * Composition only: the session's services, the door and its server, wired for one capsule.
 * A larger Effect application can take `SessionLive` with its own capsule layer.
 */
import { Layer } from "effect"
import { DoorConfig, type DoorSettings, defaultDoorSettings } from "../http/DoorConfig.js"
import { boundUrl, DoorLive, doorServerLayer } from "../http/Door.js"
import type { Capsule } from "../services/Capsule.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import { EventLog, type EventLogConfig } from "../services/EventLog.js"
import { ScriptedCapsule, type ScriptedCapsuleConfig } from "../services/ScriptedCapsule.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { TaskRegistry, type TaskRegistryConfig } from "../services/TaskRegistry.js"
import { TaskRunner, type TaskRunnerConfig } from "../services/TaskRunner.js"

export interface SessionOptions {
  /** The session's `ses_` id, when the caller minted it already. */
  readonly sessionId?: string
  readonly door?: Partial<DoorSettings>
  /** The registry's settings; its `acceptance` defaults to the door's. */
  readonly registry?: Partial<TaskRegistryConfig>
  readonly runner?: Partial<TaskRunnerConfig>
  readonly eventLog?: Partial<EventLogConfig>
}

/** Registry, event log, residue sources and runner around a capsule layer. */
export const servicesLayer = <E, R>(capsule: Layer.Layer<Capsule, E, R>, options: SessionOptions = {}) => {
  const acceptance = options.door?.acceptance ?? defaultDoorSettings.acceptance
  const residue = Layer.merge(DetachedRegistry.layer, DelegationTracker.layer)
  const base = Layer.mergeAll(
    TaskRegistry.layer({ acceptance, ...options.registry }),
    EventLog.layer(options.eventLog),
    residue,
    capsule.pipe(Layer.provide(residue))
  )
  return TaskRunner.layer(options.runner).pipe(Layer.provideMerge(base))
}

/** A whole session: services, a listening door, and the identity it advertises. */
export const SessionLive = <E, R>(capsule: Layer.Layer<Capsule, E, R>, options: SessionOptions = {}) => {
  const settings: DoorSettings = { ...defaultDoorSettings, ...options.door }
  const identity = SessionIdentity.layer({ url: boundUrl, streaming: settings.acceptance !== "none", sessionId: options.sessionId })
  return DoorLive.pipe(
    Layer.provideMerge(identity),
    Layer.provideMerge(servicesLayer(capsule, options)),
    Layer.provideMerge(doorServerLayer(settings)),
    Layer.provideMerge(DoorConfig.layer(settings))
  )
}

/** The embedded default: the scripted capsule behind the door. */
export const ScriptedSessionLive = (options: SessionOptions & { readonly scripted?: Partial<ScriptedCapsuleConfig> } = {}) =>
  SessionLive(ScriptedCapsule.layer(options.scripted), options)
