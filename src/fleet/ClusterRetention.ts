/**
 * The cluster keeps every persisted message and its reply forever (upstream has no retention);
 * a fleet writes one each time a session turns busy (its keep-alive). This sweep deletes the
 * processed ones older than `retain`, and their replies, a batch at a time. It runs as a cluster
 * singleton: one runner of the fleet at a time, taken over by another when that one goes.
 * A message's id is a snowflake, whose high bits are its creation time, so age needs no column.
 */
import { MachineId, Snowflake } from "@effect/cluster"
import { SqlClient } from "@effect/sql/SqlClient"
import { Duration, Effect } from "effect"

export interface RetentionSettings {
  /** Processed messages older than this go. */
  readonly retain: Duration.DurationInput
  /** How often the sweep runs. */
  readonly every: Duration.DurationInput
  /** Most messages deleted per statement, so a large backlog never holds one long transaction. */
  readonly batch: number
}

export const defaultRetention: RetentionSettings = { retain: "1 hour", every: "10 minutes", batch: 1_000 }

/** One pass: deletes until nothing old and processed is left; the number of messages deleted. */
export const sweepClusterMessages = (retain: Duration.DurationInput, batch: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const cutoff = Snowflake.make({ timestamp: Date.now() - Duration.toMillis(Duration.decode(retain)), machineId: MachineId.make(0), sequence: 0 })
    let deleted = 0
    while (true) {
      const ids = (yield* sql<{ readonly id: string | number | bigint }>`
        SELECT id FROM cluster_messages WHERE processed = ${true} AND id < ${cutoff.toString()} ORDER BY id LIMIT ${batch}`).map((row) => String(row.id))
      if (ids.length === 0) return deleted
      yield* sql.withTransaction(Effect.zipRight(
        sql`DELETE FROM cluster_replies WHERE ${sql.in("request_id", ids)}`,
        sql`DELETE FROM cluster_messages WHERE ${sql.in("id", ids)}`
      ))
      deleted += ids.length
    }
  })

/** The sweep, forever, every `settings.every`; a failed pass is logged and tried again next time. */
export const clusterRetention = (settings: RetentionSettings = defaultRetention) =>
  sweepClusterMessages(settings.retain, settings.batch).pipe(
    Effect.tap((deleted) => deleted === 0 ? Effect.void : Effect.logInfo("fleet: old cluster messages deleted", { deleted })),
    Effect.catchAll((error) => Effect.logWarning("fleet: cluster messages not swept; trying again later", { error: String(error) })),
    Effect.zipRight(Effect.sleep(Duration.decode(settings.every))),
    Effect.forever
  )
