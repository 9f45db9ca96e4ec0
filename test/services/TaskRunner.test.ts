import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Layer, Stream, TestClock } from "effect"
import * as fc from "fast-check"
import { servicesLayer } from "../../src/layers/Session.js"
import { Capsule, CapsuleFailure, type CapsuleInfo, type TaskInput, type TaskIO } from "../../src/services/Capsule.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"
import { EventLog } from "../../src/services/EventLog.js"
import { EchoCapsule, echoInfo } from "../../src/services/EchoCapsule.js"
import type { Message } from "../../src/services/Task.js"
import type { Frame } from "../../src/services/TaskEvent.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"

const info: CapsuleInfo = { ...echoInfo, name: "test" }

// Each message its own id: a second submit of one id returns the first task (idempotent submit).
let sent = 0
const message = (text: string): Message => ({ role: "user", messageId: `m-${text}-${++sent}`, parts: [{ kind: "text", text }] })

const submit = (runner: TaskRunner["Type"], text: string) =>
  Effect.map(runner.submit({ message: message(text), provenance: { origin: "event", trust: "untrusted" }, dialect: "reference" }), (a) => {
    assert.strictEqual(a._tag, "Accepted")
    return a.task
  })

const capsuleLayer = (run: (input: TaskInput, io: TaskIO) => Effect.Effect<{ readonly response: string }, CapsuleFailure>) =>
  Layer.succeed(Capsule, Capsule.of({ info, run }))

const session = <R>(capsule: Layer.Layer<Capsule, never, R>, maxActive = 4, inputTimeoutMs?: number) =>
  servicesLayer(capsule, {
    tasks: { acceptance: "queue", queueDepth: 16, maxActive },
    runner: inputTimeoutMs === undefined ? {} : { inputTimeoutMs }
  })

/** Yields until the effect's value satisfies the predicate (bounded). */
const until = <A>(effect: Effect.Effect<A, any>, ok: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2000; i++) {
      const value = yield* effect
      if (ok(value)) return value
      yield* Effect.yieldNow()
    }
    return assert.fail("condition not reached")
  })

const framesOf = (taskId: string) =>
  Effect.flatMap(EventLog, (log) =>
    log.close().pipe(
      Effect.zipRight(log.subscribe({ after: 0, taskId }).pipe(Stream.runCollect)),
      Effect.map((items) => Chunk.toReadonlyArray(items).flatMap((item) => item._tag === "Frame" ? [item.frame] : []))
    ))

const statuses = (frames: ReadonlyArray<Frame>) =>
  frames.flatMap((f) => f.event._tag === "Status" ? [`${f.event.state}${f.event.final ? "!" : ""}`] : [])

