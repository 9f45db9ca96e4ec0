/**
 * The door: an `@effect/platform` router (agent card under both well-known paths, JSON-RPC on
 * `POST /`, the resource and peer planes under `/resources/`), served on the `HttpServer` in
 * context (`DoorLive`) or mounted at a path of a host's `HttpLayerRouter` (`mountDoor`). Its finalizer
 * runs before the server closes: it refuses new tasks, cancels the live ones as `session/stop`
 * does and closes the event log, so observers get `capsule-closed` and every stream ends
 * instead of holding the server open.
 */
import { type HttpApp, HttpLayerRouter, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, FiberRef, Layer, LogLevel, Scope } from "effect"
import { globalValue } from "effect/GlobalValue"
import { EventLog } from "../services/EventLog.js"
import { isPeerPath, type PlaneResponse, ResourcePlanes } from "../services/ResourcePlanes.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { TaskRunner } from "../services/TaskRunner.js"
import { TracingEnabled } from "../services/Tracing.js"
import { bearerCheck, currentPrincipal } from "./DoorAuth.js"
import { DoorConfig } from "./DoorConfig.js"
import { credentialsOf } from "./DoorCredentials.js"
import { loggedApp, tracedApp } from "./DoorTracing.js"
import { restError } from "./A2a1Errors.js"
import { VersionNotSupported } from "./DoorErrors.js"
import { negotiate } from "./ProtocolVersion.js"
import { makeRestRoute } from "./RestRoute.js"
import { makeRpcRoute } from "./RpcRoute.js"
import { toRpcError } from "./RpcErrors.js"

const notFound = HttpServerResponse.text(`{"error":"not_found","message":"the door serves POST / (JSON-RPC), A2A 1.0's HTTP+JSON routes and GET /.well-known/agent-card.json"}`, {
  status: 404,
  contentType: "application/json"
})

/** A plane's answer as an HTTP response; a file body is streamed with its length known up front. */
const planeResponse = (answer: PlaneResponse) => {
  const headers = Object.fromEntries(answer.headers.filter(([name]) => name !== "content-type"))
  const contentType = answer.headers.find(([name]) => name === "content-type")?.[1] ?? "application/json"
  return typeof answer.body === "string"
    ? HttpServerResponse.text(answer.body, { status: answer.status, contentType, headers })
    : HttpServerResponse.stream(answer.body.stream, { status: answer.status, contentType, contentLength: answer.body.length, headers })
}

const decodable = (url: string) => {
  try {
    decodeURIComponent(url.split("?", 1)[0]!)
    return true
  } catch {
    return false
  }
}

/** What a session's door answers with; the router that picks among them is shared (`routes`). */
interface DoorRoutes {
  readonly card: HttpApp.Default
  readonly rpc: HttpApp.Default
  readonly rest: HttpApp.Default
  readonly plane: HttpApp.Default
}

const unrouted = Effect.die("a door route ran outside its door")
const noRoutes: DoorRoutes = { card: unrouted, rpc: unrouted, rest: unrouted, plane: unrouted }

/** Set for the request by its door: a fiber-local value, cheaper per request than a service in the context. */
const currentRoutes = globalValue(Symbol.for("capsule-runtime/DoorRoutes"), () => FiberRef.unsafeMake<DoorRoutes>(noRoutes))

const routeTo = (pick: (routes: DoorRoutes) => HttpApp.Default) => Effect.flatMap(FiberRef.get(currentRoutes), pick)

/**
 * One router for every door in the process: its route tree (find-my-way keeps one per HTTP
 * method for each `all` route, ~200 KiB) is built once, and each door sets its own
 * `DoorRoutes` for the request. A fleet runner holding a thousand sessions holds one tree, not a thousand.
 */
const routes = HttpRouter.empty.pipe(
  HttpRouter.get("/.well-known/agent-card.json", routeTo((r) => r.card)),
  HttpRouter.get("/.well-known/agent.json", routeTo((r) => r.card)),
  // The router falls back from HEAD to GET only when nothing matched, and the catch-all below
  // always matches: the card's HEAD (public, like its GET) needs routes of its own.
  HttpRouter.head("/.well-known/agent-card.json", routeTo((r) => r.card)),
  HttpRouter.head("/.well-known/agent.json", routeTo((r) => r.card)),
  HttpRouter.post("/", routeTo((r) => r.rpc)),
  // A2A 1.0's HTTP+JSON binding (./RestRoute.ts routes within these).
  HttpRouter.all("/message*", routeTo((r) => r.rest)),
  HttpRouter.all("/tasks", routeTo((r) => r.rest)),
  HttpRouter.all("/tasks/*", routeTo((r) => r.rest)),
  HttpRouter.all("/extendedAgentCard", routeTo((r) => r.rest)),
  // Routing order of §2: the peer plane (whole segment, query stripped), then the resource plane.
  HttpRouter.all("/resources/*", routeTo((r) => r.plane)),
  HttpRouter.all("*", Effect.succeed(notFound))
)

