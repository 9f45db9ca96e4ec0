import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Fiber, Option, Stream } from "effect"
import * as fc from "fast-check"
import { canTransition, isTerminal, type Message, type Origin, type TaskState } from "../../src/services/Task.js"
import { makeRegistry, taskBytes, TaskRegistry, type TaskRegistryConfig } from "../../src/services/TaskRegistry.js"

// Each message its own id: a second submit of one id returns the first task (idempotent submit).
let sent = 0
const message = (text: string): Message => ({ role: "user", messageId: `m-${text}-${++sent}`, parts: [{ kind: "text", text }] })

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

/** An accepted task whose message holds `size` characters (and a short id). */
const sizedTask = (registry: TaskRegistry["Type"], size: number) =>
  Effect.map(registry.accept({ ...task("s"), message: { ...message("s"), parts: [{ kind: "text", text: "s".repeat(size) }] } }), (a) => {
    assert.strictEqual(a._tag, "Accepted")
    return a.task
  })

describe("TaskRegistry", () => {
  it.scoped("changes: the task that changed last first, then every acceptance and transition in order", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const first = yield* accepted(registry, "a")
      yield* registry.startNext()
      // The first element (the last change) comes once the stream has subscribed.
      const subscribed = yield* Deferred.make<void>()
      const seen = yield* registry.changes.pipe(Stream.tap(() => Deferred.succeed(subscribed, void 0)), Stream.take(4), Stream.runCollect, Effect.fork)
      yield* Deferred.await(subscribed)
      const second = yield* accepted(registry, "b")
      yield* registry.update(first.id, { state: "completed" })
      yield* registry.startNext()
      const states = Chunk.toReadonlyArray(yield* Fiber.join(seen)).map((t) => [t.id, t.state])
      assert.deepStrictEqual(states, [[first.id, "working"], [second.id, "submitted"], [first.id, "completed"], [second.id, "working"]])
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5 }))))

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

  it.effect("a message id accepted before gets its first task back, whatever its state; a refused one may be sent again", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const first = yield* registry.accept(task("a"))
      const running = yield* registry.startNext()
      assert.isTrue(Option.isSome(running))
      const again = yield* registry.accept({ ...task("a again"), message: first.task.history[0]! })
      assert.deepStrictEqual([again._tag, again.task.id, again._tag === "Accepted" && again.duplicate], ["Accepted", first.task.id, true])
      assert.strictEqual(again.task.state, "working")
      const other = yield* registry.accept(task("b"))
      const refused = yield* registry.accept(task("c"))
      assert.strictEqual(refused._tag, "Rejected")
      yield* registry.update(first.task.id, { state: "completed" })
      assert.strictEqual(Option.getOrThrow(yield* registry.startNext()).id, other.task.id)
      const retried = yield* registry.accept({ ...task("c"), message: refused.task.history[0]! })
      assert.deepStrictEqual([retried._tag, retried._tag === "Accepted" && retried.duplicate === true], ["Accepted", false])
      assert.notStrictEqual(retried.task.id, refused.task.id)
      assert.strictEqual((yield* registry.stats()).queued, 1)
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 1 }))))

  it.live("finished tasks older than the age bound are forgotten as others finish; live ones never", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const old = yield* registry.accept(task("old"))
      const live = yield* registry.accept(task("live"))
      yield* registry.update(old.task.id, { state: "canceled" })
      yield* Effect.sleep(40)
      const next = yield* registry.accept(task("next"))
      yield* registry.update(next.task.id, { state: "canceled" })
      assert.isTrue(Either.isLeft(yield* Effect.either(registry.get(old.task.id))), "the old finished task is forgotten")
      assert.strictEqual((yield* registry.get(next.task.id)).state, "canceled")
      assert.strictEqual((yield* registry.get(live.task.id)).state, "submitted")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5, retainAgeMs: 30 }))))

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

  it.effect("max_active 2: a parked task gives its slot to a queued one; its input takes the next free slot ahead of queued tasks", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const [a, b, c, d] = [yield* accepted(registry, "a"), yield* accepted(registry, "b"), yield* accepted(registry, "c"), yield* accepted(registry, "d")]
      yield* registry.startNext()
      yield* registry.startNext()
      yield* registry.update(a.id, { state: "input-required" })
      assert.strictEqual(Option.getOrThrow(yield* registry.startNext()).id, c.id)
      assert.isTrue(Option.isNone(yield* registry.startNext()), "b and c hold both slots")
      // a's input comes while both slots are taken: it is working again but waits for a slot.
      yield* registry.update(a.id, { state: "working" })
      const waiting = yield* Effect.fork(registry.awaitSlot(a.id))
      assert.deepInclude(yield* registry.stats(), { active: 2, parked: 1, queued: 1 })
      yield* registry.update(c.id, { state: "completed" })
      yield* Fiber.join(waiting)
      assert.deepInclude(yield* registry.stats(), { active: 2, parked: 0, queued: 1 })
      assert.isTrue(Option.isNone(yield* registry.startNext()), "the freed slot went to a, not to d")
      yield* registry.update(b.id, { state: "completed" })
      assert.strictEqual(Option.getOrThrow(yield* registry.startNext()).id, d.id)
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 10, maxActive: 2 }))))

  it.effect("max_active 1: a parked task keeps its slot (the next task would share its workdir)", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const a = yield* accepted(registry, "a")
      yield* accepted(registry, "b")
      yield* registry.startNext()
      yield* registry.update(a.id, { state: "input-required" })
      assert.isTrue(Option.isNone(yield* registry.startNext()))
      assert.deepInclude(yield* registry.stats(), { active: 1, parked: 0, inputHeld: 1, queued: 1 })
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 10, maxActive: 1 }))))

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

  it.effect("keeps finished tasks within retainBytes, forgetting the oldest; live tasks are never forgotten", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      // A live task far over the budget on its own.
      const big = yield* sizedTask(registry, 50_000)
      yield* registry.startNext()
      const ids: Array<string> = []
      for (let i = 0; i < 10; i++) {
        const t = yield* sizedTask(registry, 3_000)
        yield* registry.startNext()
        const done = yield* registry.update(t.id, { state: "completed", response: "r".repeat(1_000) })
        assert.isAbove(taskBytes(done), 4_000)
        ids.push(t.id)
      }
      const stats = yield* registry.stats()
      assert.isAtMost(stats.retainedBytes, 10_000)
      // Two finished tasks of about 4.6 KB fit in 10 KB, a third does not.
      for (const id of ids.slice(0, 8)) assert.strictEqual((yield* Effect.flip(registry.get(id)))._tag, "TaskNotFound")
      for (const id of ids.slice(8)) assert.strictEqual((yield* registry.get(id)).state, "completed")
      assert.strictEqual((yield* registry.get(big.id)).state, "working")
      // Finishing the big task forgets it at once (it alone is over the budget), and nothing else.
      yield* registry.update(big.id, { state: "completed" })
      assert.strictEqual((yield* Effect.flip(registry.get(big.id)))._tag, "TaskNotFound")
      for (const id of ids.slice(8)) assert.strictEqual((yield* registry.get(id)).state, "completed")
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5, maxActive: 5, retainBytes: 10_000 }))))

  it.effect("a finished task that grows afterwards is charged again", () =>
    Effect.gen(function*() {
      const registry = yield* TaskRegistry
      const t = yield* accepted(registry, "a")
      yield* registry.startNext()
      const done = yield* registry.update(t.id, { state: "completed" })
      assert.strictEqual((yield* registry.stats()).retainedBytes, taskBytes(done))
      const grown = yield* registry.update(t.id, { addArtifact: { artifactId: "x", name: "residue", parts: [{ kind: "text", text: "z".repeat(500) }] } })
      assert.strictEqual((yield* registry.stats()).retainedBytes, taskBytes(grown))
    }).pipe(Effect.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 5 }))))

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
          const registry = Effect.runSync(makeRegistry({ acceptance, maxActive, queueDepth, retainTerminal: 1000, retainBytes: Number.POSITIVE_INFINITY, retainAgeMs: Number.POSITIVE_INFINITY }))
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
            // A parked task gives its slot back only when more than one may run at once.
            if (stats.active + stats.parked !== running || stats.queued !== queued) return false
            if (maxActive === 1 && stats.parked !== 0) return false
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

