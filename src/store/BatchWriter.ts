/**
 * Writes one journal batch as one transaction: deletions of forgotten tasks first (a message id
 * they free may be taken in the same batch), then tasks, frames and push configs. Over the table
 * stores (PostgreSQL, memory), or, for SQLite, as plain statements run in one synchronous step
 * (`SqliteBatch`): a commit then costs one call, not an Effect per statement.
 */
import { Context, Effect, Layer } from "effect"
import type { StoredPushConfig, StoredTask } from "../services/Journal.js"
import type { Frame } from "../services/TaskEvent.js"
import { FrameStore } from "./FrameStore.js"
import { PushConfigStore } from "./PushConfigStore.js"
import { SqliteBatch, type SqliteStatement } from "./SqliteClient.js"
import { failedTo, type StoreFailed } from "./StoreError.js"
import { StoreTransaction } from "./StoreTransaction.js"
import { taskRow, TaskStore } from "./TaskStore.js"

export interface BatchContent {
  readonly tasks: ReadonlyArray<StoredTask>
  readonly forgotten: ReadonlyArray<string>
  readonly frames: ReadonlyArray<Frame>
  readonly pushPut: ReadonlyArray<StoredPushConfig>
  readonly pushRemove: ReadonlyArray<readonly [taskId: string, configId: string]>
}

export class BatchWriter extends Context.Tag("capsule-runtime/store/BatchWriter")<BatchWriter, {
  readonly write: (sessionId: string, batch: BatchContent) => Effect.Effect<void, StoreFailed>
}>() {
  static readonly layerStores = Layer.effect(
    BatchWriter,
    Effect.gen(function*() {
      const taskStore = yield* TaskStore
      const frameStore = yield* FrameStore
      const pushStore = yield* PushConfigStore
      const transaction = yield* StoreTransaction
      return BatchWriter.of({
        write: (sessionId, batch) =>
          transaction.run(Effect.all([
            taskStore.remove(sessionId, batch.forgotten),
            frameStore.removeTasks(sessionId, batch.forgotten),
            pushStore.remove(sessionId, batch.forgotten.map((taskId) => [taskId, "*"] as const)),
            taskStore.put(sessionId, batch.tasks),
            frameStore.append(sessionId, batch.frames),
            pushStore.remove(sessionId, batch.pushRemove),
            pushStore.put(sessionId, batch.pushPut)
          ], { discard: true }))
      })
    })
  )

  static readonly layerSqlite = Layer.effect(
    BatchWriter,
    Effect.map(SqliteBatch, (sqlite) =>
      BatchWriter.of({
        write: (sessionId, batch) => sqlite.run(statementsOf(sessionId, batch)).pipe(Effect.mapError(failedTo("commit")))
      }))
  )
}

const upsertTask = `INSERT INTO tasks (session_id, id, seq, context_id, state, revision, lane, dialect, origin, message_id, record, bytes, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (session_id, id) DO UPDATE SET state = excluded.state, revision = excluded.revision, record = excluded.record,
  bytes = excluded.bytes, updated_at = excluded.updated_at`
const insertFrame = "INSERT INTO frames (session_id, id, task_id, context_id, event) VALUES (?, ?, ?, ?, ?)"
const upsertPush = `INSERT INTO push_configs (session_id, task_id, config_id, config) VALUES (?, ?, ?, ?)
  ON CONFLICT (session_id, task_id, config_id) DO UPDATE SET config = excluded.config`

const statementsOf = (sessionId: string, batch: BatchContent): Array<SqliteStatement> => {
  const out: Array<SqliteStatement> = []
  for (const taskId of batch.forgotten) {
    out.push(["DELETE FROM tasks WHERE session_id = ? AND id = ?", [sessionId, taskId]])
    out.push(["DELETE FROM frames WHERE session_id = ? AND task_id = ?", [sessionId, taskId]])
    out.push(["DELETE FROM push_configs WHERE session_id = ? AND task_id = ?", [sessionId, taskId]])
  }
  for (const stored of batch.tasks) {
    const row = taskRow(sessionId, stored)
    out.push([upsertTask, [
      row.session_id,
      row.id,
      row.seq,
      row.context_id,
      row.state,
      row.revision,
      row.lane,
      row.dialect,
      row.origin,
      row.message_id,
      row.record,
      row.bytes,
      row.created_at,
      row.updated_at
    ]])
  }
  for (const frame of batch.frames) out.push([insertFrame, [sessionId, frame.id, frame.taskId, frame.contextId, JSON.stringify(frame.event)]])
  for (const [taskId, configId] of batch.pushRemove) {
    out.push(
      configId === "*"
        ? ["DELETE FROM push_configs WHERE session_id = ? AND task_id = ?", [sessionId, taskId]]
        : ["DELETE FROM push_configs WHERE session_id = ? AND task_id = ? AND config_id = ?", [sessionId, taskId, configId]]
    )
  }
  for (const config of batch.pushPut) out.push([upsertPush, [sessionId, config.taskId, config.configId, config.config]])
  return out
}
