import { assert, describe, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql/SqlClient"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer } from "effect"
import { migrate } from "../../src/store/Migrations.js"
import { SqliteClient } from "../../src/store/SqliteClient.js"

const scratch = () => join(mkdtempSync(join(tmpdir(), "store-")), "session.db")
const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex")

const tablesOf = Effect.flatMap(SqlClient, (sql) => sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pipe(
  Effect.map((rows) => rows.map((row) => row.name))
)

describe("the SQLite store", () => {
  it.scoped("migrates an empty file to the current version", () =>
    Effect.gen(function*() {
      const applied = yield* migrate()
      assert.deepStrictEqual(applied.map(([id]) => id), [1, 2, 3])
      assert.deepStrictEqual(yield* tablesOf, ["capsule_runtime_migrations", "delegations", "frames", "push_configs", "sessions", "tasks"])
      // Run again: nothing left to apply.
      assert.deepStrictEqual(yield* migrate(), [])
    }).pipe(Effect.provide(SqliteClient.layer(scratch()))))

  it.effect("upgrades a file of the previous version and keeps its rows", () =>
    Effect.gen(function*() {
      const path = scratch()
      yield* Effect.gen(function*() {
        assert.deepStrictEqual((yield* migrate(1)).map(([id]) => id), [1])
        const sql = yield* SqlClient
        yield* sql`INSERT INTO sessions (id, key, capsule_name, capsule_version, digest, options, created_at, started_at)
          VALUES ('ses_1', '/capsule', 'c', '0.1.0', '', '{}', 'now', 'now')`
        assert.notInclude(yield* tablesOf, "push_configs")
      }).pipe(Effect.scoped, Effect.provide(SqliteClient.layer(path)))
      yield* Effect.gen(function*() {
        assert.deepStrictEqual((yield* migrate()).map(([id]) => id), [2, 3])
        const sql = yield* SqlClient
        assert.deepStrictEqual((yield* sql<{ readonly id: string }>`SELECT id FROM sessions`).map((row) => row.id), ["ses_1"])
        assert.include(yield* tablesOf, "push_configs")
      }).pipe(Effect.scoped, Effect.provide(SqliteClient.layer(path)))
    }))

  it.effect("refuses a second opener of the same file while the first holds it, and frees it when it ends", () =>
    Effect.gen(function*() {
      const path = scratch()
      yield* Effect.gen(function*() {
        yield* migrate()
        const second = yield* Effect.exit(Effect.scoped(Layer.build(SqliteClient.layer(path))))
        assert.isTrue(Exit.isFailure(second))
        const message = String(Exit.isFailure(second) ? (second.cause as { error?: { message?: string } }).error?.message : "")
        assert.include(message, path)
        assert.include(message, `in use by process ${process.pid}`)
      }).pipe(Effect.scoped, Effect.provide(SqliteClient.layer(path)))
      assert.deepStrictEqual(yield* Effect.provide(migrate(), SqliteClient.layer(path)), [])
    }))

  it.effect("takes over the lock a killed process left behind", () =>
    Effect.gen(function*() {
      const path = scratch()
      // A pid no process has: the lock's owner is gone.
      writeFileSync(`${path}.lock`, "2147483646\n")
      assert.deepStrictEqual((yield* Effect.provide(migrate(), SqliteClient.layer(path))).map(([id]) => id), [1, 2, 3])
    }))

  it.effect("refuses a foreign SQLite file and a file that is not SQLite, naming them, and leaves both as they were", () =>
    Effect.gen(function*() {
      const foreign = scratch()
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`PRAGMA application_id = 0`
      }).pipe(Effect.scoped, Effect.provide(SqliteClient.layer(foreign)))
      // Someone else's database: a table and no application id of ours.
      const Database = (yield* Effect.promise(() => import("libsql"))).default as unknown as new (path: string) => { exec(sql: string): void; pragma(s: string): unknown; close(): void }
      const other = new Database(foreign)
      other.pragma("application_id = 0")
      other.exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
      other.close()
      const garbage = scratch()
      writeFileSync(garbage, Buffer.alloc(8192, 7))
      for (const path of [foreign, garbage]) {
        const before = sha(path)
        const exit = yield* Effect.exit(Effect.scoped(Layer.build(SqliteClient.layer(path))))
        assert.isTrue(Exit.isFailure(exit), path)
        const message = String(Exit.isFailure(exit) ? (exit.cause as { error?: { message?: string } }).error?.message : "")
        assert.include(message, path)
        assert.include(message, "not a capsule-runtime store")
        assert.strictEqual(sha(path), before, `${path} was changed`)
      }
    }))
})