type SizedOp =
  | { readonly op: "accept"; readonly size: number }
  | { readonly op: "start" }
  | { readonly op: "finish"; readonly pick: number; readonly response: number }

const sizedOpArb: fc.Arbitrary<SizedOp> = fc.oneof(
  fc.record({ op: fc.constant("accept" as const), size: fc.integer({ min: 0, max: 3_000 }) }),
  fc.record({ op: fc.constant("start" as const) }),
  fc.record({ op: fc.constant("finish" as const), pick: fc.nat(50), response: fc.integer({ min: 0, max: 3_000 }) })
)

describe("TaskRegistry retention by bytes (property)", () => {
  it("finished tasks held fit the budget, are the newest finished that do, and live tasks are all kept", () => {
    fc.assert(
      fc.property(fc.array(sizedOpArb, { maxLength: 80 }), fc.integer({ min: 0, max: 12_000 }), (ops, budget) => {
        const registry = Effect.runSync(makeRegistry({ acceptance: "queue", maxActive: 3, queueDepth: 6, retainTerminal: 1000, retainBytes: budget, retainAgeMs: Number.POSITIVE_INFINITY }))
        const live = new Set<string>()
        const finishedOrder: Array<{ readonly id: string; readonly bytes: number }> = []
        for (const op of ops) {
          if (op.op === "accept") {
            const result = Effect.runSync(registry.accept({ ...task("x"), message: { ...message("x"), parts: [{ kind: "text", text: "x".repeat(op.size) }] } }))
            if (result._tag === "Accepted") live.add(result.task.id)
            else finishedOrder.push({ id: result.task.id, bytes: taskBytes(result.task) })
          } else if (op.op === "start") {
            Effect.runSync(registry.startNext())
          } else {
            const working = [...live].filter((id) => Effect.runSync(registry.get(id)).state === "working")
            if (working.length === 0) continue
            const id = working[op.pick % working.length]!
            const done = Effect.runSync(registry.update(id, { state: "completed", response: "r".repeat(op.response) }))
            live.delete(id)
            finishedOrder.push({ id, bytes: taskBytes(done) })
          }
          for (const id of live) if (Either.isLeft(Effect.runSync(Effect.either(registry.get(id))))) return false
          // Expected: the longest suffix of finished tasks (newest first) within the budget,
          // leaving out those over the budget on their own.
          const fitting = finishedOrder.filter((t) => t.bytes <= budget)
          let total = 0
          let from = fitting.length
          while (from > 0 && total + fitting[from - 1]!.bytes <= budget) total += fitting[--from]!.bytes
          const held = finishedOrder.filter(({ id }) => Either.isRight(Effect.runSync(Effect.either(registry.get(id)))))
          if (JSON.stringify(held.map((t) => t.id)) !== JSON.stringify(fitting.slice(from).map((t) => t.id))) return false
          if (Effect.runSync(registry.stats()).retainedBytes !== total) return false
        }
        return true
      }),
      { numRuns: 300 }
    )
  })
})
