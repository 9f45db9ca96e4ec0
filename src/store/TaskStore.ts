/** The `tasks` table: every task a session accepted or refused and still keeps, whole. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer, Option } from "effect"
import type { StoredTask } from "../services/Journal.js"
import type { Task } from "../services/Task.js"
import { failedTo, type StoreFailed } from "./StoreError.js"

export class TaskStore extends Context.Tag("capsule-runtime/store/TaskStore")<TaskStore, {
  /** The session's tasks in acceptance order. */
  readonly load: (sessionId: string) => Effect.Effect<ReadonlyArray<StoredTask>, StoreFailed>
  /** One task of the session, as last committed. */
  readonly find: (sessionId: string, taskId: string) => Effect.Effect<Option.Option<Task>, StoreFailed>
  /** Every session with a task not over yet (submitted, working or waiting for input). */
  readonly liveSessions: () => Effect.Effect<ReadonlyArray<string>, StoreFailed>
  /** Writes each task's latest version (inserted, or replacing the one held). */
  readonly put: (sessionId: string, tasks: ReadonlyArray<StoredTask>) => Effect.Effect<void, StoreFailed>
  readonly remove: (sessionId: string, taskIds: ReadonlyArray<string>) => Effect.Effect<void, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(TaskStore, Effect.map(SqlClient, (sql) => TaskStore.of({
    load: (sessionId) =>
      sql<{ readonly record: string; readonly seq: number | string }>`SELECT record, seq FROM tasks WHERE session_id = ${sessionId} ORDER BY seq`.pipe(
        Effect.map((rows) => rows.map((row) => ({ task: JSON.parse(row.record) as Task, seq: Number(row.seq) }))),
        Effect.mapError(failedTo("read of tasks"))
      ),
    find: (sessionId, taskId) =>
      sql<{ readonly record: string }>`SELECT record FROM tasks WHERE session_id = ${sessionId} AND id = ${taskId}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => JSON.parse(row.record) as Task)),
        Effect.mapError(failedTo("read of tasks"))
      ),
    liveSessions: () =>
      sql<{ readonly session_id: string }>`SELECT DISTINCT session_id FROM tasks WHERE state IN ('submitted', 'working', 'input-required')`.pipe(
        Effect.map((rows) => rows.map((row) => row.session_id)),
        Effect.mapError(failedTo("read of tasks"))
      ),
    put: (sessionId, tasks) =>
      tasks.length === 0 ? Effect.void : sql`INSERT INTO tasks ${sql.insert(tasks.map((stored) => taskRow(sessionId, stored)))}
        ON CONFLICT (session_id, id) DO UPDATE SET state = excluded.state, revision = excluded.revision, record = excluded.record,
        bytes = excluded.bytes, updated_at = excluded.updated_at`.pipe(Effect.asVoid, Effect.mapError(failedTo("write of tasks"))),
    remove: (sessionId, taskIds) =>
      taskIds.length === 0 ? Effect.void : sql`DELETE FROM tasks WHERE session_id = ${sessionId} AND ${sql.in("id", taskIds)}`.pipe(
        Effect.asVoid,
        Effect.mapError(failedTo("delete of tasks"))
      )
  })))

  static readonly layerMemory = Layer.sync(TaskStore, () => {
    const sessions = new Map<string, Map<string, StoredTask>>()
    const of = (sessionId: string) => sessions.get(sessionId) ?? sessions.set(sessionId, new Map()).get(sessionId)!
    return TaskStore.of({
      load: (sessionId) => Effect.sync(() => [...of(sessionId).values()].sort((a, b) => a.seq - b.seq)),
      find: (sessionId, taskId) => Effect.sync(() => Option.map(Option.fromNullable(of(sessionId).get(taskId)), (stored) => stored.task)),
      liveSessions: () =>
        Effect.sync(() =>
          [...sessions.entries()].filter(([, tasks]) => [...tasks.values()].some(({ task }) => ["submitted", "working", "input-required"].includes(task.state))).map(([id]) => id)
        ),
      put: (sessionId, tasks) => Effect.sync(() => void tasks.forEach((stored) => of(sessionId).set(stored.task.id, stored))),
      remove: (sessionId, taskIds) => Effect.sync(() => void taskIds.forEach((taskId) => of(sessionId).delete(taskId)))
    })
  })
}

/** A task's row: the columns queried, and the whole record as JSON. */
export const taskRow = (sessionId: string, { seq, task }: StoredTask) => {
  const record = JSON.stringify(task)
  return {
    session_id: sessionId,
    id: task.id,
    seq,
    context_id: task.contextId,
    state: task.state,
    revision: task.revision,
    lane: task.lane,
    dialect: task.dialect,
    origin: task.provenance.origin,
    // Only an accepted task holds its message id: a refused message may be sent again and accepted.
    message_id: task.state === "rejected" ? null : task.history[0]?.messageId ?? null,
    record,
    bytes: record.length,
    created_at: task.timestamp,
    updated_at: task.timestamp
  }
}
