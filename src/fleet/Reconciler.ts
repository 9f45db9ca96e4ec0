/**
 * Wakes the sessions this runner should be running: those whose shard it holds, that have a task
 * not over yet in the store, and that are not built here. A session handed off by a runner that
 * joined or stopped, or whose runner died, is built by its next owner this way within one pass,
 * whether or not a client calls it (the entity's persisted keep-alive does the same after a
 * crash; this also covers a hand-off, which ends the keep-alive).
 */
import { EntityId, Sharding } from "@effect/cluster"
import { Duration, Effect } from "effect"
import { TaskStore } from "../store/TaskStore.js"
import { FleetSessions } from "./FleetSessions.js"
import { LocalSessions } from "./LocalSessions.js"
import { SessionEntity } from "./SessionEntity.js"

export const reconcile = (every: Duration.DurationInput) =>
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const sessions = yield* FleetSessions
    const local = yield* LocalSessions
    const tasks = yield* TaskStore
    const client = yield* SessionEntity.client
    const pass = Effect.gen(function*() {
      const live = yield* tasks.liveSessions()
      const waking = live.filter((sessionId) =>
        sessions.get(sessionId) !== undefined && local.get(sessionId) === undefined &&
        sharding.hasShardId(sharding.getShardId(EntityId.make(sessionId), "default"))
      )
      // Asking what the session is builds it here; the answer itself is not needed.
      yield* Effect.forEach(waking, (sessionId) => Effect.ignore(client(sessionId).Describe()), { concurrency: 8, discard: true })
    }).pipe(Effect.catchAll((error) => Effect.logWarning("fleet: live sessions not read; trying again", { error: error.message })))
    return yield* pass.pipe(Effect.zipRight(Effect.sleep(Duration.decode(every))), Effect.forever)
  })
