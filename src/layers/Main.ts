/**
 * Composition only: the session's services, the door and its server, wired for one capsule.
 * A larger Effect application can take `SessionLive` with its own capsule layer, or mount a
 * session's door on a server of its own with `makeSessionApp`.
 */
import type { HttpApp } from "@effect/platform"
import { Effect, Layer, type Scope } from "effect"
import { DoorConfig, type DoorSettings, defaultDoorSettings } from "../http/DoorConfig.js"
import { credentialsOf } from "../http/DoorCredentials.js"
import { DoorLive, doorServerLayer, makeDoorApp } from "../http/Door.js"
import type { Capsule } from "../services/Capsule.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import { EventLog, type EventLogConfig } from "../services/EventLog.js"
import { ScriptedCapsule, type ScriptedCapsuleConfig } from "../services/EchoCapsule.js"
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

/** The door's settings a session starts from (loopback, any free port). */
export const defaultSessionDoor: DoorSettings = defaultDoorSettings

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

/** Services, identity and door settings: a session short of its server (needs the `DoorAddress`). */
const sessionCore = <E, R>(capsule: Layer.Layer<Capsule, E, R>, options: SessionOptions) => {
  const given: DoorSettings = { ...defaultDoorSettings, ...options.door }
  // Made once here, so the door and whoever composed the session share one table.
  const settings: DoorSettings = { ...given, credentials: credentialsOf(given) }
  const identity = SessionIdentity.layer({
    streaming: settings.acceptance !== "none",
    bearer: !settings.credentials!.open,
    sessionId: options.sessionId
  })
  return identity.pipe(
    Layer.provideMerge(servicesLayer(capsule, options)),
    Layer.provideMerge(DoorConfig.layer(settings))
  )
}

/**
 * A whole session: services, a listening door on a Node server of its own, the identity it
 * advertises and the `DoorAddress` it was bound at. The server itself stays inside.
 */
export const SessionLive = <E, R>(capsule: Layer.Layer<Capsule, E, R>, options: SessionOptions = {}) =>
  DoorLive.pipe(
    Layer.provideMerge(sessionCore(capsule, options)),
    Layer.provideMerge(Layer.service(DoorAddress)),
    Layer.provide(doorServerLayer({ ...defaultDoorSettings, ...options.door }))
  )

/**
 * A session whose door is an app for the host's own router (`HttpRouter.mountApp(prefix, app)`):
 * the host provides the `DoorAddress` the door is reached at (`doorAddressLayer(prefix)` reads
 * it off the host's `HttpServer`). The session lives as long as the enclosing scope; closing it
 * stops the session as `session/stop` does, then releases its services.
 */
export const makeSessionApp = <E, R>(
  capsule: Layer.Layer<Capsule, E, R>,
  options: SessionOptions = {}
) =>
  Effect.flatMap(
    Layer.build(sessionCore(capsule, options)),
    (context): Effect.Effect<HttpApp.Default<unknown, never>, never, Scope.Scope> => Effect.provide(makeDoorApp, context)
  )

/** The embedded default: the scripted capsule behind the door. */
export const ScriptedSessionLive = (options: SessionOptions & { readonly scripted?: Partial<ScriptedCapsuleConfig> } = {}) =>
  SessionLive(ScriptedCapsule.layer(options.scripted), options)
