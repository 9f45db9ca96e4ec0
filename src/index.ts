/**
 * capsule-runtime as a library: the layers that make a Murmur capsule session (its task
 * services, the A2A door, the capsule itself), the service tags a host application reads, the
 * capsule contract a host implements, and the tagged errors. Importing this module runs
 * nothing; the command line is `capsule-runtime/cli`.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { ScriptedSessionLive } from "capsule-runtime"
 *
 * ScriptedSessionLive({ door: { port: 8080 } }).pipe(Layer.launch, NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 */

// =============================================================================================
// Layers
// =============================================================================================

/**
 * A whole session around a `Capsule` layer: the task services, a door listening on a Node server
 * of its own, the `SessionIdentity` it advertises and the `DoorAddress` it is bound at.
 *
 * @since 0.1.0
 * @category layers
 */
export { SessionLive } from "./layers/Main.js"

/**
 * The task services around a `Capsule` layer without a door: `TaskRegistry`, `EventLog`,
 * `TaskRunner`, `DetachedRegistry`, `DelegationTracker` and the capsule.
 *
 * @since 0.1.0
 * @category layers
 */
export { servicesLayer } from "./layers/Main.js"

/**
 * A session's door as an `HttpApp` to mount on the host's own router
 * (`HttpRouter.mountApp(prefix, app)`); the host provides the `DoorAddress` it is reached at. The
 * session lives as long as the enclosing scope.
 *
 * @since 0.1.0
 * @category layers
 */
export { makeSessionApp } from "./layers/Main.js"

/**
 * The embedded scripted capsule (no component, no model) behind a door.
 *
 * @since 0.1.0
 * @category layers
 */
export { ScriptedSessionLive } from "./layers/Main.js"

/**
 * The session's settings: the door (`host`, `port`, `acceptance`, limits), the registry, the
 * runner and the event log.
 *
 * @since 0.1.0
 * @category models
 */
export type { SessionOptions } from "./layers/Main.js"

/**
 * The capsule in a directory (agent or script) behind a door, on the host's worker sandbox.
 *
 * @since 0.1.0
 * @category layers
 */
export { CapsuleSessionLive } from "./layers/CapsuleSession.js"

/**
 * Options of `CapsuleSessionLive`: the session's, plus the capsule's workdir.
 *
 * @since 0.1.0
 * @category models
 */
export type { CapsuleSessionOptions } from "./layers/CapsuleSession.js"

/**
 * Prepares an agent capsule (a manifest with `inference:`) and returns its session layer, its
 * workdir and its warnings.
 *
 * @since 0.1.0
 * @category layers
 */
export { agentSession } from "./layers/AgentSession.js"

/**
 * Options of `agentSession`.
 *
 * @since 0.1.0
 * @category models
 */
export type { AgentSessionOptions } from "./layers/AgentSession.js"

/**
 * Prepares a script capsule and returns its session layer, its workdir and its warnings.
 *
 * @since 0.1.0
 * @category layers
 */
export { scriptSession } from "./layers/ScriptSession.js"

/**
 * Options of `scriptSession`.
 *
 * @since 0.1.0
 * @category models
 */
export type { ScriptSessionOptions } from "./layers/ScriptSession.js"

/**
 * The component cache and the worker sandbox that capsules from a directory run on.
 *
 * @since 0.1.0
 * @category layers
 */
export { SandboxLive } from "./layers/Host.js"

/**
 * The host's environment (read once) and the component cache directory.
 *
 * @since 0.1.0
 * @category layers
 */
export { HostEnvironment } from "./layers/Host.js"

/**
 * The `DoorAddress` of a door served at a path of the `HttpServer` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export { doorAddressLayer } from "./http/Door.js"

/**
 * Loads a capsule directory: its manifest, warnings and artifacts.
 *
 * @since 0.1.0
 * @category constructors
 */
export { loadAnyProject } from "./project/CapsuleProject.js"

/**
 * A loaded capsule directory.
 *
 * @since 0.1.0
 * @category models
 */
export type { CapsuleProject } from "./project/CapsuleProject.js"

/**
 * The door's settings.
 *
 * @since 0.1.0
 * @category models
 */
export type { DoorSettings } from "./http/DoorConfig.js"

/**
 * The door's principals for `DoorSettings.credentials`: the operator token, a tokens file with
 * scopes (and its reload), and the `delegations` token children get. A refused file is a
 * `DoorTokensRefused` (`E-RUN-040`).
 *
 * @since 0.1.0
 * @category constructors
 */
