/**
 * A capsule session as a layer: the task services (registry, runner, event log, residue
 * sources) and the identity a session advertises, around a capsule. Put one behind a door with
 * `Door.layer` (the runtime's own server) or `Door.layerHttpRouter` (a path of your server).
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { CapsuleRuntime, Door } from "capsule-runtime"
 *
 * // What `capsule-runtime serve ./hello --port 8080` is.
 * Door.layer(CapsuleRuntime.layerDirectory("./hello")).pipe(
 *   Layer.provide(Door.layerServer({ port: 8080 })),
 *   Layer.provide(CapsuleRuntime.layerHost),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.2.0
 */
import { Layer } from "effect"
import type { DoorConfig } from "./http/DoorConfig.js"
import * as componentCheck from "./layers/ComponentCheck.js"
import * as directory from "./layers/Directory.js"
import * as host from "./layers/Host.js"
import * as session from "./layers/Session.js"
import * as store from "./layers/Store.js"
import type { Capsule } from "./services/Capsule.js"
import type { DoorAddress } from "./services/DoorAddress.js"
import { EchoCapsule, type EchoConfig } from "./services/EchoCapsule.js"

/**
 * What a session provides: `TaskRegistry`, `TaskRunner`, `EventLog`, `SessionIdentity`,
 * `DelegationTracker` and `DetachedRegistry`.
 *
 * @since 0.2.0
 * @category models
 */
export type Session = session.Session

/**
 * A session's settings, the same for every kind of capsule: its id, the registry (`acceptance`,
 * `queueDepth`, `maxActive`, `retainTerminal`, `retainBytes`), the runner and the event log.
 *
 * @since 0.2.0
 * @category models
 */
export type Options = session.Options

/**
 * What a capsule directory's session needs from its host: the environment its allowlists draw
 * from, the component cache and the worker sandbox.
 *
 * @since 0.2.0
 * @category models
 */
export type Host = host.Host

/**
 * Why a directory's session cannot start: a `ProjectError` (the directory does not load), a
 * `SandboxError` (its component cannot be prepared) or a `TraceWriteFailed` (its records cannot
 * be written).
 *
 * @since 0.2.0
 * @category models
 */
export type DirectoryError = Layer.Layer.Error<ReturnType<typeof directory.layerDirectory>>

/**
 * The session services around the `Capsule` in context: provide your own capsule layer to it.
 * The door (`Door.layer`) provides the `DoorAddress` and its settings.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: (options?: Options) => Layer.Layer<Session, never, Capsule | DoorAddress | DoorConfig> = session.layer

/**
 * The capsule in a directory (an agent capsule, a manifest with `inference:`, or a script
 * capsule), loaded against the host's environment and run on the host's sandbox. Its warnings
 * are logged.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerDirectory: (
  directory: string,
  options?: Options & { readonly workdir?: string | undefined; readonly keepSessions?: number | undefined }
) => Layer.Layer<Session, DirectoryError, Host | DoorAddress | DoorConfig> = directory.layerDirectory

/**
 * The built-in echo capsule (no component, no model): echoes each message in chunks, then waits
 * for the next turn; slash commands pick other behaviours (docs/scripted-capsule.md).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerEcho = (options: Options & Partial<EchoConfig> = {}): Layer.Layer<Session, never, DoorAddress | DoorConfig> => {
  const { echoMs, info, ...settings } = options
  return session.withCapsule(
    EchoCapsule.layer({ ...(echoMs === undefined ? {} : { echoMs }), ...(info === undefined ? {} : { info }) }),
    settings
  )
}

/**
 * The host, built once for every directory session: the environment (a snapshot; the process's
 * own is never changed), the component cache (`CAPSULE_RUNTIME_CACHE_DIR`) and the worker sandbox.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerHost: Layer.Layer<Host> = host.layerHost(1)

/**
 * What this runtime makes of a component's bytes before running it: its WIT world, whether it can
 * run as a capsule or a tool, and what the loader would refuse (`capsule-runtime inspect`).
 *
 * @since 0.2.0
 * @category utils
 */
export const checkComponent = componentCheck.checkComponent

/**
 * What `checkComponent` finds.
 *
 * @since 0.2.0
 * @category models
 */
export type ComponentCheck = componentCheck.ComponentCheck

/**
 * A store for the sessions of `layerDirectory` (provide it to that layer): `sqlite:<path>` (one
 * process per file) or `postgres://…`. A directory served again on the same store keeps its
 * session id, tasks, event ids and push configs (docs/design.md, "The store"). Without one, a
 * session keeps nothing.
 *
 * @since 0.4.0
 * @category layers
 */
export const layerStore = (location: string): Layer.Layer<store.SessionStores, store.StoreRefused | store.StoreFailed> => {
  const spec = store.parseStore(location)
  const made = spec._tag === "Right" && spec.right._tag !== "Memory" && spec.right._tag !== "Default" ? store.storeLayer(spec.right) : undefined
  if (made !== undefined) return made
  const reason = spec._tag === "Left" ? spec.left : "a store for layerStore is sqlite:<path> or postgres://… (no store keeps nothing)"
  return Layer.fail(new store.StoreRefused({ store: location, reason }))
}
