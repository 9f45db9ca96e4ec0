/**
 * A session over the store, abandoned without its finalizers (as a killed process leaves it) and
 * started again from the same store, in one process: the memory table stores stand in for the
 * database (the real-process tests with SQLite are in ./KillRestart.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Exit, Layer, Scope, Stream } from "effect"
import { memoryStores, SessionStores, storeLayer } from "../../src/layers/Store.js"
import { freshSchemaUrl, postgresAvailable } from "../lib/Postgres.js"
import { servicesLayer } from "../../src/layers/Session.js"
import { Capsule, type CapsuleFailure, type TaskInput, type TaskIO } from "../../src/services/Capsule.js"
import { echoInfo } from "../../src/services/EchoCapsule.js"
import { EventLog } from "../../src/services/EventLog.js"
import { Journal } from "../../src/services/Journal.js"
import { PushConfigs } from "../../src/services/PushConfigs.js"
import type { Message } from "../../src/services/Task.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { restartedMessage, TaskRunner } from "../../src/services/TaskRunner.js"

let sent = 0
const message = (text: string, messageId = `m-${text}-${++sent}`): Message => ({ role: "user", messageId, parts: [{ kind: "text", text }] })

type Run = (input: TaskInput, io: TaskIO) => Effect.Effect<{ readonly response: string }, CapsuleFailure>

/** The session services for `key` over the stores in context, built in `scope` (closed only when the test says). */
const start = (key: string, run: Run, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const stores = yield* SessionStores
    const claimed = yield* stores.claim({ key, capsuleName: "test", capsuleVersion: "0.1.0", digest: "", options: "{}" })
    const recovered = yield* stores.load(claimed.sessionId)
    const layer = servicesLayer(Layer.succeed(Capsule, Capsule.of({ info: { ...echoInfo, name: "test" }, run })), {
      tasks: { acceptance: "queue", queueDepth: 16, maxActive: 1 },
      journal: stores.journal(claimed.sessionId, recovered)
    })
    const context = yield* Layer.buildWithScope(layer, scope)
    return { sessionId: claimed.sessionId, context }
  })

const submit = (text: string, messageId?: string) =>
  Effect.flatMap(TaskRunner, (runner) => runner.submit({ message: message(text, messageId), provenance: { origin: "user", trust: "trusted" }, dialect: "a2a" }))

const until = <A, E, R>(effect: Effect.Effect<A, E, R>, ok: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 4000; i++) {
      const value = yield* effect
      if (ok(value)) return value
      yield* Effect.sleep(1)
    }
    return assert.fail("condition not reached")
  })

const available = await postgresAvailable()

/** The PostgreSQL store on a schema of its own. */
const postgresStores = Layer.unwrapEffect(Effect.map(Effect.promise(freshSchemaUrl), (url) => storeLayer({ _tag: "Postgres", url })!)).pipe(Layer.orDie)

