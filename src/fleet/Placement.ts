/**
 * The fleet as an operator sees it, read-only: the runners the cluster knows (address, health,
 * last heartbeat) and each session with the runner that built it last. Read from the shared
 * database, so every runner answers the same; a session whose runner died shows that runner
 * until the next owner builds it (the runner's `healthy` and heartbeat say which case it is).
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { SessionStore } from "../store/SessionStore.js"
import { LocalSessions } from "./LocalSessions.js"

export interface RunnerRow {
  readonly address: string
  readonly healthy: boolean
  readonly last_heartbeat: string
}

export const makePlacement = (runnerAddress: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const sessions = yield* SessionStore
    const local = yield* LocalSessions
    return Effect.gen(function*() {
      const runners = yield* sql<{ readonly address: string; readonly healthy: boolean; readonly last_heartbeat: Date | string }>`
        SELECT address, healthy, last_heartbeat FROM cluster_runners ORDER BY address`
      const placed = yield* sessions.placement()
      const here = new Set(local.ids())
      return {
        runner: runnerAddress,
        runners: runners.map((row): RunnerRow => ({
          address: row.address,
          healthy: Boolean(row.healthy),
          last_heartbeat: row.last_heartbeat instanceof Date ? row.last_heartbeat.toISOString() : String(row.last_heartbeat)
        })),
        sessions: placed.map((session) => ({
          session_id: session.sessionId,
          capsule: session.capsuleName,
          runner: session.runner,
          placed_at: session.placedAt,
          here: here.has(session.sessionId)
        })),
        sessions_here: here.size
      }
    })
  })
