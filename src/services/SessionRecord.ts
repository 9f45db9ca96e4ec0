/**
 * Where the door records what it did for a session beyond its tasks' own frames (a push
 * delivery, for one): the session's trace for an agent session (`trace.jsonl`, through
 * ../layers/AgentSession.ts), nothing for a session without one (`SessionRecord.none`).
 */
import { Context, Effect, Layer } from "effect"

export class SessionRecord extends Context.Tag("capsule-runtime/services/SessionRecord")<SessionRecord, {
  /** Writes one event under the session node; a failure to write is the recorder's to report, never the caller's. */
  readonly record: (eventType: string, fields: Readonly<Record<string, unknown>>) => Effect.Effect<void>
}>() {
  static readonly none = Layer.succeed(SessionRecord, SessionRecord.of({ record: () => Effect.void }))
}
