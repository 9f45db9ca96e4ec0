import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option } from "effect"
import * as fc from "fast-check"
import { canTransition, isTerminal, type Message, type Origin, type TaskState } from "../../src/services/Task.js"
import { makeRegistry, TaskRegistry, type TaskRegistryConfig } from "../../src/services/TaskRegistry.js"

const message = (text: string): Message => ({ role: "user", messageId: `m-${text}`, parts: [{ kind: "text", text }] })

const task = (text: string, origin: Origin = "event") => ({
  message: message(text),
  provenance: { origin, trust: "untrusted" as const },
  dialect: "reference" as const
})

const accepted = (registry: TaskRegistry["Type"], text: string, origin: Origin = "event") =>
  Effect.map(registry.accept(task(text, origin)), (a) => {
    assert.strictEqual(a._tag, "Accepted")
    return a.task
  })

describe("TaskRegistry", () => {
  it.effect("single: one task per session; the second is recorded as rejected", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const first = yield* registry.accept(task("a"))
      const second = yield* registry.accept(task("b"))
      assert.strictEqual(first._tag, "Accepted")
      assert.strictEqual(second._tag, "Rejected")
      const stored = yield* registry.get(second.task.id)
      assert.strictEqual(stored.state, "rejected")
      assert.strictEqual(stored.statusMessage, "task rejected: capsule is busy")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "single" }))))

  it.effect("none: every task is rejected", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      assert.strictEqual((yield* registry.accept(task("a")))._tag, "Rejected")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "none" }))))

  it.effect("queue: queue_depth bounds waiting tasks; running ones do not count", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      yield* accepted(registry, "a")
      yield* accepted(registry, "b")
      assert.strictEqual((yield* registry.accept(task("c")))._tag, "Rejected")
      assert.isTrue(Option.isSome(yield* registry.startNext()))
      assert.strictEqual((yield* registry.accept(task("d")))._tag, "Accepted")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 2 }))))

  it.effect("lanes: user before peer before bg, FIFO within a lane, at most max_active running", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const bg1 = yield* accepted(registry, "bg1", "event")
      const peer = yield* accepted(registry, "peer", "peer")
      const bg2 = yield* accepted(registry, "bg2", "completion")
      const user = yield* accepted(registry, "user", "user")
      const order: Array<string> = []
      for (let i = 0; i < 2; i++) order.push(Option.getOrThrow(yield* registry.startNext()).id)
      assert.isTrue(Option.isNone(yield* registry.startNext()), "max_active 2 reached")
      yield* registry.update(order[0]!, { state: "completed" })
      yield* registry.update(order[1]!, { state: "completed" })
      for (let i = 0; i < 2; i++) order.push(Option.getOrThrow(yield* registry.startNext()).id)
      assert.deepStrictEqual(order, [user.id, peer.id, bg1.id, bg2.id])
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 10, maxActive: 2 }))))

  it.effect("refuses transitions the state machine forbids and changes nothing", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const t = yield* accepted(registry, "a")
      yield* registry.startNext()
      yield* registry.update(t.id, { state: "completed", response: "ok" })
      const error = yield* Effect.flip(registry.update(t.id, { state: "working" }))
      assert.strictEqual(error._tag, "InvalidTransition")
      assert.strictEqual((yield* registry.get(t.id)).state, "completed")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5 }))))

  it.effect("keeps at most retainTerminal finished tasks, forgetting the oldest", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const t = yield* accepted(registry, `t${i}`)
        yield* registry.startNext()
        yield* registry.update(t.id, { state: "completed" })
        ids.push(t.id)
      }
      for (const id of ids.slice(0, 2)) assert.strictEqual((yield* Effect.flip(registry.get(id)))._tag, "TaskNotFound")
      for (const id of ids.slice(2)) assert.strictEqual((yield* registry.get(id)).state, "completed")
      assert.strictEqual((yield* registry.stats()).retained, 3)
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5, retainTerminal: 3 }))))

  it.effect("awaitSettled resumes on input-required and on terminal states", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const t = yield* accepted(registry, "a")
      const waiter = yield* Effect.fork(registry.awaitSettled(t.id))
      yield* registry.startNext()
      yield* Effect.yieldNow()
      assert.isNull(yield* Fiber.poll(waiter).pipe(Effect.map(Option.getOrNull)))
      yield* registry.update(t.id, { state: "input-required", prompt: "more?" })
      const settled = yield* Fiber.join(waiter)
      assert.strictEqual(settled.state, "input-required")
      assert.strictEqual(settled.prompt, "more?")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5 }))))

  it.effect("a closing registry rejects with the closing reason", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      yield* registry.close()
      const refused = yield* registry.accept(task("a"))
      assert.strictEqual(refused._tag === "Rejected" && refused.reason, "closing")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5 }))))
})

type Op =
  | { readonly op: "accept"; readonly origin: Origin }
  | { readonly op: "start" }
  | { readonly op: "move"; readonly pick: number; readonly to: TaskState }

const states: ReadonlyArray<TaskState> = ["submitted", "working", "input-required", "completed", "failed", "rejected", "canceled"]

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("accept" as const), origin: fc.constantFrom<Origin>("user", "peer", "event", "completion") }),
  fc.record({ op: fc.constant("start" as const) }),
  fc.record({ op: fc.constant("move" as const), pick: fc.nat(50), to: fc.constantFrom(...states) })
)

describe("TaskRegistry invariants (property)", () => {
  it("random operation sequences: only allowed transitions, counts consistent, bounds kept", () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 120 }),
        fc.constantFrom<TaskRegistryConfig["acceptance"]>("single", "queue"),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 5 }),
        (ops, acceptance, maxActive, queueDepth) => {
          const registry = makeRegistry({ acceptance, maxActive, queueDepth, retainTerminal: 1000 })
          const known: Array<string> = []
          const before = new Map<string, TaskState>()
          for (const op of ops) {
            if (op.op === "accept") {
              const result = Effect.runSync(registry.accept(task("x", op.origin)))
              known.push(result.task.id)
            } else if (op.op === "start") {
              Effect.runSync(registry.startNext())
            } else if (known.length > 0) {
              const id = known[op.pick % known.length]!
              const from = Effect.runSync(registry.get(id)).state
              const outcome = Effect.runSync(Effect.either(registry.update(id, { state: op.to })))
              const allowed = from === op.to || canTransition(from, op.to)
              if (Either.isRight(outcome) !== allowed) return false
            }
            // Every recorded state change was allowed; terminal states never change again.
            for (const id of known) {
              const state = Effect.runSync(registry.get(id)).state
              const previous = before.get(id)
              if (previous !== undefined && previous !== state) {
                if (isTerminal(previous)) return false
                if (!canTransition(previous, state)) return false
              }
              before.set(id, state)
            }
            const stats = Effect.runSync(registry.stats())
            const all = known.map((id) => Effect.runSync(registry.get(id)).state)
            const running = all.filter((s) => s === "working" || s === "input-required").length
            const queued = all.filter((s) => s === "submitted").length
            if (stats.active !== running || stats.queued !== queued) return false
            if (acceptance === "queue" && queued > queueDepth) return false
            if (running > maxActive && ops.every((o) => o.op !== "move")) return false
            const live = Effect.runSync(registry.live())
            if (live.length !== running + queued) return false
          }
          return true
        }
      ),
      { numRuns: 300 }
    )
  })
})