export { DoorTokensRefused, makeDoorCredentials } from "./http/DoorCredentials.js"

/**
 * What `makeDoorCredentials` returns, and a principal with its scopes.
 *
 * @since 0.1.0
 * @category models
 */
export type { DoorCredentials } from "./http/DoorCredentials.js"

/**
 * A door scope (`send`, `read`, `cancel`, `stop`, `watch`, `resources`, `complete`, `admin`) and
 * a principal: a named token's holder with its scopes.
 *
 * @since 0.1.0
 * @category models
 */
export type { DoorScope, Principal } from "./http/DoorScopes.js"

// =============================================================================================
// Services
// =============================================================================================

/**
 * The task state machine: submit, read, await, cancel bookkeeping.
 *
 * @since 0.1.0
 * @category services
 */
export { TaskRegistry } from "./services/TaskRegistry.js"

/**
 * Runs started tasks on the `Capsule`, one fiber per task; `cancel` interrupts.
 *
 * @since 0.1.0
 * @category services
 */
export { TaskRunner } from "./services/TaskRunner.js"

/**
 * The session's frames: one id sequence, replay and live subscribers.
 *
 * @since 0.1.0
 * @category services
 */
export { EventLog } from "./services/EventLog.js"

/**
 * Delegations to child capsules still live (residue a cancel names).
 *
 * @since 0.1.0
 * @category services
 */
export { DelegationTracker } from "./services/DelegationTracker.js"

/**
 * Detached shell work still running (residue a cancel names).
 *
 * @since 0.1.0
 * @category services
 */
export { DetachedRegistry } from "./services/DetachedRegistry.js"

/**
 * Who the session is: its id, capsule, URL and agent card.
 *
 * @since 0.1.0
 * @category services
 */
export { SessionIdentity } from "./services/SessionIdentity.js"

/**
 * Where the session's door is reached.
 *
 * @since 0.1.0
 * @category services
 */
export { DoorAddress } from "./services/DoorAddress.js"

/**
 * The executor a session runs tasks on; implement it to serve your own agent.
 *
 * @since 0.1.0
 * @category services
 */
export { Capsule } from "./services/Capsule.js"

/**
 * The embedded scripted capsule (`ScriptedCapsule.layer(config)`).
 *
 * @since 0.1.0
 * @category services
 */
export { ScriptedCapsule } from "./services/EchoCapsule.js"

// =============================================================================================
// Models
// =============================================================================================

/**
 * What a capsule is and what it runs with: its card info, a task's input, the task's IO and
 * the run's outcome.
 *
 * @since 0.1.0
 * @category models
 */
export type { CapsuleInfo, CapsuleOutcome, TaskInput, TaskIO } from "./services/Capsule.js"

/**
 * What a running task emits, and a frame (an event with its session-wide id).
 *
 * @since 0.1.0
 * @category models
 */
export type { Frame, TaskEvent } from "./services/TaskEvent.js"

/**
 * A task, its state, its messages and parts, artifacts and provenance.
 *
 * @since 0.1.0
 * @category models
 */
export type { Artifact, Message, Origin, Provenance, Task, TaskState, TextPart, Trust } from "./services/Task.js"

/**
 * How a session accepts tasks: `none`, `single` or `queue`.
 *
 * @since 0.1.0
 * @category models
 */
export type { TaskAcceptance } from "./services/TaskRegistry.js"

/**
 * The scripted capsule's settings.
 *
 * @since 0.1.0
 * @category models
 */
export type { ScriptedCapsuleConfig } from "./services/EchoCapsule.js"

// =============================================================================================
// Errors
// =============================================================================================

/**
 * A capsule's run failed; the task ends `failed` with the message.
 *
 * @since 0.1.0
 * @category errors
 */
export { CapsuleFailure } from "./services/Capsule.js"

/**
 * No task by that id, and a state change the task model does not allow.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidTransition, TaskNotFound } from "./services/TaskRegistry.js"

/**
 * A follow-up for a task that is not waiting for input.
 *
 * @since 0.1.0
 * @category errors
 */
export { TaskNotAcceptingInput } from "./services/TaskRunner.js"

/**
 * A capsule directory that cannot load (`code` is the reference's, e.g. `E-RUN-004`).
 *
 * @since 0.1.0
 * @category errors
 */
export { ProjectError } from "./project/ProjectError.js"

/**
 * A guest run that failed, with its `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export { SandboxError } from "./sandbox/SandboxError.js"
