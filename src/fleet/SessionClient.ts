/**
 * Calls to one session entity, wherever it lives. The cluster's own failures of a volatile call
 * (the owner's mailbox full, storage down) are the runtime's, not the caller's: they end the
 * call as an internal error, with the session named. A runner that died with the call in flight
 * is not one of them: the cluster sends the call again to the next owner.
 */
import type { ClusterError } from "@effect/cluster"
import { Effect } from "effect"
import type { SessionEntity } from "./SessionEntity.js"

export type EntityClient = Effect.Effect.Success<typeof SessionEntity.client> extends (entityId: string) => infer Client ? Client : never

type ClusterFailure = ClusterError.MailboxFull | ClusterError.AlreadyProcessingMessage | ClusterError.PersistenceError

const clusterTags: ReadonlySet<string> = new Set(["MailboxFull", "AlreadyProcessingMessage", "PersistenceError"])

const isClusterFailure = (error: unknown): error is ClusterFailure =>
  typeof error === "object" && error !== null && "_tag" in error && clusterTags.has(String(error._tag))

export interface SessionClient {
  readonly call: <A, E>(send: (session: EntityClient) => Effect.Effect<A, E>) => Effect.Effect<A, Exclude<E, ClusterFailure>>
}

export const sessionClient = (make: (entityId: string) => EntityClient, sessionId: string): SessionClient => {
  const session = make(sessionId)
  return {
    call: <A, E>(send: (session: EntityClient) => Effect.Effect<A, E>) =>
      Effect.catchIf(send(session), isClusterFailure, (error) =>
        Effect.die(new Error(`session ${sessionId}: the cluster could not deliver the call (${error._tag}): ${error.message}`))) as Effect.Effect<A, Exclude<E, ClusterFailure>>
  }
}
