/**
 * An `@effect/sql` client for one SQLite file, on `libsql` (a better-sqlite3-compatible binding
 * whose binaries ship as npm packages: nothing compiles at install). The shape follows
 * `@effect/sql-sqlite-node`: one connection, queries serialised by a semaphore, transactions on
 * that connection. `@effect/sql-libsql` was not usable here: its client opens a new connection
 * for every transaction and never closes the old one.
 *
 * The file is opened in WAL mode with `synchronous = NORMAL` (a commit survives a process crash;
 * power loss may take the last commits back), behind a lock file (`./StoreLock.ts`): a second
 * process on the same store is refused at once.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Layer, Scope } from "effect"
import { closeSync, openSync } from "node:fs"
import { createRequire } from "node:module"
import { StoreRefused } from "./StoreError.js"
import { storeLock } from "./StoreLock.js"

/** `PRAGMA application_id` of a capsule-runtime store ("MURM"): a SQLite file without it is someone else's. */
export const applicationId = 0x4d55524d

interface Row {
  readonly [column: string]: unknown
}

interface LibsqlStatement {
  readonly reader: boolean
  all(...params: ReadonlyArray<unknown>): Array<Row>
  run(...params: ReadonlyArray<unknown>): unknown
  raw(on: boolean): LibsqlStatement
}

interface LibsqlDatabase {
  readonly inTransaction: boolean
  prepare(sql: string): LibsqlStatement
  pragma(source: string): Array<Row>
  exec(sql: string): void
  close(): void
}

type LibsqlConstructor = new (path: string) => LibsqlDatabase

// libsql is CommonJS with a native part: loaded on first use, so `--store memory` never loads it.
const loadLibsql = (): LibsqlConstructor => createRequire(import.meta.url)("libsql") as LibsqlConstructor

const refused = (path: string, reason: string) => new StoreRefused({ store: path, reason })

const describe = (cause: unknown): string => {
  const code = (cause as { code?: unknown }).code
  const message = cause instanceof Error ? cause.message : String(cause)
  if (code === "SQLITE_BUSY") return "it is in use by another process (a SQLite store serves one process; use --store postgres://… for several)"
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") return `it is not a capsule-runtime store or is damaged (${message}); it was left as it is`
  return message
}

/**
 * Opens the file, takes its lock and checks that it is ours (an empty file becomes ours). A file
 * that holds another application's tables is refused, never written.
 */
const openDatabase = (path: string): Effect.Effect<LibsqlDatabase, StoreRefused> =>
  Effect.try({
    try: () => {
      const Database = loadLibsql()
      // Created owner-only: the store holds task texts and webhook tokens (the WAL gets the same mode).
      closeSync(openSync(path, "a", 0o600))
      const db = new Database(path)
      try {
        db.pragma("journal_mode = WAL")
        db.pragma("synchronous = NORMAL")
        const id = Number(db.pragma("application_id")[0]?.["application_id"] ?? 0)
        if (id === 0) {
          const tables = Number(db.prepare("SELECT count(*) AS n FROM sqlite_master").all()[0]?.["n"] ?? 0)
          if (tables > 0) throw Object.assign(new Error("the file holds another application's tables"), { code: "SQLITE_NOTADB" })
          db.pragma(`application_id = ${applicationId}`)
        } else if (id !== applicationId) {
          throw Object.assign(new Error(`application_id ${id} is not capsule-runtime's`), { code: "SQLITE_NOTADB" })
        }
        return db
      } catch (error) {
        db.close()
        throw error
      }
    },
    catch: (cause) => refused(path, describe(cause))
  })

/** A statement and its parameters, for `SqliteBatch`. */
export type SqliteStatement = readonly [sql: string, params: ReadonlyArray<unknown>]

/**
 * Runs statements as one transaction in a single synchronous step on the client's connection
 * (the journal's commits: one call instead of an Effect per statement).
 */
export class SqliteBatch extends Context.Tag("capsule-runtime/store/SqliteBatch")<SqliteBatch, {
  readonly run: (statements: ReadonlyArray<SqliteStatement>) => Effect.Effect<void, SqlError>
}>() {}

export class SqliteClient extends Context.Tag("capsule-runtime/store/SqliteClient")<SqliteClient, Client.SqlClient>() {
  /** The client for `path` (created when missing), as this tag, `SqlClient` and `SqliteBatch`. */
  static readonly layer = (path: string): Layer.Layer<SqliteClient | Client.SqlClient | SqliteBatch, StoreRefused> =>
    Layer.scopedContext(Effect.map(make(path), ({ batch, client }) =>
      Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client), Context.add(SqliteBatch, batch)))).pipe(
        Layer.provide(Reactivity.layer)
      )
}

const make = (path: string) =>
  Effect.gen(function*() {
    const compiler = Statement.makeCompilerSqlite()
    yield* storeLock(path)
    const db = yield* Effect.acquireRelease(openDatabase(path), (db) => Effect.sync(() => db.close()))
    const statements = new Map<string, LibsqlStatement>()
    const prepare = (sql: string) => {
      let statement = statements.get(sql)
      if (statement === undefined) {
        statement = db.prepare(sql)
        // Statements are few and fixed (the stores' own); the bound only guards against a bug.
        if (statements.size >= 256) statements.clear()
        statements.set(sql, statement)
      }
      return statement
    }
    const run = (sql: string, params: ReadonlyArray<unknown>, raw = false) =>
      Effect.try({
        try: () => {
          // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL): nothing is left to roll back.
          if (!db.inTransaction && /^\s*ROLLBACK/i.test(sql)) return []
          const statement = prepare(sql)
          if (statement.reader) return statement.raw(raw).all(...params)
          statement.run(...params)
          return []
        },
        catch: (cause) => new SqlError({ cause, message: `Failed to execute statement: ${describe(cause)}` })
      })
    const connection = {
      execute: (sql: string, params: ReadonlyArray<unknown>, transformRows?: (rows: ReadonlyArray<any>) => ReadonlyArray<any>) =>
        transformRows === undefined ? run(sql, params) : Effect.map(run(sql, params), transformRows),
      executeRaw: (sql: string, params: ReadonlyArray<unknown>) => run(sql, params),
      executeValues: (sql: string, params: ReadonlyArray<unknown>) => run(sql, params, true) as unknown as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>,
      executeUnprepared: (sql: string, params: ReadonlyArray<unknown>, transformRows?: (rows: ReadonlyArray<any>) => ReadonlyArray<any>) =>
        transformRows === undefined ? run(sql, params ?? []) : Effect.map(run(sql, params ?? []), transformRows),
      executeStream: () => Effect.dieMessage("executeStream not implemented")
    }
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(Effect.zipRight(restore(semaphore.take(1)), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))), connection)
    )
    const client = yield* Client.make({
      acquirer: acquirer as never,
      compiler,
      transactionAcquirer: transactionAcquirer as never,
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const batch = SqliteBatch.of({
      run: (statements) =>
        semaphore.withPermits(1)(Effect.try({
          try: () => {
            db.exec("BEGIN IMMEDIATE")
            try {
              for (const [sql, params] of statements) prepare(sql).run(...params)
              db.exec("COMMIT")
            } catch (error) {
              if (db.inTransaction) db.exec("ROLLBACK")
              throw error
            }
          },
          catch: (cause) => new SqlError({ cause, message: `Failed to commit: ${describe(cause)}` })
        }))
    })
    return { client, batch }
  })
