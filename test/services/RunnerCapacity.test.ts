/**
 * A process's task bound across sessions: two sessions, each allowed four tasks at once, share
 * two runner slots; the third task (of either session) starts only when one of the first two
 * ends, and every slot comes back, whatever way its task ended.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { servicesLayer } from "../../src/layers/Session.js"
import { Capsule, type CapsuleFailure, type TaskInput } from "../../src/services/Capsule.js"
import { echoInfo } from "../../src/services/EchoCapsule.js"
import { RunnerCapacity } from "../../src/services/RunnerCapacity.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"

let sent = 0

/** A capsule whose task `hold-N` waits for gate N, and whose other tasks end at once. */
const gated = (gates: ReadonlyArray<Deferred.Deferred<void>>) =>
  Layer.succeed(Capsule, Capsule.of({
    info: echoInfo,
    run: (input: TaskInput): Effect.Effect<{ readonly response: string }, CapsuleFailure> => {
      const match = /^hold-(\d+)$/.exec(input.text)
      return match === null ? Effect.succeed({ response: "done" }) : Effect.as(Deferred.await(gates[Number(match[1])]!), { response: "released" })
    }
  }))

const session = (gates: ReadonlyArray<Deferred.Deferred<void>>) =>
  Layer.build(servicesLayer(gated(gates), { tasks: { acceptance: "queue", queueDepth: 16, maxActive: 4 } }))

const submit = (context: Effect.Effect.Success<ReturnType<typeof session>>, text: string) =>
  Effect.flatMap(Effect.provide(TaskRunner, context), (runner) =>
    Effect.map(runner.submit({ message: { role: "user", messageId: `m-${++sent}`, parts: [{ kind: "text", text }] }, provenance: { origin: "event", trust: "untrusted" }, dialect: "reference" }), (accepted) => accepted.task.id))

const stateOf = (context: Effect.Effect.Success<ReturnType<typeof session>>, taskId: string) =>
  Effect.flatMap(Effect.provide(TaskRegistry, context), (registry) => Effect.map(registry.get(taskId), (task) => task.state))

const settle = Effect.sleep("50 millis")

describe("RunnerCapacity", () => {
  it.live("bounds the tasks running at once across sessions, and gives every slot back", () =>
    Effect.gen(function*() {
      const gates = yield* Effect.all([Deferred.make<void>(), Deferred.make<void>(), Deferred.make<void>()])
      const first = yield* session(gates)
      const second = yield* session(gates)
      const a = yield* submit(first, "hold-0")
      const b = yield* submit(second, "hold-1")
      yield* settle
      const c = yield* submit(first, "hold-2")
      yield* settle
      assert.deepStrictEqual([yield* stateOf(first, a), yield* stateOf(second, b), yield* stateOf(first, c)], ["working", "working", "submitted"])
      // Session two's task ends: its slot goes to session one's waiting task.
      yield* Deferred.succeed(gates[1]!, undefined)
      yield* settle
      assert.deepStrictEqual([yield* stateOf(second, b), yield* stateOf(first, c)], ["completed", "working"])
      // A cancel gives its slot back too.
      yield* Effect.flatMap(Effect.provide(TaskRunner, first), (runner) => runner.cancel(a))
      const d = yield* submit(second, "quick")
      yield* settle
      assert.strictEqual(yield* stateOf(second, d), "completed")
      yield* Deferred.succeed(gates[2]!, undefined)
      yield* settle
      const e = yield* submit(first, "quick")
      const f = yield* submit(second, "quick")
      yield* settle
      assert.deepStrictEqual([yield* stateOf(first, e), yield* stateOf(second, f)], ["completed", "completed"])
    }).pipe(Effect.scoped, Effect.provide(RunnerCapacity.layer(2))))
})
