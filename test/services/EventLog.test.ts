import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Option, Stream } from "effect"
import * as fc from "fast-check"
import { EventLog, frameBytes, type LogItem, makeEventLog, replayPlan } from "../../src/services/EventLog.js"
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

/** Pulls until the stream ends (it ends at `Closed`, so this never waits once the log is closed). */
const drain = (pull: Effect.Effect<Chunk.Chunk<LogItem>, Option.Option<never>>) =>
  Effect.gen(function*() {
    const items: Array<LogItem> = []
    while (true) {
      const chunk = yield* Effect.option(pull)
      if (Option.isNone(chunk)) return items
      items.push(...Chunk.toReadonlyArray(chunk.value))
    }
  })

const shape = (items: ReadonlyArray<LogItem>) => items.map((item) => item._tag === "Frame" ? item.frame.id : item)

describe("EventLog losses", () => {
  it.effect("a paused subscriber far behind when the log closes gets Lagged with the exact count, then Closed", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const pull = yield* Stream.toPull(log.subscribe({}))
      const first = yield* Effect.fork(pull)
      yield* untilSubscribers(log, 1)
      // Frame 1 goes to the waiting pull, 1024 fill the buffer, 529 are missed; then the session ends.
      yield* publishN(log, 1 + 1024 + 529)
      yield* log.close()
      const items = [...Chunk.toReadonlyArray(yield* Fiber.join(first)), ...(yield* drain(pull))]
      assert.deepStrictEqual(items.slice(-2), [{ _tag: "Lagged", missed: 529 }, { _tag: "Closed" }])
      assert.deepStrictEqual(ids(items), Array.from({ length: 1025 }, (_, i) => i + 1))
    }).pipe(Effect.scoped, Effect.provide(EventLog.layer())))

  it.effect("a task-filtered subscriber counts only its task's missed frames", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const pull = yield* Stream.toPull(log.subscribe({ taskId: "a" }))
      const first = yield* Effect.fork(pull)
      yield* untilSubscribers(log, 1)
      yield* publishN(log, 6, "a")
      yield* publishN(log, 9, "b")
      yield* log.close()
      const items = [...Chunk.toReadonlyArray(yield* Fiber.join(first)), ...(yield* drain(pull))]
      assert.deepStrictEqual(shape(items), [1, 2, 3, { _tag: "Lagged", missed: 3 }, { _tag: "Closed" }])
    }).pipe(Effect.scoped, Effect.provide(EventLog.layer({ subscriberBuffer: 2 }))))
})

type Op = { readonly _tag: "Publish"; readonly n: number; readonly task: "a" | "b" } | { readonly _tag: "Read" }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ _tag: fc.constant("Publish" as const), n: fc.integer({ min: 1, max: 12 }), task: fc.constantFrom("a" as const, "b" as const) }),
  fc.constant({ _tag: "Read" as const })
)

describe("EventLog losses (property)", () => {
  it("received frames + announced missed == emitted, every loss announced in place, before the next frame or Closed", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom<"a" | undefined>(undefined, "a"),
        fc.array(opArb, { maxLength: 40 }),
        (buffer, taskId, ops) =>
          Effect.runPromise(Effect.gen(function*() {
            const log = makeEventLog({ capacity: 16, capacityBytes: Number.POSITIVE_INFINITY, subscriberBuffer: buffer })
            const pull = yield* Stream.toPull(log.subscribe({ taskId }))
            const items: Array<LogItem> = []
            // One pull is always outstanding; a `Read` lets it run and collects it if it finished.
            let outstanding = yield* Effect.fork(pull)
            yield* untilSubscribers(log, 1)
            const relevant: Array<number> = []
            for (const op of ops) {
              if (op._tag === "Publish") {
                for (let i = 0; i < op.n; i++) {
                  const frame = yield* log.publish(op.task, "c", text("x"))
                  if (taskId === undefined || taskId === op.task) relevant.push(frame.id)
                }
              } else {
                for (let i = 0; i < 3; i++) yield* Effect.yieldNow()
                const done = yield* Fiber.poll(outstanding)
                if (Option.isSome(done)) {
                  items.push(...Chunk.toReadonlyArray(yield* done.value))
                  outstanding = yield* Effect.fork(pull)
                }
              }
            }
            yield* log.close()
            items.push(...Chunk.toReadonlyArray(yield* Fiber.join(outstanding)), ...(yield* drain(pull)))

            if (items.at(-1)?._tag !== "Closed") return false
            const got = ids(items)
            const missed = items.reduce((sum, item) => sum + (item._tag === "Lagged" ? item.missed : 0), 0)
            if (got.length + missed !== relevant.length) return false
            // Walking the items: each Lagged covers exactly the relevant ids skipped before the next frame (or the end).
            let next = 0 // index in `relevant` of the next id not yet accounted for
            let pending = 0
            for (const item of items) {
              if (item._tag === "Lagged") {
                if (item.missed <= 0 || pending !== 0) return false
                pending = item.missed
              } else if (item._tag === "Frame") {
                if (relevant.indexOf(item.frame.id) !== next + pending) return false
                next += pending + 1
                pending = 0
              }
            }
            return next + pending === relevant.length
          }).pipe(Effect.scoped))
      ),
      { numRuns: 300 }
    )
  })
})

