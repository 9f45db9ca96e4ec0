import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Fiber, Stream } from "effect"
import { DelegationTracker } from "../../src/services/DelegationTracker.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"
import { makeLiveSet } from "../../src/services/Residue.js"

describe("Residue", () => {
  it.effect("a live set lists by id and tells every change, starting from what is live now", () =>
    Effect.gen(function*() {
      const set = yield* makeLiveSet<string>()
      yield* set.add("b", "B")
      const subscribed = yield* Deferred.make<void>()
      const seen = yield* set.changes.pipe(Stream.tap(() => Deferred.succeed(subscribed, void 0)), Stream.take(4), Stream.runCollect, Effect.fork)
      yield* Deferred.await(subscribed)
      yield* set.add("a", "A")
      assert.isTrue(yield* set.remove("b"))
      assert.isFalse(yield* set.remove("b"))
      yield* set.remove("a")
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(seen)).map((items) => [...items.keys()].sort()), [["b"], ["a", "b"], ["a"], []])
      assert.deepStrictEqual(yield* set.list(), [])
    }))

  it.effect("DetachedRegistry and DelegationTracker keep their live items in one, sorted by id", () =>
    Effect.gen(function*() {
      const detached = yield* DetachedRegistry
      const tracker = yield* DelegationTracker
      const work = yield* detached.record({ binary: "sleep", command: "600" })
      yield* tracker.record({ delegation_id: "dlg_b", capsule: "c", version: "1", child_session_id: "ses_b", child_workdir: "b" })
      yield* tracker.record({ delegation_id: "dlg_a", capsule: "c", version: "1", child_session_id: "ses_a", child_workdir: "a" })
      assert.deepStrictEqual((yield* tracker.list()).map((d) => d.delegation_id), ["dlg_a", "dlg_b"])
      assert.deepStrictEqual([...(yield* Stream.runHead(detached.changes)).pipe((o) => o._tag === "Some" ? o.value.keys() : [])], [work.work_id])
      assert.isTrue(yield* detached.remove(work.work_id))
      assert.deepStrictEqual(yield* detached.list(), [])
    }).pipe(Effect.provide([DetachedRegistry.layer, DelegationTracker.layer])))
})
