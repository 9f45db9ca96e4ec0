import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream } from "effect"
import * as fc from "fast-check"
import { EventLog, type LogItem, makeEventLog, replayPlan } from "../../src/services/EventLog.js"
import type { Frame, TaskEvent } from "../../src/services/TaskEvent.js"

const text = (t: string): TaskEvent => ({ _tag: "Text", text: t, final: false, turn: 1 })

const ids = (items: ReadonlyArray<LogItem>) => items.flatMap((item) => item._tag === "Frame" ? [item.frame.id] : [])

/** Yields until the log has `n` subscribers (streams subscribe when they start running). */
const untilSubscribers = (log: EventLog["Type"], n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000 && (yield* log.subscriberCount()) !== n; i++) yield* Effect.yieldNow()
    assert.strictEqual(yield* log.subscriberCount(), n)
  })

const publishN = (log: EventLog["Type"], n: number, taskId = "t1") =>
  Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => log.publish(taskId, "c1", text(`${i}`)))

describe("EventLog", () => {
  it.effect("numbers frames from 1 across tasks", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const a = yield* log.publish("t1", "c1", text("a"))
      const b = yield* log.publish("t2", "c2", text("b"))
      assert.deepStrictEqual([a.id, b.id], [1, 2])
      assert.strictEqual(yield* log.lastId(), 2)
    }).pipe(Effect.provide(EventLog.layer())))

  it.effect("replays exactly the frames after the cursor, then live frames, without duplicates", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      yield* publishN(log, 5)
      const fiber = yield* log.subscribe({ after: 2 }).pipe(Stream.take(6), Stream.runCollect, Effect.fork)
      yield* Effect.yieldNow()
      yield* publishN(log, 3)
      const items = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(ids(items), [3, 4, 5, 6, 7, 8])
    }).pipe(Effect.provide(EventLog.layer())))

  it.effect("sends a gap when the cursor is older than the buffer", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      yield* publishN(log, 10)
      const items = yield* log.subscribe({ after: 1 }).pipe(Stream.take(5), Stream.runCollect)
      const [first, ...rest] = Chunk.toReadonlyArray(items)
      assert.deepStrictEqual(first, { _tag: "Gap", firstAvailableId: 7 })
      assert.deepStrictEqual(ids(rest), [7, 8, 9, 10])
    }).pipe(Effect.provide(EventLog.layer({ capacity: 4 }))))

  it.effect("sends a gap when the cursor is ahead of the sequence (an earlier session's id)", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      yield* publishN(log, 3)
      const items = yield* log.subscribe({ after: 99 }).pipe(Stream.take(4), Stream.runCollect)
      const [first, ...rest] = Chunk.toReadonlyArray(items)
      assert.deepStrictEqual(first, { _tag: "Gap", firstAvailableId: 1 })
      assert.deepStrictEqual(ids(rest), [1, 2, 3])
    }).pipe(Effect.provide(EventLog.layer())))

  it.effect("filters by task", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      yield* log.publish("a", "c", text("1"))
      yield* log.publish("b", "c", text("2"))
      yield* log.publish("a", "c", text("3"))
      const items = yield* log.subscribe({ after: 0, taskId: "a" }).pipe(Stream.take(2), Stream.runCollect)
      assert.deepStrictEqual(ids(Chunk.toReadonlyArray(items)), [1, 3])
    }).pipe(Effect.provide(EventLog.layer())))

  it.effect("tells a slow subscriber how many frames it missed, in place", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const pull = yield* Stream.toPull(log.subscribe({}))
      const first = yield* Effect.fork(pull)
      yield* untilSubscribers(log, 1)
      // One frame goes to the waiting pull, two fill the buffer, two are missed.
      yield* publishN(log, 5)
      const items: Array<LogItem> = [...Chunk.toReadonlyArray(yield* Fiber.join(first))]
      while (items.length < 3) items.push(...Chunk.toReadonlyArray(yield* pull))
      yield* publishN(log, 1)
      while (items.length < 5) items.push(...Chunk.toReadonlyArray(yield* pull))
      assert.deepStrictEqual(items.map((item) => item._tag === "Frame" ? item.frame.id : item), [
        1,
        2,
        3,
        { _tag: "Lagged", missed: 2 },
        6
      ])
    }).pipe(Effect.scoped, Effect.provide(EventLog.layer({ subscriberBuffer: 2 }))))

  it.effect("close ends live subscribers and later ones with Closed", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      yield* publishN(log, 2)
      const live = yield* log.subscribe({}).pipe(Stream.runCollect, Effect.fork)
      yield* Effect.yieldNow()
      yield* log.close()
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(live)), [{ _tag: "Closed" }])
      const late = yield* log.subscribe({ after: 0 }).pipe(Stream.runCollect)
      assert.deepStrictEqual(Chunk.toReadonlyArray(late).map((item) => item._tag), ["Frame", "Frame", "Closed"])
      assert.strictEqual(yield* log.subscriberCount(), 0)
    }).pipe(Effect.provide(EventLog.layer())))

  it.effect("a subscriber that stops reading is removed", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const reader = yield* log.subscribe({}).pipe(Stream.take(1), Stream.runDrain, Effect.fork)
      yield* untilSubscribers(log, 1)
      yield* publishN(log, 1)
      yield* Fiber.join(reader)
      assert.strictEqual(yield* log.subscriberCount(), 0)
    }).pipe(Effect.provide(EventLog.layer())))
})

describe("EventLog replay (property)", () => {
  it("for any push count and cursor: exactly the held frames after it, gap iff evicted or ahead, ids increasing", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 200 }), fc.integer({ min: -1, max: 260 }), (capacity, pushes, rawCursor) => {
        const log = makeEventLog({ capacity, subscriberBuffer: 1024 })
        const frames: Array<Frame> = Effect.runSync(publishN(log, pushes))
        const after = rawCursor < 0 ? undefined : rawCursor
        const items = Effect.runSync(
          log.close().pipe(Effect.zipRight(log.subscribe({ after }).pipe(Stream.runCollect)), Effect.map(Chunk.toReadonlyArray))
        )
        const held = frames.slice(Math.max(0, pushes - capacity))
        const oldest = held[0]?.id ?? pushes + 1
        const got = ids(items)
        for (let i = 1; i < got.length; i++) if (got[i]! <= got[i - 1]!) return false
        const gap = items.find((item) => item._tag === "Gap")
        if (after === undefined) return got.length === 0 && gap === undefined
        const ahead = after >= pushes + 1
        const evicted = after < oldest - 1
        const expectGap = ahead || evicted
        if ((gap !== undefined) !== expectGap) return false
        const expected = expectGap ? held.map((f) => f.id) : held.filter((f) => f.id > after).map((f) => f.id)
        return JSON.stringify(got) === JSON.stringify(expected)
      }),
      { numRuns: 500 }
    )
  })

  it("replayPlan of an empty buffer asks nothing for a cursor at the start", () => {
    assert.deepStrictEqual(replayPlan([], 1, 0), { gap: undefined, frames: [] })
  })
})
