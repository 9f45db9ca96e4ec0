/**
 * The sessions a runner serves, and where each one's door is: every runner of a fleet is started
 * with the same capsule directories, claims the same sessions in the shared store (the same ids,
 * whoever claims first) and can therefore build any of them when the cluster hands it the shard.
 * Which runner holds a session right now is the cluster's business; this list is what exists.
 */
import { Context, Layer } from "effect"

export interface FleetSession {
  readonly sessionId: string
  /** The capsule directory the session serves. */
  readonly directory: string
  readonly capsuleName: string
  /** The session's door: the fleet's public base URL, then `s/<session id>/`. */
  readonly url: string
}

export class FleetSessions extends Context.Tag("capsule-runtime/fleet/FleetSessions")<FleetSessions, {
  readonly all: ReadonlyArray<FleetSession>
  readonly get: (sessionId: string) => FleetSession | undefined
}>() {
  static readonly make = (sessions: ReadonlyArray<FleetSession>): FleetSessions["Type"] => {
    const byId = new Map(sessions.map((session) => [session.sessionId, session]))
    return { all: sessions, get: (sessionId) => byId.get(sessionId) }
  }

  static readonly layer = (sessions: ReadonlyArray<FleetSession>) => Layer.succeed(FleetSessions, FleetSessions.make(sessions))
}

/** `<base>s/<id>/` for a base that ends with a slash or not. */
export const sessionUrl = (base: string, sessionId: string) => `${base.endsWith("/") ? base : `${base}/`}s/${sessionId}/`
