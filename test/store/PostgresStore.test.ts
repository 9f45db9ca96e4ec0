/** The store on PostgreSQL: migrations, and a session abandoned and started again from it. */
import { assert, describe, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { migrate } from "../../src/store/Migrations.js"
import { freshSchemaUrl, postgresAvailable } from "../lib/Postgres.js"

const available = await postgresAvailable()

const client = (url: string) => PgClient.layer({ url: Redacted.make(url) })

const tablesOf = Effect.flatMap(SqlClient, (sql) =>
  sql<{ readonly table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`).pipe(
    Effect.map((rows) => rows.map((row) => row.table_name))
  )

describe.skipIf(!available)("the PostgreSQL store", () => {
  it.effect("migrates an empty schema to the current version", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(freshSchemaUrl)
      yield* Effect.gen(function*() {
        assert.deepStrictEqual((yield* migrate()).map(([id]) => id), [1, 2, 3])
        assert.deepStrictEqual(yield* tablesOf, ["capsule_runtime_migrations", "delegations", "frames", "push_configs", "sessions", "tasks"])
        assert.deepStrictEqual(yield* migrate(), [])
      }).pipe(Effect.scoped, Effect.provide(client(url)))
    }))

  it.effect("upgrades a schema of the previous version and keeps its rows", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(freshSchemaUrl)
      yield* Effect.gen(function*() {
        assert.deepStrictEqual((yield* migrate(1)).map(([id]) => id), [1])
        const sql = yield* SqlClient
        yield* sql`INSERT INTO sessions (id, key, capsule_name, capsule_version, digest, options, created_at, started_at)
          VALUES ('ses_1', '/capsule', 'c', '0.1.0', '', '{}', 'now', 'now')`
      }).pipe(Effect.scoped, Effect.provide(client(url)))
      yield* Effect.gen(function*() {
        assert.deepStrictEqual((yield* migrate()).map(([id]) => id), [2, 3])
        const sql = yield* SqlClient
        assert.deepStrictEqual((yield* sql<{ readonly id: string }>`SELECT id FROM sessions`).map((row) => row.id), ["ses_1"])
        assert.include(yield* tablesOf, "push_configs")
      }).pipe(Effect.scoped, Effect.provide(client(url)))
    }))
})
