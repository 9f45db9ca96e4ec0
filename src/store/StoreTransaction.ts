/** Runs a group of store writes as one transaction (the SQL store's), or as they come (memory). */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import { failedTo, type StoreFailed } from "./StoreError.js"

export class StoreTransaction extends Context.Tag("capsule-runtime/store/StoreTransaction")<StoreTransaction, {
  readonly run: <A>(writes: Effect.Effect<A, StoreFailed>) => Effect.Effect<A, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(
    StoreTransaction,
    Effect.map(SqlClient, (sql) => ({
      run: <A>(writes: Effect.Effect<A, StoreFailed>) => sql.withTransaction(writes).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(failedTo("commit")(error))))
    }))
  )
  static readonly layerMemory = Layer.succeed(StoreTransaction, { run: (writes) => writes })
}
