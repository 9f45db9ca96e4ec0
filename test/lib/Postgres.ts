/**
 * The PostgreSQL the store's tests use: `CAPSULE_RUNTIME_TEST_PG`, else the machine's own server
 * (127.0.0.1:5432, trust auth, database `test`). Each test gets a schema of its own. In CI a
 * missing server fails the run; elsewhere the tests skip with one line saying how to run them.
 */
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Redacted } from "effect"

export const pgBase = process.env["CAPSULE_RUNTIME_TEST_PG"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** Runs one statement on the base database. */
const once = (statement: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.scoped,
      Effect.provide(PgClient.layer({ url: Redacted.make(pgBase), connectTimeout: "3 seconds" })),
      Effect.timeout("5 seconds")
    )
  )

const reachable = (): Promise<boolean> => once("SELECT 1").then(() => true, () => false)

/** Whether the tests can reach PostgreSQL; throws in CI when they cannot. */
export const postgresAvailable = async (): Promise<boolean> => {
  if (await reachable()) return true
  if (process.env["CI"] !== undefined && process.env["CI"] !== "" && process.env["CI"] !== "false") {
    throw new Error(`PostgreSQL is not reachable at ${pgBase}: CI runs the store's Postgres tests against it`)
  }
  // eslint-disable-next-line no-console
  console.log(`skipped: the PostgreSQL store tests (nothing answers at ${pgBase}; start PostgreSQL there or set CAPSULE_RUNTIME_TEST_PG=postgres://…)`)
  return false
}

let schemas = 0

/** A URL whose connections use a new, empty schema. */
export const freshSchemaUrl = async (): Promise<string> => {
  const schema = `capsule_test_${process.pid}_${Date.now()}_${++schemas}`
  await once(`CREATE SCHEMA ${schema}`)
  const url = new URL(pgBase)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return url.toString()
}

let databases = 0

/**
 * A URL of a new, empty database, and how to drop it. A fleet needs a database of its own: the
 * cluster's shard locks are advisory locks, which PostgreSQL keys per database, not per schema,
 * so two fleets in two schemas of one database take each other's shards.
 */
export const freshDatabaseUrl = async (): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const name = `capsule_fleet_${process.pid}_${Date.now()}_${++databases}`
  await once(`CREATE DATABASE ${name}`)
  const url = new URL(pgBase)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => once(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined, () => undefined) }
}
