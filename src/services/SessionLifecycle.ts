/**
 * When a one-shot run of a session ends (`capsule-runtime run`, `after_task`). The run's task is
 * a local one (submitted here), else the first task the door starts within the idle window. With
 * `after_task: exit` the run ends once that task is terminal; a capsule that may delegate also
 * waits until no delegation is live and no task is queued or running (its children's completions
 * arrive as tasks), and its outcome is then the last task that settled. With `after_task: sleep`
 * later tasks run as they come and only interruption (a signal) ends the run.
 *
 * Every wait reads the registry and the residue sources again on each of their `changes`: no
 * polling, no sleeps, and the idle window is a `Clock` timeout.
 */
import { Context, Data, type Duration, Effect, Layer, Option, Ref, Stream } from "effect"
import { DelegationTracker } from "./DelegationTracker.js"
import { DetachedRegistry } from "./DetachedRegistry.js"
import { mintId } from "./Ids.js"
import { isTerminal, type Task } from "./Task.js"
import { TaskRegistry } from "./TaskRegistry.js"
import { TaskRunner } from "./TaskRunner.js"

/** How a run ended: the task it is about (the last that settled), or no task within the idle window. */
export type RunOutcome = Data.TaggedEnum<{
  Settled: { readonly task: Task }
  Idle: {}
}>
export const RunOutcome = Data.taggedEnum<RunOutcome>()

export interface RunOnceOptions {
  /** The local task's text; absent: the first task the door starts. */
  readonly task: string | undefined
  /** How long a run without a local task waits for its first one. */
  readonly idle: Duration.DurationInput
  /** `exit`: the run ends with its task; `sleep`: later tasks run as they come until interruption. */
  readonly afterTask: "exit" | "sleep"
  /** An `exit` run also waits until no delegation is live and no task is queued or running. */
  readonly awaitDelegations: boolean
  /** ... and until no detached work is running. */
  readonly awaitDetached?: boolean
  /** A sleeping run's first task has settled; the run now waits for the next one. */
  readonly onSleep?: ((first: Task) => Effect.Effect<void>) | undefined
  /** A sleeping run was interrupted (its only way to end): its outcome, the last task that settled. */
  readonly onInterrupt?: ((outcome: RunOutcome) => Effect.Effect<void>) | undefined
}

export class SessionLifecycle extends Context.Tag("capsule-runtime/services/SessionLifecycle")<SessionLifecycle, {
  /** Runs the session's one task (or, sleeping, its tasks) and says how the run ended. */
  readonly runOnce: (options: RunOnceOptions) => Effect.Effect<RunOutcome>
}>() {
  static readonly layer: Layer.Layer<SessionLifecycle, never, TaskRegistry | TaskRunner | DelegationTracker | DetachedRegistry> = Layer.effect(
    SessionLifecycle,
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const runner = yield* TaskRunner
      const delegations = yield* DelegationTracker
      const detached = yield* DetachedRegistry

      /** `check` once the triggers have subscribed, and again on each change, until it gives a value. */
      const whenever = <A>(triggers: Stream.Stream<unknown>, check: Effect.Effect<Option.Option<A>>) =>
        triggers.pipe(
          Stream.mapEffect(() => check),
          Stream.filterMap((found) => found),
          Stream.runHead,
          // The streams end only with the session, and the run with it.
          Effect.flatMap(Option.match({ onNone: () => Effect.never, onSome: Effect.succeed }))
        )

      const slot = () => Effect.map(registry.current(), Option.map((task) => task.id))

      /** The run's task: the local one, else the first one started, unless the idle window passes. */
      const firstTask = (options: RunOnceOptions) =>
        Effect.gen(function*() {
          if (options.task === undefined) return yield* whenever(registry.changes, slot()).pipe(Effect.timeoutOption(options.idle))
          const acceptance = yield* runner.submit({
            message: { role: "user", messageId: mintId("msg"), parts: [{ kind: "text", text: options.task }] },
            provenance: { origin: "user", trust: "trusted", hostSource: "task_md" },
            dialect: "a2a"
          })
          // Rejected only when an A2A task won the single slot first: that one is the run's task.
          return acceptance._tag === "Accepted" ? Option.some(acceptance.task.id) : yield* slot()
        })

      /** The task once it is terminal (input-required is not: an answer may still come). */
      const settled = (taskId: string) =>
        whenever(registry.changes, Effect.map(registry.get(taskId).pipe(Effect.orDie), (task) => isTerminal(task.state) ? Option.some(task) : Option.none()))

      /** Later tasks until none is queued or running and no residue the run waits for is live; the last that settled. */
      const drain = (first: Task, wait: { readonly delegations: boolean; readonly detached: boolean }) =>
        Effect.gen(function*() {
          const triggers = Stream.mergeAll([
            registry.changes as Stream.Stream<unknown>,
            ...(wait.delegations ? [delegations.changes] : []),
            ...(wait.detached ? [detached.changes] : [])
          ], { concurrency: "unbounded" })
          let last = first
          for (;;) {
            const next = yield* whenever(
              triggers,
              Effect.gen(function*() {
                const current = yield* registry.current()
                if (Option.isSome(current) && current.value.id !== last.id) return Option.some(Option.some(current.value.id))
                const idle = (yield* registry.live()).length === 0 &&
                  (!wait.delegations || (yield* delegations.list()).length === 0) &&
                  (!wait.detached || (yield* detached.list()).length === 0)
                return idle ? Option.some(Option.none<string>()) : Option.none()
              })
            )
            if (Option.isNone(next)) return last
            last = yield* settled(next.value)
          }
        })

      /** A sleeping run: every later task that starts is followed to its end; interruption reports the last. */
      const sleep = (first: Task, options: RunOnceOptions) =>
        Effect.gen(function*() {
          const last = yield* Ref.make(first)
          if (options.onSleep !== undefined) yield* options.onSleep(first)
          const follow = Effect.gen(function*() {
            const previous = yield* Ref.get(last)
            const next = yield* whenever(registry.changes, Effect.map(slot(), Option.filter((id) => id !== previous.id)))
            yield* Ref.set(last, yield* settled(next))
          })
          return yield* Effect.forever(follow).pipe(Effect.onInterrupt(() =>
            Effect.gen(function*() {
              if (options.onInterrupt === undefined) return
              // The signal may beat the wait to a task that has just settled: ask the registry itself.
              const current = yield* registry.current()
              const task = Option.isSome(current) && isTerminal(current.value.state) ? current.value : yield* Ref.get(last)
              yield* options.onInterrupt(RunOutcome.Settled({ task }))
            })
          ))
        })

      const runOnce = Effect.fn("SessionLifecycle.runOnce")(function*(options: RunOnceOptions) {
        const first = yield* firstTask(options)
        if (Option.isNone(first)) return RunOutcome.Idle()
        yield* Effect.annotateCurrentSpan("taskId", first.value)
        const task = yield* settled(first.value)
        if (options.afterTask === "sleep") return yield* sleep(task, options)
        const wait = { delegations: options.awaitDelegations, detached: options.awaitDetached ?? false }
        if (!wait.delegations && !wait.detached) return RunOutcome.Settled({ task })
        return RunOutcome.Settled({ task: yield* drain(task, wait) })
      })

      return SessionLifecycle.of({ runOnce })
    }).pipe(Effect.annotateLogs({ service: "SessionLifecycle" }))
  )
}
