/**
 * capsule-runtime as a library: `CapsuleRuntime` makes a session (a capsule directory, the
 * built-in echo capsule, or your own `Capsule`), `Door` serves it over A2A. Importing this
 * module runs nothing; the command line is `capsule-runtime/cli`.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { CapsuleRuntime, Door } from "capsule-runtime"
 *
 * Door.layer(CapsuleRuntime.layerEcho()).pipe(Layer.provide(Door.layerServer({ port: 8080 })), Layer.launch, NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 */

/**
 * Sessions: `layer` (your capsule), `layerDirectory`, `layerEcho`, `layerHost`, and `Options`.
 *
 * @since 0.2.0
 * @category modules
 */
export * as CapsuleRuntime from "./CapsuleRuntime.js"

/**
 * The A2A door: `layer`, `layerHttpRouter`, `router`, `layerServer`.
 *
 * @since 0.2.0
 * @category modules
 */
export * as Door from "./Door.js"

/**
 * The executor a session runs tasks on; implement it to serve your own agent.
 *
 * @since 0.1.0
 * @category services
 */
export { Capsule } from "./services/Capsule.js"

/**
 * The session's services, read from a session layer's context: the task registry, the runner,
 * the event log, who the session is, and where its door is reached.
 *
 * @since 0.1.0
 * @category services
 */
export { DelegationTracker } from "./services/DelegationTracker.js"
/** @since 0.1.0 */
export { DetachedRegistry } from "./services/DetachedRegistry.js"
/** @since 0.1.0 */
export { DoorAddress } from "./services/DoorAddress.js"
/** @since 0.1.0 */
export { EventLog } from "./services/EventLog.js"
/** @since 0.1.0 */
export { SessionIdentity } from "./services/SessionIdentity.js"
/** @since 0.1.0 */
export { TaskRegistry } from "./services/TaskRegistry.js"
/** @since 0.1.0 */
export { TaskRunner } from "./services/TaskRunner.js"

/**
 * What a capsule is and runs with, and the task model: a task, its state, messages, artifacts,
 * provenance, the events it emits and how a session accepts tasks.
 *
 * @since 0.1.0
 * @category models
 */
export type { CapsuleInfo, CapsuleOutcome, TaskInput, TaskIO } from "./services/Capsule.js"
/** @since 0.1.0 */
export type { Artifact, Message, Origin, Provenance, Task, TaskState, TextPart, Trust } from "./services/Task.js"
/** @since 0.1.0 */
export type { Frame, TaskEvent } from "./services/TaskEvent.js"
/** @since 0.1.0 */
export type { TaskAcceptance } from "./services/TaskRegistry.js"

/**
 * A capsule's run failed; the task ends `failed` with the message.
 *
 * @since 0.1.0
 * @category errors
 */
export { CapsuleFailure } from "./services/Capsule.js"

/**
 * No task by that id, a state change the task model does not allow, and a follow-up for a task
 * that is not waiting for input.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidTransition, TaskNotFound } from "./services/TaskRegistry.js"
/** @since 0.1.0 */
export { TaskNotAcceptingInput } from "./services/TaskRunner.js"

/**
 * A capsule directory that cannot load (`code` is the reference's, e.g. `E-RUN-004`).
 *
 * @since 0.1.0
 * @category errors
 */
export { ProjectError } from "./project/ProjectError.js"