export const makeRouter = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  const config = yield* DoorConfig
  const rpc = yield* makeRpcRoute
  const rest = yield* makeRestRoute
  // Answered by the door itself from the export roots, never by the agent (door spec §8.4, §8.5).
  const planes = yield* ResourcePlanes
  const planeRoute = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const audience = request.headers["x-murmur-audience"]
    return Effect.map(
      isPeerPath(request.url) ? planes.peer(request.method, request.url, audience) : planes.files(request.method, request.url),
      planeResponse
    )
  })
  // The card in the shape of the version asked for (A2A 1.0 §7: 0.3 clients send no header).
  const cardHeaders = { "cache-control": "no-cache", vary: "A2A-Version" }
  const card03 = HttpServerResponse.text(identity.cardJson, { contentType: "application/json", headers: cardHeaders })
  const card10 = HttpServerResponse.text(identity.card1Json, { contentType: "application/json", headers: cardHeaders })
  const card = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const negotiated = negotiate(request.headers, request.url)
    if (negotiated._tag === "Supported") return negotiated.version === "1.0" ? card10 : card03
    const refusal = restError(toRpcError(new VersionNotSupported({ requested: negotiated.requested })))
    return HttpServerResponse.text(refusal.body, { status: refusal.status, contentType: "application/json", headers: cardHeaders })
  })
  const router = Effect.locally(routes, currentRoutes, { card, rpc, rest, plane: planeRoute })
  const tooManyHeaders = HttpServerResponse.text(
    `{"error":"too_many_headers","message":"the request has more than ${config.maxHeadersCount} headers"}`,
    { status: 431, contentType: "application/json", headers: { connection: "close" } }
  )
  const wrongVersion = (version: string) =>
    HttpServerResponse.text(
      `{"error":"http_version_not_supported","message":"the door speaks HTTP/1.0 and HTTP/1.1; this request line says HTTP/${version}"}`,
      { status: 505, contentType: "application/json", headers: { connection: "close" } }
    )
  const credentials = credentialsOf(config)
  const check = bearerCheck(credentials)
  // Node drops headers past its count instead of refusing the request; refuse it here, before
  // any route acts on a request whose headers were cut. Then the bearer token, when one is set.
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    // Node's parser lets an `HTTP/2.0` request line through as if it were HTTP/1.1 framing;
    // the door speaks only 1.x, and says so before reading anything else.
    if (incoming.httpVersionMajor !== 1) return Effect.succeed(wrongVersion(incoming.httpVersion))
    if (incoming.rawHeaders.length / 2 > config.maxHeadersCount) return Effect.succeed(tooManyHeaders)
    const principal = check(request)
    if (!("scopes" in principal)) return Effect.succeed(principal)
    // The router cannot match a path it cannot percent-decode (`%ff`); under /resources/ that
    // is still the plane's to refuse (outside_root), not a bare 404.
    const route = request.url.startsWith("/resources/") && !decodable(request.url) ? planeRoute : router
    // An open door's callers are all the default principal: no FiberRef change on its hot path.
    return credentials.open ? route : Effect.locally(route, currentPrincipal, principal)
  })
})

/**
 * The door as an app a host mounts on a router of its own (`HttpRouter.mount`): the router,
 * needing nothing but the request, with the session's shutdown (refuse new tasks, cancel the
 * live ones, close the event log) as a finalizer of the enclosing scope.
 */
export const makeDoorApp = Effect.gen(function*() {
  const router = yield* makeRouter
  const registry = yield* TaskRegistry
  const runner = yield* TaskRunner
  const log = yield* EventLog
  yield* Effect.addFinalizer(() =>
    registry.close().pipe(
      Effect.zipRight(runner.stop()),
      Effect.zipRight(log.close()),
      Effect.withSpan("Door.shutdown")
    )
  )
  const app: HttpApp.Default<unknown, never> = router
  return app
})

/** Serves the router on the `HttpServer` in context, and ends the session before it closes. */
export const DoorLive = Layer.scopedDiscard(Effect.gen(function*() {
  // Served by NodeDoorAdapter (layers/DoorServer.ts): no per-request span, scope or middleware.
  // The router needs nothing but the request (its services were taken when it was built; the
  // annotation keeps it so), so it is served from a context holding only the serving scope:
  // each request's context is then one entry, not a copy of the session's (docs/benchmarks.md).
  const made = yield* makeDoorApp
  // Both wrappers are chosen once here, so a door without tracing or debug logs pays for neither.
  const logged = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug) ? loggedApp(made) : made
  const app = (yield* TracingEnabled) ? tracedApp(logged) : logged
  const server = yield* HttpServer.HttpServer
  const scope = yield* Effect.scope
  yield* server.serve(app).pipe(Effect.mapInputContext((_: Context.Context<never>) => Context.make(Scope.Scope, scope)))
}))

/**
 * The door mounted at `path` of the host's `HttpLayerRouter`: requests under it reach the door
 * with the prefix taken off, as `HttpRouter.mountApp` does. The session ends (refuses new tasks,
 * cancels the live ones, closes its event log) when the layer is released.
 */
export const mountDoor = (path: `/${string}`) =>
  HttpLayerRouter.use((router) =>
    Effect.gen(function*() {
      const prefix = path.replace(/\/+$/, "") as "" | `/${string}`
      const app = yield* makeDoorApp
      const handler = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const rest = request.url.slice(prefix.length)
        const url = rest.startsWith("/") ? rest : `/${rest}`
        return Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ url })).pipe(Effect.orDie)
      })
      yield* router.add("*", prefix === "" ? "/" : prefix, handler)
      yield* router.add("*", `${prefix}/*`, handler)
    })
  )
