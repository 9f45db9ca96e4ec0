/** The `frames` table: the session's event log, every frame a reader could have seen. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import type { Frame, TaskEvent } from "../services/TaskEvent.js"
import { failedTo, type StoreFailed } from "./StoreError.js"

export class FrameStore extends Context.Tag("capsule-runtime/store/FrameStore")<FrameStore, {
  /** The session's last frame id, 0 before its first. */
  readonly lastId: (sessionId: string) => Effect.Effect<number, StoreFailed>
  /** Frames with `after` < id < `before`, oldest first: the newest `limit` of them. */
  readonly range: (sessionId: string, after: number, before: number, limit: number) => Effect.Effect<ReadonlyArray<Frame>, StoreFailed>
  /** The oldest `limit` frames with an id greater than `after`, in id order: a reader's next page. */
  readonly after: (sessionId: string, after: number, limit: number) => Effect.Effect<ReadonlyArray<Frame>, StoreFailed>
  readonly append: (sessionId: string, frames: ReadonlyArray<Frame>) => Effect.Effect<void, StoreFailed>
  /** Deletes the frames of these tasks (retention forgot them). */
  readonly removeTasks: (sessionId: string, taskIds: ReadonlyArray<string>) => Effect.Effect<void, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(FrameStore, Effect.map(SqlClient, (sql) => FrameStore.of({
    lastId: (sessionId) =>
      sql<{ readonly last: number | string | null }>`SELECT max(id) AS last FROM frames WHERE session_id = ${sessionId}`.pipe(
        Effect.map((rows) => Number(rows[0]?.last ?? 0)),
        Effect.mapError(failedTo("read of frames"))
      ),
    range: (sessionId, after, before, limit) =>
      sql<{ readonly id: number | string; readonly task_id: string; readonly context_id: string; readonly event: string }>`
        SELECT id, task_id, context_id, event FROM frames
        WHERE session_id = ${sessionId} AND id > ${after} AND id < ${before} ORDER BY id DESC LIMIT ${limit}`.pipe(
        Effect.map((rows) =>
          rows.map((row): Frame => ({ id: Number(row.id), taskId: row.task_id, contextId: row.context_id, event: JSON.parse(row.event) as TaskEvent })).reverse()
        ),
        Effect.mapError(failedTo("read of frames"))
      ),
    after: (sessionId, after, limit) =>
      sql<{ readonly id: number | string; readonly task_id: string; readonly context_id: string; readonly event: string }>`
        SELECT id, task_id, context_id, event FROM frames
        WHERE session_id = ${sessionId} AND id > ${after} ORDER BY id LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map((row): Frame => ({ id: Number(row.id), taskId: row.task_id, contextId: row.context_id, event: JSON.parse(row.event) as TaskEvent }))),
        Effect.mapError(failedTo("read of frames"))
      ),
    append: (sessionId, frames) =>
      frames.length === 0 ? Effect.void : sql`INSERT INTO frames ${
        sql.insert(frames.map((frame) => ({
          session_id: sessionId,
          id: frame.id,
          task_id: frame.taskId,
          context_id: frame.contextId,
          event: JSON.stringify(frame.event)
        })))
      }`.pipe(Effect.asVoid, Effect.mapError(failedTo("write of frames"))),
    removeTasks: (sessionId, taskIds) =>
      taskIds.length === 0 ? Effect.void : sql`DELETE FROM frames WHERE session_id = ${sessionId} AND ${sql.in("task_id", taskIds)}`.pipe(
        Effect.asVoid,
        Effect.mapError(failedTo("delete of frames"))
      )
  })))

  static readonly layerMemory = Layer.sync(FrameStore, () => {
    const sessions = new Map<string, Array<Frame>>()
    const of = (sessionId: string) => sessions.get(sessionId) ?? sessions.set(sessionId, []).get(sessionId)!
    return FrameStore.of({
      lastId: (sessionId) => Effect.sync(() => of(sessionId).at(-1)?.id ?? 0),
      range: (sessionId, after, before, limit) => Effect.sync(() => of(sessionId).filter((frame) => frame.id > after && frame.id < before).slice(-limit)),
      after: (sessionId, after, limit) => Effect.sync(() => of(sessionId).filter((frame) => frame.id > after).slice(0, limit)),
      append: (sessionId, frames) => Effect.sync(() => void of(sessionId).push(...frames.map(({ wire: _, ...frame }) => frame))),
      removeTasks: (sessionId, taskIds) =>
        Effect.sync(() => {
          const gone = new Set(taskIds)
          sessions.set(sessionId, of(sessionId).filter((frame) => !gone.has(frame.taskId)))
        })
    })
  })
}
