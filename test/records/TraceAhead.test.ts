import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either } from "effect"
import { traceAhead } from "../../src/records/TraceAhead.js"

describe("TraceAhead", () => {
  it.effect("lines started ahead are written in the order they were started, while the caller goes on", () =>
    Effect.gen(function*() {
      const lines = traceAhead<string>()
      const written: Array<string> = []
      const gate = yield* Deferred.make<void>()
      const first = yield* lines.ahead(Effect.zipRight(Deferred.await(gate), Effect.sync(() => written.push("first"))))
      const second = yield* lines.ahead(Effect.sync(() => written.push("second")))
      // Neither is written yet: the first waits for its gate, the second for the first.
      yield* Effect.yieldNow()
      assert.deepStrictEqual(written, [])
      yield* Deferred.succeed(gate, void 0)
      yield* lines.settled
      assert.deepStrictEqual(written, ["first", "second"])
      assert.strictEqual(yield* first, 1)
      assert.strictEqual(yield* second, 2)
    }))

  it.effect("a failed line fails every later line and `settled`", () =>
    Effect.gen(function*() {
      const lines = traceAhead<string>()
      yield* lines.ahead(Effect.fail("disk full"))
      const later = yield* lines.ahead(Effect.succeed("later"))
      assert.deepStrictEqual(yield* Effect.either(later), Either.left("disk full"))
      assert.deepStrictEqual(yield* Effect.either(lines.settled), Either.left("disk full"))
    }))

  it.effect("with nothing started, `settled` is done at once", () => traceAhead<never>().settled)
})
