/**
 * Tells a session when its shard has left this runner (a runner joined and took it, or this one
 * is stopping). One timer for the whole runner, whatever the number of sessions built on it: a
 * timer per session cost an idle runner of 1 000 sessions most of a core
 * (docs/benchmarks.md, the fleet).
 */
import { Sharding, type ShardId } from "@effect/cluster"
import { Context, Effect, Layer } from "effect"

interface Waiter {
  readonly shardId: ShardId.ShardId
  readonly left: () => void
}

export class ShardWatch extends Context.Tag("capsule-runtime/fleet/ShardWatch")<ShardWatch, {
  /** Completes once this runner no longer holds `shardId` (checked every 200 ms). */
  readonly whenLeft: (shardId: ShardId.ShardId) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.scoped(
    ShardWatch,
    Effect.gen(function*() {
      const sharding = yield* Sharding.Sharding
      const waiters = new Set<Waiter>()
      const pass = Effect.sync(() => {
        for (const waiter of waiters) {
          if (sharding.hasShardId(waiter.shardId)) continue
          waiters.delete(waiter)
          waiter.left()
        }
      })
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep("200 millis"), pass)))
      return ShardWatch.of({
        whenLeft: (shardId) =>
          Effect.async<void>((resume) => {
            const waiter: Waiter = { shardId, left: () => resume(Effect.void) }
            waiters.add(waiter)
            return Effect.sync(() => void waiters.delete(waiter))
          })
      })
    })
  )
}
