/**
 * Composition only: the store a process keeps its sessions in, from `--store`. The embedded
 * default is one SQLite file per capsule directory under `$MURMUR_HOME/runtime/`; PostgreSQL is
 * for several processes; `memory` keeps nothing (today's behaviour before the store, for
 * benchmarks and throwaway runs). Migrations run when the store opens.
 */
import { PgClient } from "@effect/sql-pg"
import { createHash } from "node:crypto"
import { mkdirSync, realpathSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { Effect, Either, Layer, Redacted } from "effect"
import { FrameStore } from "../store/FrameStore.js"
import { migrate } from "../store/Migrations.js"
import { PushConfigStore } from "../store/PushConfigStore.js"
import { SessionStores } from "../store/SessionStores.js"
import { SessionStore } from "../store/SessionStore.js"
import { SqliteClient } from "../store/SqliteClient.js"
import { BatchWriter } from "../store/BatchWriter.js"
import { StoreFailed, StoreRefused } from "../store/StoreError.js"
import { StoreTransaction } from "../store/StoreTransaction.js"
import { TaskStore } from "../store/TaskStore.js"

export { SessionStores } from "../store/SessionStores.js"
export { StoreFailed, StoreRefused } from "../store/StoreError.js"

export type StoreSpec =
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Sqlite"; readonly path: string }
  | { readonly _tag: "Postgres"; readonly url: string }
  /** The embedded default: a SQLite file for the capsule directory under the murmur home. */
  | { readonly _tag: "Default" }

/** `--store`'s value: `memory`, `sqlite:<path>`, `postgres://…` / `postgresql://…`. */
export const parseStore = (text: string): Either.Either<StoreSpec, string> => {
  if (text === "memory") return Either.right({ _tag: "Memory" })
  if (text.startsWith("sqlite:") && text.length > "sqlite:".length) return Either.right({ _tag: "Sqlite", path: text.slice("sqlite:".length) })
  if (/^postgres(ql)?:\/\//.test(text)) return Either.right({ _tag: "Postgres", url: text })
  return Either.left(`'${text}' is not a store: use memory, sqlite:<path> or postgres://…`)
}

/** The default SQLite file of a capsule directory: `<home>/runtime/<name>-<hash of its real path>.db`. */
export const defaultStorePath = (home: string, directory: string): string => {
  const real = realpathSync(directory)
  const hash = createHash("sha256").update(real).digest("hex").slice(0, 12)
  return join(home, "runtime", `${basename(real).replace(/[^A-Za-z0-9._-]/g, "_")}-${hash}.db`)
}

/** A URL fit for messages: the password left out. */
const shown = (url: string) => url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@")

const tables = Layer.mergeAll(TaskStore.layerSql, FrameStore.layerSql, PushConfigStore.layerSql, SessionStore.layerSql, StoreTransaction.layerSql)

const sqlStores = <Client, E, R>(
  client: Layer.Layer<Client, E, R>,
  location: string,
  writer: Layer.Layer<BatchWriter, never, NoInfer<Client> | TaskStore | FrameStore | PushConfigStore | StoreTransaction>
) =>
  SessionStores.layer(location).pipe(
    Layer.provideMerge(writer),
    Layer.provideMerge(tables),
    Layer.provide(Layer.effectDiscard(migrate())),
    Layer.provideMerge(client)
  )

/** The process's store; `undefined` for `memory` (nothing durable, nothing loaded). */
export const storeLayer = (spec: Exclude<StoreSpec, { readonly _tag: "Default" }>): Layer.Layer<SessionStores, StoreRefused | StoreFailed> | undefined => {
  switch (spec._tag) {
    case "Memory":
      return undefined
    case "Sqlite": {
      const made = Effect.try({
        try: () => mkdirSync(dirname(spec.path), { recursive: true, mode: 0o700 }),
        catch: (cause) => new StoreRefused({ store: spec.path, reason: `its directory cannot be made: ${String(cause)}` })
      })
      return sqlStores(SqliteClient.layer(spec.path), spec.path, BatchWriter.layerSqlite).pipe(Layer.provide(Layer.effectDiscard(made)))
    }
    case "Postgres":
      return postgresStores(spec.url)
  }
}

/** Every table store in memory: a store that lasts as long as the process (tests of a restart in-process). */
export const memoryStores: Layer.Layer<SessionStores> = SessionStores.layer("memory").pipe(
  Layer.provideMerge(BatchWriter.layerStores),
  Layer.provideMerge(Layer.mergeAll(TaskStore.layerMemory, FrameStore.layerMemory, PushConfigStore.layerMemory, SessionStore.layerMemory, StoreTransaction.layerMemory))
)


/**
 * A PostgreSQL store: for `--store postgres://…`, and a fleet's store, whose client the
 * cluster's own tables use too, with the table stores a gateway reads a session another runner
 * owns from.
 */
export const postgresStores = (url: string) =>
  sqlStores(
    PgClient.layer({ url: Redacted.make(url) }).pipe(
      Layer.catchAll((error) => Layer.fail(new StoreRefused({ store: shown(url), reason: `cannot connect: ${error.message}` })))
    ),
    shown(url),
    BatchWriter.layerStores
  )
