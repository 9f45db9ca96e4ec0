/**
 * The wait of a blocking `message/send`, bounded by `blockingTimeoutMs` (`serve
 * --blocking-timeout`): a caller gets the task once it is terminal or `input-required`, or, when
 * the bound passes first, the task as it stands (still `submitted` or `working`; it goes on) with
 * a status message saying why the answer came early. Without the bound a send queued behind busy
 * slots, or a long task, would hold the caller (and its connection) until the client gave up.
 */
import { Effect, Option } from "effect"
import type { Task } from "../services/Task.js"
import type { PortStats, SessionPort } from "../services/SessionPort.js"

const seconds = (ms: number) => `${ms / 1000}s`

/** Why a blocking wait answered before the task settled, said from the registry's counters. */
const earlyMessage = (task: Task, waitedMs: number, stats: PortStats) => {
  const bound = `${seconds(waitedMs)} (serve --blocking-timeout)`
  const follow = "follow it with tasks/get or tasks/resubscribe"
  if (task.state !== "submitted") return `still ${task.state} after ${bound}; it runs on: ${follow}`
  const held = stats.inputHeld > 0 ? `, ${stats.inputHeld} of them by tasks waiting for input` : ""
  return `not started after ${bound}: ${stats.active} of ${stats.maxActive} active slots are busy${held}; ` +
    `it stays queued and starts when one frees: ${follow}`
}

/** The task once settled, or as it stands after `timeoutMs` with the reason as its status message. */
export const settledWithin = (registry: SessionPort["Type"], taskId: string, timeoutMs: number) =>
  registry.awaitSettled(taskId).pipe(
    Effect.timeoutOption(timeoutMs),
    Effect.flatMap(Option.match({
      onSome: Effect.succeed,
      onNone: () =>
        Effect.zipWith(registry.get(taskId), registry.stats(), (task, stats): Task => ({
          ...task,
          statusMessage: earlyMessage(task, timeoutMs, stats)
        }))
    }))
  )
