/**
 * The sweep of the cluster's own message tables, on PostgreSQL with the tables the cluster
 * creates: processed messages older than the bound go with their replies, a batch at a time;
 * unprocessed ones (a keep-alive still held) and recent ones stay.
 */
import { MachineId, ShardingConfig, Snowflake, SqlMessageStorage } from "@effect/cluster"
import { SqlClient } from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { sweepClusterMessages } from "../../src/fleet/ClusterRetention.js"
import { freshSchemaUrl, postgresAvailable } from "../lib/Postgres.js"

const postgres = await postgresAvailable()

const idAt = (ageMs: number, sequence: number) =>
  Snowflake.make({ timestamp: Date.now() - ageMs, machineId: MachineId.make(1), sequence }).toString()

describe.skipIf(!postgres)("the cluster message sweep", () => {
  it.effect("deletes processed messages older than the bound and their replies, and nothing else", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(freshSchemaUrl)
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        const hour = 60 * 60 * 1000
        const rows = [
          { id: idAt(2 * hour, 1), processed: true },
          { id: idAt(2 * hour, 2), processed: true },
          { id: idAt(2 * hour, 3), processed: true },
          { id: idAt(2 * hour, 4), processed: false },
          { id: idAt(60_000, 5), processed: true }
        ]
        for (const row of rows) {
          yield* sql`INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, processed, request_id)
            VALUES (${row.id}, ${"default:1"}, ${"CapsuleSession"}, ${"ses_x"}, ${0}, ${row.processed}, ${row.id})`
          yield* sql`INSERT INTO cluster_replies (id, kind, request_id, payload) VALUES (${row.id}, ${0}, ${row.id}, ${"{}"})`
        }
        assert.strictEqual(yield* sweepClusterMessages("1 hour", 2), 3)
        const left = (yield* sql<{ readonly id: string }>`SELECT id FROM cluster_messages ORDER BY id`).map((row) => String(row.id))
        assert.deepStrictEqual(left, [rows[3]!.id, rows[4]!.id])
        const replies = (yield* sql<{ readonly request_id: string }>`SELECT request_id FROM cluster_replies ORDER BY request_id`).map((row) => String(row.request_id))
        assert.deepStrictEqual(replies, [rows[3]!.id, rows[4]!.id])
        assert.strictEqual(yield* sweepClusterMessages("1 hour", 2), 0)
      }).pipe(
        Effect.provide(Layer.orDie(SqlMessageStorage.layer).pipe(Layer.provide(ShardingConfig.layerDefaults), Layer.provideMerge(PgClient.layer({ url: Redacted.make(url) })), Layer.orDie)),
        Effect.scoped
      )
    }), 30_000)
})
