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

export interface Placement {
  readonly sessionId: string
  readonly capsuleName: string
  readonly runner: string
  readonly placedAt: string
}

export class SessionStore extends Context.Tag("capsule-runtime/store/SessionStore")<SessionStore, {
  readonly claim: (claim: SessionClaim) => Effect.Effect<ClaimedSession, StoreFailed>
  /** Records that `runner` (a fleet runner's address) now holds the session, and what it serves (`described`, JSON). */
  readonly place: (sessionId: string, runner: string, described: string) => Effect.Effect<void, StoreFailed>
  /** What the session's last owner said it serves (`place`'s `described`); `""` before any. */
  readonly described: (sessionId: string) => Effect.Effect<string, StoreFailed>
  /** Every session with the runner that built it last (`""`: none yet). */
  readonly placement: () => Effect.Effect<ReadonlyArray<Placement>, StoreFailed>
}>() {
  static readonly layerSql = Layer.effect(SessionStore, Effect.map(SqlClient, (sql) => SessionStore.of({
    claim: (claim) =>
      Effect.gen(function*() {
        const now = new Date().toISOString()
        const minted = mintId("ses")
        // Runners of a fleet claim the same keys at once: the first insert wins, the others read it.
        yield* sql`INSERT INTO sessions ${
          sql.insert({
            id: minted,
            key: claim.key,
            capsule_name: claim.capsuleName,
            capsule_version: claim.capsuleVersion,
            digest: claim.digest,
            options: claim.options,
            created_at: now,
            started_at: now
          })
        } ON CONFLICT (key) DO NOTHING`
        const found = yield* sql<{ readonly id: string }>`SELECT id FROM sessions WHERE key = ${claim.key}`
        const sessionId = found[0]?.id ?? minted
        if (sessionId === minted) return { sessionId, resumed: false }
        yield* sql`UPDATE sessions SET capsule_name = ${claim.capsuleName}, capsule_version = ${claim.capsuleVersion}, digest = ${claim.digest},
          options = ${claim.options}, started_at = ${now} WHERE id = ${sessionId}`
        return { sessionId, resumed: true }
      }).pipe(Effect.mapError(failedTo("claim of the session"))),
    place: (sessionId, runner, described) =>
      sql`UPDATE sessions SET runner = ${runner}, placed_at = ${new Date().toISOString()}, described = ${described} WHERE id = ${sessionId}`.pipe(
        Effect.asVoid,
        Effect.mapError(failedTo("write of the session's placement"))
      ),
    described: (sessionId) =>
      sql<{ readonly described: string }>`SELECT described FROM sessions WHERE id = ${sessionId}`.pipe(
        Effect.map((rows) => rows[0]?.described ?? ""),
        Effect.mapError(failedTo("read of sessions"))
      ),
    placement: () =>
      sql<{ readonly id: string; readonly capsule_name: string; readonly runner: string; readonly placed_at: string }>`
        SELECT id, capsule_name, runner, placed_at FROM sessions ORDER BY id`.pipe(
        Effect.map((rows) => rows.map((row) => ({ sessionId: row.id, capsuleName: row.capsule_name, runner: row.runner, placedAt: row.placed_at }))),
        Effect.mapError(failedTo("read of sessions"))
      )
  })))

  static readonly layerMemory = Layer.sync(SessionStore, () => {
    const byKey = new Map<string, string>()
    const placed = new Map<string, Placement & { readonly described: string }>()
    return SessionStore.of({
      place: (sessionId, runner, described) =>
        Effect.sync(() => void placed.set(sessionId, { sessionId, capsuleName: "", runner, placedAt: new Date().toISOString(), described })),
      described: (sessionId) => Effect.sync(() => placed.get(sessionId)?.described ?? ""),
      placement: () => Effect.sync(() => [...byKey.values()].map((sessionId) => placed.get(sessionId) ?? { sessionId, capsuleName: "", runner: "", placedAt: "" })),
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
