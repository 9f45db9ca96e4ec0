/**
 * The `sessions` table: which session serves a capsule directory. A directory served again with
 * the same store gets the same session id back, so its card, its tasks and its event ids carry on.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, Effect, Layer } from "effect"
import { mintId } from "../services/Ids.js"
import { failedTo, type StoreFailed } from "./StoreError.js"

export interface SessionClaim {
  /** What identifies the session across restarts: the capsule directory's real path (and record store). */
  readonly key: string
  readonly capsuleName: string
  readonly capsuleVersion: string
  readonly digest: string
  /** The options it was started with, as JSON (for operators; not read back). */
  readonly options: string
}

export interface ClaimedSession {
  readonly sessionId: string
  /** The store held this session already: it starts again rather than anew. */
  readonly resumed: boolean
}

export class SessionStore extends Context.Tag("capsule-runtime/store/SessionStore")<SessionStore, {
  readonly claim: (claim: SessionClaim) => Effect.Effect<ClaimedSession, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(SessionStore, Effect.map(SqlClient, (sql) => SessionStore.of({
    claim: (claim) =>
      Effect.gen(function*() {
        const now = new Date().toISOString()
        const found = yield* sql<{ readonly id: string }>`SELECT id FROM sessions WHERE key = ${claim.key}`
        if (found[0] !== undefined) {
          yield* sql`UPDATE sessions SET capsule_name = ${claim.capsuleName}, capsule_version = ${claim.capsuleVersion}, digest = ${claim.digest},
            options = ${claim.options}, started_at = ${now} WHERE id = ${found[0].id}`
          return { sessionId: found[0].id, resumed: true }
        }
        const sessionId = mintId("ses")
        yield* sql`INSERT INTO sessions ${
          sql.insert({
            id: sessionId,
            key: claim.key,
            capsule_name: claim.capsuleName,
            capsule_version: claim.capsuleVersion,
            digest: claim.digest,
            options: claim.options,
            created_at: now,
            started_at: now
          })
        }`
        return { sessionId, resumed: false }
      }).pipe(Effect.mapError(failedTo("claim of the session")))
  })))

  static readonly layerMemory = Layer.sync(SessionStore, () => {
    const byKey = new Map<string, string>()
    return SessionStore.of({
      claim: (claim) =>
        Effect.sync(() => {
          const known = byKey.get(claim.key)
          if (known !== undefined) return { sessionId: known, resumed: true }
          const sessionId = mintId("ses")
          byKey.set(claim.key, sessionId)
          return { sessionId, resumed: false }
        })
    })
  })
}
