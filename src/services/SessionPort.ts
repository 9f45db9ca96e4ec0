/**
 * What the door asks of a session, and nothing more: its tasks, the runner's four verbs and its
 * frames after a cursor. A door serving a session in this process reads the session's own
 * services (`layerLocal`, no copy, no hop); a fleet's gateway serves a session another runner
 * owns through the same shape (../fleet/RemoteSession.ts), so one method table answers both.
 */
import { Context, Effect, Layer, type Option, type Scope } from "effect"
import { EventLog, type SubscribeOptions, type Subscription } from "./EventLog.js"
import type { Message, Task } from "./Task.js"
import { type Acceptance, type NewTask, type TaskNotFound, TaskRegistry } from "./TaskRegistry.js"
import { type CancelOutcome, type StopOutcome, type TaskNotAcceptingInput, TaskRunner } from "./TaskRunner.js"

/** The registry's counters a blocking wait names when it answers early. */
export interface PortStats {
  readonly active: number
  readonly maxActive: number
  readonly inputHeld: number
}

export class SessionPort extends Context.Tag("capsule-runtime/services/SessionPort")<SessionPort, {
  readonly get: (taskId: string) => Effect.Effect<Task, TaskNotFound>
  /** The session's tasks in acceptance order. */
  readonly list: () => Effect.Effect<ReadonlyArray<Task>>
  /** The reference's "active task": the newest one not yet terminal. */
  readonly current: () => Effect.Effect<Option.Option<Task>>
  /** Waits until the task is terminal or `input-required`. */
  readonly awaitSettled: (taskId: string) => Effect.Effect<Task, TaskNotFound>
  readonly stats: () => Effect.Effect<PortStats>
  readonly submit: (input: NewTask) => Effect.Effect<Acceptance>
  readonly resume: (taskId: string, message: Message) => Effect.Effect<Task, TaskNotFound | TaskNotAcceptingInput>
  readonly cancel: (taskId: string) => Effect.Effect<CancelOutcome, TaskNotFound>
  readonly stop: () => Effect.Effect<StopOutcome>
  /** The id of the newest frame a reader may see. */
  readonly lastId: () => Effect.Effect<number>
  /** Frames after a cursor, then live ones, until the scope closes (`EventLog.open`). */
  readonly open: (options: SubscribeOptions) => Effect.Effect<Subscription, never, Scope.Scope>
}>() {
  /** The session's own services, called directly. */
  static readonly layerLocal = Layer.effect(
    SessionPort,
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const runner = yield* TaskRunner
      const log = yield* EventLog
      return SessionPort.of({
        get: registry.get,
        list: registry.list,
        current: registry.current,
        awaitSettled: registry.awaitSettled,
        stats: registry.stats,
        submit: runner.submit,
        resume: runner.resume,
        cancel: runner.cancel,
        stop: runner.stop,
        lastId: log.lastId,
        open: log.open
      })
    })
  )
}