const suite = (name: string, stores: Layer.Layer<SessionStores>) =>
describe(`a session over the store (${name}), started again`, () => {
  it.live("keeps its id and tasks, fails the running one with a final frame, runs the queued ones in order, and continues the event ids", () =>
    Effect.gen(function*() {
      const blocked = yield* Deferred.make<void>()
      const ran: Array<string> = []
      const run: Run = (input, io) =>
        Effect.gen(function*() {
          ran.push(input.text)
          yield* io.text(`working on ${input.text}`)
          if (input.text === "first") yield* Deferred.await(blocked)
          return { response: `done ${input.text}` }
        })
      // The first life: one task running, two queued, never closed (a kill -9 runs no finalizer).
      const first = yield* start("/capsule", run, yield* Scope.make())
      const accepted = yield* Effect.gen(function*() {
        const a = yield* submit("first")
        const b = yield* submit("second")
        const c = yield* submit("third")
        const registry = yield* TaskRegistry
        yield* until(registry.get(a.task.id), (task) => task.state === "working")
        yield* until(Effect.flatMap(EventLog, (log) => log.lastId()), (id) => id >= 2)
        const push = yield* PushConfigs
        yield* push.put({ taskId: c.task.id, id: "hook", url: "https://hooks.example/c", token: "t0k", version: "1.0" })
        yield* push.put({ taskId: b.task.id, id: "gone", url: "https://hooks.example/b", version: "1.0" })
        yield* push.remove(b.task.id, "gone")
        return [a.task.id, b.task.id, c.task.id]
      }).pipe(Effect.provide(first.context))
      const lastSeen = yield* Effect.provide(Effect.flatMap(EventLog, (log) => log.lastId()), first.context)
      assert.deepStrictEqual(ran, ["first"])

      // The second life, from the same store.
      const second = yield* start("/capsule", run, yield* Scope.make())
      assert.strictEqual(second.sessionId, first.sessionId)
      yield* Effect.gen(function*() {
        // The push configs come back as they were left: the one set, not the one removed.
        const push = yield* PushConfigs
        assert.deepStrictEqual(push.recovered.configs.map((config) => [config.taskId, config.id, config.url, config.token]), [[accepted[2], "hook", "https://hooks.example/c", "t0k"]])
        assert.isAbove(push.recovered.after, 0)
        const registry = yield* TaskRegistry
        const [a, b, c] = accepted as [string, string, string]
        const failed = yield* until(registry.get(a), (task) => task.state === "failed")
        assert.strictEqual(failed.statusMessage, restartedMessage)
        yield* until(registry.get(c), (task) => task.state === "completed")
        assert.strictEqual((yield* registry.get(b)).state, "completed")
        assert.deepStrictEqual(ran, ["first", "second", "third"])
        // Every frame after the last one seen is read back, from the store and then live: ids continue.
        const log = yield* EventLog
        const items = yield* log.subscribe({ after: 0 }).pipe(Stream.takeUntil((item) => item._tag === "Frame" && item.frame.taskId === c && item.frame.event._tag === "Status" && item.frame.event.final), Stream.runCollect)
        const frames = Chunk.toReadonlyArray(items).flatMap((item) => item._tag === "Frame" ? [item.frame] : [])
        assert.isFalse(Chunk.toReadonlyArray(items).some((item) => item._tag === "Gap"), "no gap")
        assert.deepStrictEqual(frames.map((frame) => frame.id), frames.map((_, i) => i + 1), "ids 1, 2, … with no hole or repeat")
        const restarted = frames.find((frame) => frame.taskId === a && frame.event._tag === "Status" && frame.event.final)
        assert.isDefined(restarted)
        assert.isAbove(restarted!.id, lastSeen)
        // The same message again (a client retrying) gets the first task, not a new one.
        const again = yield* submit("second", (yield* registry.get(b)).history[0]!.messageId)
        assert.strictEqual(again._tag === "Accepted" && again.duplicate, true)
        assert.strictEqual(again.task.id, b)
      }).pipe(Effect.provide(second.context))
    }).pipe(Effect.provide(stores)))

  it.live("shows no frame and no state before the store committed them", () =>
    Effect.gen(function*() {
      const stores = yield* SessionStores
      const claimed = yield* stores.claim({ key: "/gated", capsuleName: "test", capsuleVersion: "0.1.0", digest: "", options: "{}" })
      const journalLayer = stores.journal(claimed.sessionId, yield* stores.load(claimed.sessionId))
      const scope = yield* Scope.make()
      const journal = yield* Layer.buildWithScope(journalLayer, scope)
      const log = yield* Effect.provide(EventLog, Layer.provide(EventLog.layer(), Layer.succeedContext(journal)))
      const registry = yield* Effect.provide(TaskRegistry, Layer.provide(TaskRegistry.layer({ acceptance: "queue", queueDepth: 4 }), Layer.succeedContext(journal)))
      const subscription = yield* log.open({ after: 0 }).pipe(Scope.extend(scope))
      const published = yield* log.publish("tsk_x", "ctx_x", { _tag: "Text", text: "one", final: false, turn: 1 })
      // Staged, not committed: no reader has it, and the last id readers may use is still 0.
      assert.deepStrictEqual(subscription.take(), [])
      assert.strictEqual(yield* log.lastId(), 0)
      yield* Effect.flatMap(Journal, (journal) => journal.commit).pipe(Effect.provide(journal))
      assert.deepStrictEqual(subscription.take().map((item) => item._tag === "Frame" ? item.frame.id : -1), [published.id])
      const accepted = yield* registry.accept({ message: message("x"), provenance: { origin: "user", trust: "trusted" }, dialect: "a2a" })
      const loaded = yield* stores.load(claimed.sessionId)
      assert.deepStrictEqual(loaded.tasks.map((stored) => stored.task.id), [accepted.task.id])
      assert.strictEqual(loaded.lastFrameId, published.id)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(stores)))
})

suite("memory tables", memoryStores)
if (available) suite("PostgreSQL", postgresStores)

describe("CapsuleRuntime.layerStore", () => {
  it.effect("opens a SQLite store for a library host, and refuses what is not a store, naming it", () =>
    Effect.gen(function*() {
      const { CapsuleRuntime } = yield* Effect.promise(() => import("../../src/index.js"))
      const path = `${(yield* Effect.promise(() => import("node:fs"))).mkdtempSync("/tmp/layer-store-")}/s.db`
      const stores = yield* Effect.provide(SessionStores, CapsuleRuntime.layerStore(`sqlite:${path}`))
      assert.strictEqual(stores.location, path)
      const refused = yield* Effect.flip(Effect.provide(SessionStores, CapsuleRuntime.layerStore("memory")))
      assert.include(refused.message, "store memory refused")
    }))
})
