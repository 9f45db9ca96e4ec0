/**
 * A gateway's cursor loop over the store: whatever the cursor, the page size, the task filter
 * and however the commits interleave with the reads, the reader gets every committed frame after
 * its cursor once, in id order, and nothing else.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { LogItem } from "../../src/services/EventLog.js"
import type { Frame } from "../../src/services/TaskEvent.js"
import { openStoreFrames } from "../../src/fleet/StoreFrames.js"
import { FrameStore } from "../../src/store/FrameStore.js"

const frame = (id: number, taskId: string): Frame => ({ id, taskId, contextId: "ctx", event: { _tag: "Text", text: `f${id}`, final: false } as Frame["event"] })

/** Takes what is waiting until `count` frames came, waking on `await` as a door's stream does. */
const collect = (subscription: { take: () => Array<LogItem>; await: (wake: () => void) => () => void }, count: number) =>
  Effect.async<Array<number>>((resume) => {
    const got: Array<number> = []
    const step = () => {
      for (const item of subscription.take()) if (item._tag === "Frame") got.push(item.frame.id)
      if (got.length >= count) return resume(Effect.succeed(got))
      subscription.await(step)
    }
    step()
  })

describe("openStoreFrames", () => {
  it.live("hands every committed frame after the cursor once, in order, across commits, pages and filters", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.constantFrom("t1", "t2"), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }),
          fc.nat({ max: 10 }),
          fc.integer({ min: 1, max: 5 }),
          fc.constantFrom(undefined, "t1"),
          async (batches, cursor, pageSize, taskId) => {
            const program = Effect.gen(function*() {
              const store = yield* FrameStore
              let next = 1
              // The first batch is committed before the reader opens; the rest while it reads.
              const commit = (batch: ReadonlyArray<string>) => store.append("ses", batch.map((task) => frame(next++, task)))
              yield* commit(batches[0]!)
              const subscription = yield* openStoreFrames(store, "ses", { after: cursor, taskId }, { pollMs: 1, pageSize })
              const all = batches.flatMap((batch, b) => batch.map((task, i) => ({ id: batches.slice(0, b).reduce((n, x) => n + x.length, 0) + i + 1, task })))
              const expected = all.filter((entry) => entry.id > cursor && (taskId === undefined || entry.task === taskId)).map((entry) => entry.id)
              const reading = yield* Effect.fork(collect(subscription, expected.length))
              for (const batch of batches.slice(1)) {
                yield* Effect.sleep("2 millis")
                yield* commit(batch)
              }
              const got = yield* reading.await.pipe(Effect.flatten, Effect.timeout("5 seconds"))
              // Nothing more arrives after the last expected frame.
              yield* Effect.sleep("10 millis")
              const extra = subscription.take().filter((item) => item._tag === "Frame")
              assert.deepStrictEqual(got, expected)
              assert.deepStrictEqual(extra, [])
            }).pipe(Effect.scoped, Effect.provide(FrameStore.layerMemory))
            await Effect.runPromise(program)
          }
        ),
        { numRuns: 60 }
      )
    ), 60_000)
})
