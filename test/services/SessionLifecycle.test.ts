import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { DelegationTracker } from "../../src/services/DelegationTracker.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"
import { type RunOnceOptions, type RunOutcome, SessionLifecycle } from "../../src/services/SessionLifecycle.js"
import type { Task } from "../../src/services/Task.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"

/** A runner that only records: the test starts and ends tasks on the registry itself. */
const recordingRunner = Layer.effect(
  TaskRunner,
  Effect.map(TaskRegistry, (registry) =>
    TaskRunner.of({
      submit: registry.accept,
      resume: () => Effect.die("unused"),
      cancel: () => Effect.die("unused"),
      stop: () => Effect.die("unused"),
      running: () => Effect.succeed(0),
      handOff: () => Effect.die("unused")
    }))
)

const session = SessionLifecycle.layer.pipe(
  Layer.provideMerge(recordingRunner),
  Layer.provideMerge(Layer.mergeAll(TaskRegistry.layer({ acceptance: "queue", queueDepth: 8 }), DelegationTracker.layer, DetachedRegistry.layer))
)

const run = (options: Partial<RunOnceOptions> = {}) =>
  Effect.flatMap(SessionLifecycle, (lifecycle) =>
    lifecycle.runOnce({ task: undefined, idle: "30 seconds", afterTask: "exit", awaitDelegations: false, ...options })).pipe(Effect.fork)

/** Lets the run's fiber take every change made so far. */
const settle = Effect.repeatN(Effect.yieldNow(), 100)

const a2aTask = (text: string) =>
  Effect.gen(function*() {
    const registry = yield* TaskRegistry
    const accepted = yield* registry.accept({
      message: { role: "user", messageId: `m-${text}-${Math.random()}`, parts: [{ kind: "text", text }] },
      provenance: { origin: "user", trust: "untrusted" },
      dialect: "a2a"
    })
    assert.strictEqual(accepted._tag, "Accepted")
    return accepted.task
  })

const start = Effect.flatMap(TaskRegistry, (registry) => Effect.map(registry.startNext(), Option.getOrThrow))
const end = (task: Task, state: "completed" | "failed" | "input-required" = "completed") =>
  Effect.flatMap(TaskRegistry, (registry) => registry.update(task.id, { state }))

const settledTask = (outcome: RunOutcome): Task => {
  assert.strictEqual(outcome._tag, "Settled")
  return (outcome as Extract<RunOutcome, { _tag: "Settled" }>).task
}

const delegation = (id: string) => ({ delegation_id: id, capsule: "hello", version: "0.1.0", child_session_id: "ses_child", child_workdir: "delegations/x" })