describe("TaskRunner", () => {
  it.effect("cancel interrupts the task fiber and returns after its finalizer ran", () => {
    const cleaned = Effect.runSync(Deferred.make<void>())
    return Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "x")
      yield* until(registry.get(t.id), (task) => task.state === "working")
      yield* until(runner.running(), (n) => n === 1)
      const outcome = yield* runner.cancel(t.id)
      assert.strictEqual(outcome._tag, "Canceled")
      assert.isTrue(yield* Deferred.isDone(cleaned), "finalizer ran before cancel returned")
      assert.strictEqual(yield* runner.running(), 0)
      assert.strictEqual((yield* registry.get(t.id)).state, "canceled")
      const frames = yield* framesOf(t.id)
      const last = frames.at(-1)!.event
      assert.deepStrictEqual(last, { _tag: "Status", state: "canceled", message: "task canceled", final: true })
    }).pipe(Effect.provide(session(capsuleLayer(() => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(cleaned, void 0)))))))
  })

  it.effect("a task canceled while queued never starts", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const first = yield* submit(runner, "first")
      const queued = yield* submit(runner, "queued")
      yield* until(registry.get(first.id), (task) => task.state === "working")
      const outcome = yield* runner.cancel(queued.id)
      assert.strictEqual(outcome._tag, "Canceled")
      yield* runner.cancel(first.id)
      yield* Effect.yieldNow()
      assert.deepStrictEqual(statuses(yield* framesOf(queued.id)), ["canceled!"])
    }).pipe(Effect.provide(session(capsuleLayer(() => Effect.never), 1))))

  it.effect("cancel outcomes: already canceled, already terminal, unknown", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "/complete ok")
      yield* until(registry.get(t.id), (task) => task.state === "completed")
      assert.strictEqual((yield* runner.cancel(t.id))._tag, "AlreadyTerminal")
      const u = yield* submit(runner, "/forever")
      yield* until(registry.get(u.id), (task) => task.state === "working")
      assert.strictEqual((yield* runner.cancel(u.id))._tag, "Canceled")
      assert.strictEqual((yield* runner.cancel(u.id))._tag, "AlreadyCanceled")
      assert.strictEqual((yield* Effect.flip(runner.cancel("tsk_unknown")))._tag, "TaskNotFound")
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 })))))

  it.effect("cancel reports the residue: detached work and delegations keep running", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const detached = yield* DetachedRegistry
      const work = yield* detached.record({ binary: "sleep", command: "600" })
      const t = yield* submit(runner, "/forever")
      yield* until(registry.get(t.id), (task) => task.state === "working")
      const outcome = yield* runner.cancel(t.id)
      assert.strictEqual(outcome._tag, "Canceled")
      if (outcome._tag === "Canceled") {
        assert.deepStrictEqual(outcome.residue, [{
          binary: "sleep",
          command: "600",
          kind: "detached_shell",
          started_at_ms: work.started_at_ms,
          work_id: work.work_id
        }])
      }
      assert.strictEqual((yield* detached.list()).length, 1)
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 })))))

  it.effect("stop cancels every live task, sorted; a second stop cancels nothing", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const ids = [(yield* submit(runner, "/forever")).id, (yield* submit(runner, "/forever")).id, (yield* submit(runner, "/forever")).id]
      yield* until(registry.stats(), (s) => s.active === 2)
      const stopped = yield* runner.stop()
      assert.deepStrictEqual(stopped.canceled, [...ids].sort())
      assert.strictEqual(yield* runner.running(), 0)
      assert.deepStrictEqual((yield* runner.stop()).canceled, [])
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 }), 2))))

  it.effect("request-input: the task waits in input-required and a follow-up resumes it", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "/ask your name?")
      const waiting = yield* registry.awaitSettled(t.id)
      assert.strictEqual(waiting.state, "input-required")
      assert.strictEqual(waiting.prompt, "your name?")
      yield* runner.resume(t.id, message("Ada"))
      const done = yield* registry.awaitSettled(t.id)
      assert.strictEqual(done.state, "completed")
      assert.strictEqual(done.response, "you said: Ada")
      assert.deepStrictEqual(statuses(yield* framesOf(t.id)), ["working", "input-required", "working", "completed!"])
      assert.deepStrictEqual(done.history.map((m) => m.role), ["user", "user", "agent"])
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 })))))

  it.effect("a follow-up that arrives before the task asks is kept for its next request-input", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "/sleep 1000")
      yield* until(registry.get(t.id), (task) => task.state === "working")
      const early = yield* runner.resume(t.id, message("early"))
      assert.strictEqual(early.state, "working")
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* registry.awaitSettled(t.id)).state, "completed")
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 })))))

  it.effect("input_timeout fails a task that waits too long", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "/ask anyone?")
      yield* registry.awaitSettled(t.id)
      yield* TestClock.adjust("5 seconds")
      const failed = yield* until(registry.get(t.id), (task) => task.state === "failed")
      assert.strictEqual(failed.statusMessage, "input-timeout")
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 }), 4, 5_000))))

  it.effect("the capsule sees an input timeout as a CapsuleFailure whose reason is InputTimeout", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const t = yield* submit(runner, "ask")
      yield* registry.awaitSettled(t.id)
      yield* TestClock.adjust("5 seconds")
      const failed = yield* until(registry.get(t.id), (task) => task.state === "failed")
      assert.strictEqual(failed.statusMessage, "InputTimeout: input-timeout")
    }).pipe(Effect.provide(session(
      capsuleLayer((_, io) =>
        io.requestInput("anyone?").pipe(
          Effect.mapError((error) => new CapsuleFailure({ reason: error.reason, message: `${error.reason}: ${error.message}` })),
          Effect.as({ response: "answered" })
        )
      ),
      4,
      5_000
    ))))

  it.effect("a capsule failure fails the task; a defect fails it with a generic message", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const failed = yield* registry.awaitSettled((yield* submit(runner, "/fail broken tool")).id)
      assert.deepStrictEqual([failed.state, failed.statusMessage], ["failed", "broken tool"])
      const died = yield* registry.awaitSettled((yield* submit(runner, "/die")).id)
      assert.deepStrictEqual([died.state, died.statusMessage], ["failed", "internal error"])
    }).pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 })))))

  it.effect("closing the session layer cancels live tasks", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        const runner = yield* TaskRunner
        const registry = yield* TaskRegistry
        const t = yield* submit(runner, "x")
        yield* until(registry.get(t.id), (task) => task.state === "working")
      }).pipe(Effect.provide(session(capsuleLayer(() => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, void 0)))))))
      assert.isTrue(yield* Deferred.isDone(interrupted))
    }))
})

describe("TaskRunner (property)", () => {
  it("no fiber survives a cancel: after any submit/cancel sequence, running fibers = live started tasks", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.constant("submit" as const), fc.nat(20)), { maxLength: 40 }), async (ops) => {
        const program = Effect.gen(function*() {
          const runner = yield* TaskRunner
          const registry = yield* TaskRegistry
          const ids: Array<string> = []
          for (const op of ops) {
            if (op === "submit") {
              const accepted = yield* runner.submit({ message: message("/forever"), provenance: { origin: "event", trust: "untrusted" }, dialect: "reference" })
              if (accepted._tag === "Accepted") ids.push(accepted.task.id)
            } else if (ids.length > 0) {
              const id = ids[op % ids.length]!
              yield* runner.cancel(id)
              const after = yield* registry.get(id)
              if (after.state !== "canceled") return false
            }
            yield* Effect.yieldNow()
          }
          // Let the dispatcher settle, then compare.
          for (let i = 0; i < 50; i++) yield* Effect.yieldNow()
          const stats = yield* registry.stats()
          return (yield* runner.running()) === stats.active
        })
        return Effect.runPromise(program.pipe(Effect.provide(session(EchoCapsule.layer({ echoMs: 0 }), 3))))
      }),
      { numRuns: 60 }
    )
  })
})