describe("EventLog replay by bytes", () => {
  const sized = (bytes: number): TaskEvent => ({ _tag: "Text", text: "x".repeat(bytes), final: false, turn: 1 })

  it.effect("evicts the oldest frames past the byte budget; a cursor before them gets a gap", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      for (let i = 0; i < 10; i++) yield* log.publish("t1", "c1", sized(1000))
      const items = Chunk.toReadonlyArray(yield* log.subscribe({ after: 0 }).pipe(Stream.take(4), Stream.runCollect))
      const one = frameBytes({ id: 1, taskId: "t1", contextId: "c1", event: sized(1000) })
      const held = Math.floor(3500 / one)
      assert.strictEqual(held, 3)
      assert.deepStrictEqual(items[0], { _tag: "Gap", firstAvailableId: 10 - held + 1 })
      assert.deepStrictEqual(ids(items), [8, 9, 10])
    }).pipe(Effect.provide(EventLog.layer({ capacityBytes: 3500 }))))

  it.effect("a frame larger than the whole budget is delivered live but not held", () =>
    Effect.gen(function*() {
      const log = yield* EventLog
      const live = yield* log.subscribe({}).pipe(Stream.take(1), Stream.runCollect, Effect.fork)
      yield* untilSubscribers(log, 1)
      yield* log.publish("t1", "c1", sized(5000))
      assert.deepStrictEqual(ids(Chunk.toReadonlyArray(yield* Fiber.join(live))), [1])
      yield* log.close()
      const replay = Chunk.toReadonlyArray(yield* log.subscribe({ after: 0 }).pipe(Stream.runCollect))
      assert.deepStrictEqual(replay, [{ _tag: "Gap", firstAvailableId: 2 }, { _tag: "Closed" }])
    }).pipe(Effect.provide(EventLog.layer({ capacityBytes: 3500 }))))

  it("for any frame sizes: the held frames fit the budget and are the newest that do", () => {
    fc.assert(
      fc.property(fc.integer({ min: 200, max: 5000 }), fc.array(fc.integer({ min: 0, max: 1500 }), { maxLength: 60 }), (budget, lengths) => {
        const log = makeEventLog({ capacity: 16, capacityBytes: budget, subscriberBuffer: 1024 })
        const frames = Effect.runSync(Effect.forEach(lengths, (n) => log.publish("t", "c", sized(n))))
        const items = Effect.runSync(log.close().pipe(Effect.zipRight(log.subscribe({ after: 0 }).pipe(Stream.runCollect)), Effect.map(Chunk.toReadonlyArray)))
        const got = ids(items)
        // The expected suffix: newest first, while it fits both budgets.
        let total = 0
        let from = frames.length
        while (from > 0 && frames.length - from < 16 && total + frameBytes(frames[from - 1]!) <= budget) total += frameBytes(frames[--from]!)
        const expected = frames.slice(from).map((f) => f.id)
        const gap = items.find((item) => item._tag === "Gap")
        return JSON.stringify(got) === JSON.stringify(expected) && (gap !== undefined) === (from > 0)
      }),
      { numRuns: 300 }
    )
  })
})

describe("EventLog replay (property)", () => {
  it("for any push count and cursor: exactly the held frames after it, gap iff evicted or ahead, ids increasing", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 200 }), fc.integer({ min: -1, max: 260 }), (capacity, pushes, rawCursor) => {
        const log = makeEventLog({ capacity, capacityBytes: Number.POSITIVE_INFINITY, subscriberBuffer: 1024 })
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
