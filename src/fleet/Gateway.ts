/**
 * Every runner's door answers for every session of the fleet at `/s/<session id>/…`: the same
 * door (both A2A versions, JSON-RPC and HTTP+JSON, the card) over the session's port. A session
 * whose entity lives here is served by its own door app (./LocalSessions.ts); any other one by a
 * door over the store and the cluster (./RemoteSession.ts), built once per session and kept.
 *
 * What a remote door cannot do, it refuses: push configs (kept by the owner), the resource
 * planes (the files are on the owner's disk) and delegation completions (the owner tracks them).
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Scope } from "effect"
import { makeDispatch, DoorDispatch } from "../http/Dispatch.js"
import { makeRouter } from "../http/Door.js"
import { DoorConfig } from "../http/DoorConfig.js"
import { bearerCheck, scopeChallenge, scopeMessage } from "../http/DoorAuth.js"
import { credentialsOf } from "../http/DoorCredentials.js"
import { isAdmin } from "../http/DoorScopes.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { ResourcePlanes } from "../services/ResourcePlanes.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { SessionPort } from "../services/SessionPort.js"
import { SessionRecord } from "../services/SessionRecord.js"
import { FrameStore } from "../store/FrameStore.js"
import { SessionStore } from "../store/SessionStore.js"
import { TaskStore } from "../store/TaskStore.js"
import { type FleetSession, FleetSessions } from "./FleetSessions.js"
import { type DoorApp, LocalSessions } from "./LocalSessions.js"
import { makePlacement } from "./Placement.js"
import { remoteSession } from "./RemoteSession.js"
import { sessionClient } from "./SessionClient.js"
import { type Described, SessionEntity } from "./SessionEntity.js"

const answer = (status: number, error: string, message: string) =>
  HttpServerResponse.text(JSON.stringify({ error, message }), { status, contentType: "application/json" })

/** The door app over a session's port and identity, with what a door needs and nothing of the session's own. */
export const sessionDoorApp: Effect.Effect<
  DoorApp,
  never,
  SessionPort | SessionIdentity | DoorConfig | ResourcePlanes | SessionRecord | DelegationTracker | Scope.Scope
> = Effect.map(Effect.provideServiceEffect(makeRouter, DoorDispatch, makeDispatch), (router): DoorApp => router)

/** Remote doors a gateway keeps built: each is a few KiB (the router is shared), rebuilt from the store when dropped. */
const remoteKept = 1024

/** The gateway of the runner at `runnerAddress` (`host:port`). */
export const makeGateway = (runnerAddress: string) => Effect.gen(function*() {
  const sessions = yield* FleetSessions
  const local = yield* LocalSessions
  const config = yield* DoorConfig
  const tasks = yield* TaskStore
  const frames = yield* FrameStore
  const sessionStore = yield* SessionStore
  const makeClient = yield* SessionEntity.client
  const scope = yield* Effect.scope
  const remote = new Map<string, Effect.Effect<DoorApp>>()
  const placement = yield* makePlacement(runnerAddress)
  const check = bearerCheck(credentialsOf(config))

  /** Asks the owner once what the capsule is (its card), then serves the session over the store. */
  const buildRemote = (session: FleetSession) =>
    Effect.gen(function*() {
      const client = sessionClient(makeClient, session.sessionId)
      // Its last owner's description, from the store; only a session never built yet is woken for it.
      const stored = yield* sessionStore.described(session.sessionId).pipe(Effect.orElseSucceed(() => ""))
      const described: Described = stored === "" ? yield* client.call((entity) => entity.Describe()) : JSON.parse(stored) as Described
      const identity = SessionIdentity.make(described.capsule, {
        streaming: described.streaming,
        bearer: !credentialsOf(config).open,
        sessionId: session.sessionId,
        signer: config.cardSigner,
        url: session.url
      })
      const port = remoteSession({ sessionId: session.sessionId, client, tasks, frames })
      return yield* sessionDoorApp.pipe(
        Effect.provide(Layer.mergeAll(DelegationTracker.layer, SessionRecord.none, ResourcePlanes.layerUndeclared)),
        Effect.provideService(SessionPort, port),
        Effect.provideService(SessionIdentity, identity),
        Effect.provideService(DoorConfig, config),
        Effect.provideService(Scope.Scope, scope)
      )
    })

  /**
   * One build per session, shared by concurrent first requests; a failed build is tried again
   * next time. The first request to a session nobody holds wakes it (its card), and the cluster
   * may place it here: the answer is then the local door, and no remote one is kept for it.
   * At most `remoteKept` are kept, the least recently built dropped first.
   */
  const remoteApp = (session: FleetSession) => {
    const id = session.sessionId
    const known = remote.get(id)
    if (known !== undefined) return known
    return Effect.flatMap(Effect.cached(buildRemote(session)), (once) => {
      const kept = once.pipe(Effect.tapErrorCause(() => Effect.sync(() => remote.delete(id))))
      remote.set(id, kept)
      if (remote.size > remoteKept) remote.delete(remote.keys().next().value!)
      return Effect.map(kept, (app) => {
        const here = local.get(id)
        if (here === undefined) return app
        remote.delete(id)
        return here
      })
    })
  }

  const unknownSession = (id: string) => answer(404, "session_not_found", `no session ${id} in this fleet; GET / lists them`)
  const index = HttpServerResponse.text(
    JSON.stringify({ sessions: sessions.all.map(({ capsuleName, sessionId, url }) => ({ session_id: sessionId, capsule: capsuleName, url })) }),
    { contentType: "application/json" }
  )

  /** The fleet's own routes: the session list (any principal) and the placement view (`admin`). */
  const fleetRoute = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    const path = request.url.split("?", 1)[0]
    const principal = check(request)
    if (!("scopes" in principal)) return Effect.succeed(principal)
    if (request.method !== "GET" && request.method !== "HEAD") return Effect.succeed(answer(405, "method_not_allowed", "the fleet's own routes are read with GET"))
    if (path === "/") return Effect.succeed(index)
    if (path !== "/fleet/placement") return Effect.succeed(answer(404, "not_found", "a fleet door serves sessions at /s/<session id>/; GET / lists them, GET /fleet/placement (admin) shows where they run"))
    if (!isAdmin(principal)) {
      return Effect.succeed(HttpServerResponse.text(
        JSON.stringify({ error: "insufficient_scope", message: scopeMessage(principal, "admin"), scope: "admin" }),
        { status: 403, contentType: "application/json", headers: { "www-authenticate": scopeChallenge("admin") } }
      ))
    }
    return placement.pipe(
      Effect.map((view) => HttpServerResponse.text(JSON.stringify(view), { contentType: "application/json" })),
      Effect.catchAll((error) => Effect.succeed(answer(503, "store_unavailable", `the fleet's database cannot be read: ${error.message}`)))
    )
  }

  const app: DoorApp = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const match = /^\/s\/([^/?#]+)(.*)$/s.exec(request.url)
    if (match === null) return fleetRoute(request)
    const [, id, tail] = match as unknown as [string, string, string]
    const session = sessions.get(id)
    if (session === undefined) return Effect.succeed(unknownSession(id))
    const rest = request.modify({ url: tail.startsWith("/") ? tail : `/${tail}` })
    const here = local.get(id)
    // A session that moved here since its remote door was kept is served locally; drop that door.
    if (here !== undefined) remote.delete(id)
    const door = here === undefined ? remoteApp(session) : Effect.succeed(here)
    return Effect.flatMap(door, (served) => Effect.provideService(served, HttpServerRequest.HttpServerRequest, rest))
  })
  return app
})
