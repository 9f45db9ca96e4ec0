/**
 * Detached shell commands (spec §3.5 [0.3]): their completions, and what becomes of them. A
 * followed command's completion is queued here; `deliverCompletions` turns each into a
 * `completion`-origin task in the bg lane when the capsule outlives its tasks (`queue` +
 * `sleep`), and records it as `shell_abandoned` otherwise. The completion task keeps the trust
 * of the task that started the command (door spec §8.1), so an untrusted task's command output
 * reaches the model fenced. A command still running when the session closes is recorded as
 * `shell_abandoned` too: nothing is dropped silently.
 */
import { Context, Effect, FiberSet, Layer, Queue } from "effect"
import { completionMessage, completionStatus, type DetachedCompletion } from "../shell/ShellGrant.js"
import { mintId } from "../services/Ids.js"
import type { DetachedInfo } from "../shell/Shell.js"
import type { Trust } from "../services/Task.js"
import { TaskRunner } from "../services/TaskRunner.js"
import { Trace } from "../records/Trace.js"

/** A finished detached command and the trust of the task that started it. */
export interface FollowedCompletion {
  readonly done: DetachedCompletion
  readonly trust: Trust
}

export class ShellCompletions extends Context.Tag("capsule-runtime/agent/ShellCompletions")<ShellCompletions, {
  /** Waits for a detached command in the background; its completion joins the queue with `trust`, the starting task's. */
  readonly follow: (detached: DetachedInfo, completion: Effect.Effect<DetachedCompletion>, trust: Trust) => Effect.Effect<void>
  /** The next completion, in the order they finished. */
  readonly next: Effect.Effect<FollowedCompletion>
}>() {
  /** A session that takes no further tasks: a detached command's completion is nobody's to wait for. */
  static readonly none: Layer.Layer<ShellCompletions> = Layer.succeed(ShellCompletions, { follow: () => Effect.void, next: Effect.never })

  static readonly layer: Layer.Layer<ShellCompletions, never, Trace> = Layer.scoped(
    ShellCompletions,
    Effect.gen(function*() {
      const trace = yield* Trace
      const queue = yield* Queue.unbounded<FollowedCompletion>()
      const watchers = yield* FiberSet.make<void>()
      const follow = (detached: DetachedInfo, completion: Effect.Effect<DetachedCompletion>, trust: Trust) =>
        FiberSet.run(watchers, completion.pipe(
          Effect.flatMap((done) => Queue.offer(queue, { done, trust })),
          Effect.asVoid,
          Effect.onInterrupt(() =>
            trace.record("shell_abandoned", undefined, {
              work_id: detached.workId,
              binary: detached.binary,
              command: detached.command,
              running_ms: Date.now() - detached.startedAtMs
            }).pipe(Effect.ignore)
          )
        )).pipe(Effect.asVoid)
      return ShellCompletions.of({ follow, next: Queue.take(queue) })
    })
  )
}

/** Delivers completions for the session's lifetime (`receives`: `queue` + `sleep`). */
export const deliverCompletions = (receives: boolean): Layer.Layer<never, never, ShellCompletions | TaskRunner | Trace> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const completions = yield* ShellCompletions
    const runner = yield* TaskRunner
    const trace = yield* Trace
    const deliver = ({ done, trust }: FollowedCompletion) =>
      Effect.gen(function*() {
        if (!receives) {
          return yield* trace.record("shell_abandoned", undefined, {
            work_id: done.workId,
            binary: done.binary,
            command: done.command,
            running_ms: done.durationMs,
            exit_code: done.exitCode,
            output_path: done.outputPath,
            output_bytes: done.outputBytes
          })
        }
        const acceptance = yield* runner.submit({
          message: { role: "user", messageId: mintId("msg"), parts: [{ kind: "text", text: completionMessage(done) }] },
          provenance: { origin: "completion", trust, hostSource: "detached_shell" },
          dialect: "a2a"
        })
        return yield* trace.record("shell_completed", undefined, {
          work_id: done.workId,
          binary: done.binary,
          command: done.command,
          exit_code: done.exitCode,
          duration_ms: done.durationMs,
          output_path: done.outputPath,
          output_bytes: done.outputBytes,
          ...(done.droppedBytes === undefined ? {} : { resource_limit: "max_output_bytes", dropped_bytes: done.droppedBytes }),
          status: completionStatus(done),
          completion_task_id: acceptance.task.id
        })
      })
    yield* completions.next.pipe(
      Effect.flatMap((followed) => deliver(followed).pipe(Effect.catchAll((error) => Effect.logError("completion not delivered", error)))),
      Effect.forever,
      Effect.forkScoped
    )
  }))
