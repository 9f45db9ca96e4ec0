/** The `push_configs` table: the push-notification configs clients set on their tasks. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import type { StoredPushConfig } from "../services/Journal.js"
import { failedTo, type StoreFailed } from "./StoreError.js"

export class PushConfigStore extends Context.Tag("capsule-runtime/store/PushConfigStore")<PushConfigStore, {
  readonly load: (sessionId: string) => Effect.Effect<ReadonlyArray<StoredPushConfig>, StoreFailed>
  readonly put: (sessionId: string, configs: ReadonlyArray<StoredPushConfig>) => Effect.Effect<void, StoreFailed>
  /** Removes configs by (task, config) pair; a task id alone (config `*`) removes all of the task's. */
  readonly remove: (sessionId: string, keys: ReadonlyArray<readonly [taskId: string, configId: string]>) => Effect.Effect<void, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(PushConfigStore, Effect.map(SqlClient, (sql) => PushConfigStore.of({
    load: (sessionId) =>
      sql<{ readonly task_id: string; readonly config_id: string; readonly config: string }>`
        SELECT task_id, config_id, config FROM push_configs WHERE session_id = ${sessionId} ORDER BY task_id, config_id`.pipe(
        Effect.map((rows) => rows.map((row) => ({ taskId: row.task_id, configId: row.config_id, config: row.config }))),
        Effect.mapError(failedTo("read of push configs"))
      ),
    put: (sessionId, configs) =>
      configs.length === 0 ? Effect.void : sql`INSERT INTO push_configs ${
        sql.insert(configs.map((stored) => ({ session_id: sessionId, task_id: stored.taskId, config_id: stored.configId, config: stored.config })))
      } ON CONFLICT (session_id, task_id, config_id) DO UPDATE SET config = excluded.config`.pipe(Effect.asVoid, Effect.mapError(failedTo("write of push configs"))),
    remove: (sessionId, keys) =>
      Effect.forEach(keys, ([taskId, configId]) =>
        configId === "*"
          ? sql`DELETE FROM push_configs WHERE session_id = ${sessionId} AND task_id = ${taskId}`
          : sql`DELETE FROM push_configs WHERE session_id = ${sessionId} AND task_id = ${taskId} AND config_id = ${configId}`, { discard: true }).pipe(
        Effect.mapError(failedTo("delete of push configs"))
      )
  })))

  static readonly layerMemory = Layer.sync(PushConfigStore, () => {
    const rows = new Map<string, StoredPushConfig & { readonly sessionId: string }>()
    const key = (sessionId: string, taskId: string, configId: string) => JSON.stringify([sessionId, taskId, configId])
    return PushConfigStore.of({
      load: (sessionId) => Effect.sync(() => [...rows.values()].filter((row) => row.sessionId === sessionId).map(({ sessionId: _, ...stored }) => stored)),
      put: (sessionId, configs) => Effect.sync(() => void configs.forEach((stored) => rows.set(key(sessionId, stored.taskId, stored.configId), { ...stored, sessionId }))),
      remove: (sessionId, keys) =>
        Effect.sync(() => {
          for (const [taskId, configId] of keys) {
            for (const [at, row] of rows) {
              if (row.sessionId === sessionId && row.taskId === taskId && (configId === "*" || row.configId === configId)) rows.delete(at)
            }
          }
        })
    })
  })
}
