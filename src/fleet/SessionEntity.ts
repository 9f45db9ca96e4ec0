/**
 * A capsule session as an `@effect/cluster` entity: its id is the session id, its protocol the
 * door's verbs (../services/SessionPort.ts). Every call is volatile and safe to run twice, since
 * the cluster sends a call again to the new owner when a runner dies with it in flight: a submit
 * is keyed by its message id (the registry answers the task it made before), a cancel of a task
 * that ended answers that it ended, and the reads change nothing. Frames are not an RPC at all:
 * a gateway reads them from the store after its own cursor (./StoreFrames.ts), because a stream
 * the cluster sends again starts over from its first element.
 */
import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import type { CapsuleInfo } from "../services/Capsule.js"
import type { PortStats } from "../services/SessionPort.js"
import type { Message, Task } from "../services/Task.js"
import { type Acceptance, type NewTask, TaskNotFound } from "../services/TaskRegistry.js"
import { type CancelOutcome, type StopOutcome, TaskNotAcceptingInput } from "../services/TaskRunner.js"

/**
 * A session's own record, carried as it is: these are the JSON-safe shapes the store writes and
 * reads back (../store/TaskStore.ts), so the runner protocol's msgpack carries them whole.
 */
const record = <A>(): Schema.Schema<A> => Schema.Unknown as unknown as Schema.Schema<A>

const taskId = { taskId: Schema.String }

/** What a session serves, as its card needs it: built by the owner, read by any gateway. */
export interface Described {
  readonly capsule: CapsuleInfo
  readonly streaming: boolean
}

export const SessionEntity = Entity.make("CapsuleSession", [
  Rpc.make("Describe", { success: record<Described>() }),
  Rpc.make("Submit", { payload: { input: record<NewTask>() }, success: record<Acceptance>() }),
  Rpc.make("Resume", {
    payload: { ...taskId, message: record<Message>() },
    success: record<Task>(),
    error: Schema.Union(TaskNotFound, TaskNotAcceptingInput)
  }),
  // A client that goes away does not take its cancel or stop with it.
  Rpc.make("Cancel", { payload: taskId, success: record<CancelOutcome>(), error: TaskNotFound }).annotate(ClusterSchema.Uninterruptible, "client"),
  Rpc.make("Stop", { success: record<StopOutcome>() }).annotate(ClusterSchema.Uninterruptible, "client"),
  Rpc.make("AwaitSettled", { payload: taskId, success: record<Task>(), error: TaskNotFound }),
  Rpc.make("Stats", { success: record<PortStats>() }),
  // The session's call to itself while it has work: the cluster lets an entity that is moving or
  // stopping finish its calls in progress (up to its termination timeout), and this is one.
  Rpc.make("Hold")
])