describe("SessionLifecycle.runOnce", () => {
  it.effect("no task within the idle window: Idle, when the window has passed and not before", () =>
    Effect.gen(function*() {
      const fiber = yield* run({ idle: "30 seconds" })
      yield* settle
      yield* TestClock.adjust("29 seconds")
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Fiber.join(fiber))._tag, "Idle")
    }).pipe(Effect.provide(session)))

  it.effect("the first task started within the window is the run's; it ends when that task is terminal, not at input-required", () =>
    Effect.gen(function*() {
      const fiber = yield* run()
      yield* settle
      yield* TestClock.adjust("10 seconds")
      const task = yield* a2aTask("hello")
      yield* start
      yield* end(task, "input-required")
      yield* settle
      // Past the idle window: a task is running, so the window no longer applies.
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* Effect.flatMap(TaskRegistry, (registry) => registry.update(task.id, { state: "working" }))
      yield* end(task, "failed")
      const outcome = settledTask(yield* Fiber.join(fiber))
      assert.strictEqual(outcome.id, task.id)
      assert.strictEqual(outcome.state, "failed")
    }).pipe(Effect.provide(session)))

  it.effect("a task that started before the run asked is still found", () =>
    Effect.gen(function*() {
      const task = yield* a2aTask("early")
      yield* start
      const fiber = yield* run()
      yield* settle
      yield* end(task)
      assert.strictEqual(settledTask(yield* Fiber.join(fiber)).id, task.id)
    }).pipe(Effect.provide(session)))

  it.effect("a local task is submitted as the user's trusted task and never times out", () =>
    Effect.gen(function*() {
      const fiber = yield* run({ task: "do it", idle: "1 second" })
      yield* settle
      const task = yield* start
      assert.deepStrictEqual(task.history[0]!.parts, [{ kind: "text", text: "do it" }])
      assert.deepStrictEqual(task.provenance, { origin: "user", trust: "trusted", hostSource: "task_md" })
      yield* TestClock.adjust("1 hour")
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* end(task)
      assert.strictEqual(settledTask(yield* Fiber.join(fiber)).state, "completed")
    }).pipe(Effect.provide(session)))

  it.effect("awaitDelegations: the run outlives its task while a child is live; its outcome is the completion task", () =>
    Effect.gen(function*() {
      const tracker = yield* DelegationTracker
      const fiber = yield* run({ task: "delegate", awaitDelegations: true })
      yield* settle
      const first = yield* start
      yield* tracker.record(delegation("dlg_1"))
      yield* end(first)
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      // The child's completion arrives as a task, and the child ends.
      const completion = yield* a2aTask("completion")
      yield* start
      yield* settle
      yield* tracker.remove("dlg_1")
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "the completion task is still running")
      yield* end(completion)
      assert.strictEqual(settledTask(yield* Fiber.join(fiber)).id, completion.id)
    }).pipe(Effect.provide(session)))

  it.effect("awaitDelegations with no child: the run ends with its task", () =>
    Effect.gen(function*() {
      const fiber = yield* run({ task: "alone", awaitDelegations: true })
      yield* settle
      const task = yield* start
      yield* end(task)
      assert.strictEqual(settledTask(yield* Fiber.join(fiber)).id, task.id)
    }).pipe(Effect.provide(session)))

  it.effect("awaitDetached: detached work holds the run until it ends; without it, it does not", () =>
    Effect.gen(function*() {
      const detached = yield* DetachedRegistry
      const fiber = yield* run({ task: "shell", awaitDetached: true })
      yield* settle
      const task = yield* start
      const work = yield* detached.record({ binary: "sleep", command: "600" })
      yield* end(task)
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* detached.remove(work.work_id)
      assert.strictEqual(settledTask(yield* Fiber.join(fiber)).id, task.id)
      // The plain run ignores detached work (its completions are abandoned, not awaited).
      yield* detached.record({ binary: "sleep", command: "600" })
      const plain = yield* run({ task: "again" })
      yield* settle
      yield* end(yield* start)
      assert.strictEqual((yield* Fiber.join(plain))._tag, "Settled")
    }).pipe(Effect.provide(session)))

  it.effect("sleep: later tasks run as they come; interruption reports the last task that settled", () =>
    Effect.gen(function*() {
      const slept = yield* Deferred.make<Task>()
      const reported = yield* Deferred.make<RunOutcome>()
      const fiber = yield* run({
        task: "first",
        afterTask: "sleep",
        onSleep: (first) => Deferred.succeed(slept, first),
        onInterrupt: (outcome) => Deferred.succeed(reported, outcome)
      })
      yield* settle
      const first = yield* start
      yield* end(first)
      assert.strictEqual((yield* Deferred.await(slept)).id, first.id)
      const second = yield* a2aTask("second")
      yield* start
      yield* settle
      yield* end(second, "failed")
      yield* settle
      yield* TestClock.adjust("1 day")
      yield* settle
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* Fiber.interrupt(fiber)
      const last = settledTask(yield* Deferred.await(reported))
      assert.strictEqual(last.id, second.id)
      assert.strictEqual(last.state, "failed")
    }).pipe(Effect.provide(session)))
})
