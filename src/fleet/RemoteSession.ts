/**
 * A session another runner owns, in the shape the door asks of any session
 * (../services/SessionPort.ts): reads come from the store (no hop, no wake of the owner), the
 * verbs go to the owner as entity calls, and frames are read after the reader's cursor
 * (./StoreFrames.ts). A read is at most one commit behind the owner, never ahead of it.
 */
import { Effect, Option } from "effect"
import { SessionPort } from "../services/SessionPort.js"
import { isTerminal, type Task } from "../services/Task.js"
import { TaskNotFound } from "../services/TaskRegistry.js"
import type { FrameStore } from "../store/FrameStore.js"
import type { StoreFailed } from "../store/StoreError.js"
import type { TaskStore } from "../store/TaskStore.js"
import type { SessionClient } from "./SessionClient.js"
import { openStoreFrames, type StoreFramesSettings } from "./StoreFrames.js"

/** A store that cannot be read is the runtime's failure, not the caller's: an internal error. */
const orFail = <A, R>(effect: Effect.Effect<A, StoreFailed, R>) => Effect.orDieWith(effect, (error) => new Error(error.message))

export const remoteSession = (options: {
  readonly sessionId: string
  readonly client: SessionClient
  readonly tasks: TaskStore["Type"]
  readonly frames: FrameStore["Type"]
  readonly settings?: StoreFramesSettings | undefined
}): SessionPort["Type"] => {
  const { client, frames, sessionId, tasks } = options
  const list = () => orFail(Effect.map(tasks.load(sessionId), (stored) => stored.map(({ task }) => task)))
  return SessionPort.of({
    get: (taskId) =>
      Effect.flatMap(orFail(tasks.find(sessionId, taskId)), Option.match({
        onNone: () => Effect.fail(new TaskNotFound({ taskId })),
        onSome: (task) => Effect.succeed(task)
      })),
    list,
    current: () => Effect.map(list(), (all) => Option.fromNullable([...all].reverse().find((task: Task) => !isTerminal(task.state)))),
    awaitSettled: (taskId) => client.call((session) => session.AwaitSettled({ taskId })),
    stats: () => client.call((session) => session.Stats()),
    submit: (input) => client.call((session) => session.Submit({ input })),
    resume: (taskId, message) => client.call((session) => session.Resume({ taskId, message })),
    cancel: (taskId) => client.call((session) => session.Cancel({ taskId })),
    stop: () => client.call((session) => session.Stop()),
    lastId: () => orFail(frames.lastId(sessionId)),
    open: (subscribe) => openStoreFrames(frames, sessionId, subscribe, options.settings)
  })
}
