/**
 * What a session needs of the store at start: its id for a capsule directory (the same one again
 * when the directory is served again), and its journal. Provided once per process by the store
 * layer (`src/layers/Store.ts`); absent, sessions are in memory only.
 */
import { Context, Effect, Layer } from "effect"
import { Journal, type Recovered } from "../services/Journal.js"
import type { BatchWriter } from "./BatchWriter.js"
import { FrameStore } from "./FrameStore.js"
import { PushConfigStore } from "./PushConfigStore.js"
import { loadSession, makeSessionJournal } from "./SessionJournal.js"
import { type ClaimedSession, type SessionClaim, SessionStore } from "./SessionStore.js"
import type { StoreFailed } from "./StoreError.js"
import { StoreTransaction } from "./StoreTransaction.js"
import { TaskStore } from "./TaskStore.js"

export class SessionStores extends Context.Tag("capsule-runtime/store/SessionStores")<SessionStores, {
  /** Where the store is, for messages (a path, or a URL without its password). */
  readonly location: string
  readonly claim: (claim: SessionClaim) => Effect.Effect<ClaimedSession, StoreFailed>
  /** What the store holds for the session (read at start, before the session is built). */
  readonly load: (sessionId: string) => Effect.Effect<Recovered, StoreFailed>
  /** The session's journal over what `load` read: commits its changes from then on. */
  readonly journal: (sessionId: string, recovered: Recovered) => Layer.Layer<Journal>
}>() {
  /** Over the table stores in context. */
  static readonly layer = (location: string) =>
    Layer.effect(
      SessionStores,
      Effect.gen(function*() {
        const sessions = yield* SessionStore
        const tables = yield* Effect.context<TaskStore | FrameStore | PushConfigStore | StoreTransaction | BatchWriter>()
        return SessionStores.of({
          location,
          claim: sessions.claim,
          load: (sessionId) => Effect.provide(loadSession(sessionId), tables),
          journal: (sessionId, recovered) => Layer.scoped(Journal, makeSessionJournal(sessionId, recovered)).pipe(Layer.provide(Layer.succeedContext(tables)))
        })
      })
    )
}
