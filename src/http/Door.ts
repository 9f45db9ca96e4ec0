/**
 * The door: an `@effect/platform` router (agent card under both well-known paths, JSON-RPC on
 * `POST /`, the resource and peer planes under `/resources/`) served on a Node HTTP server with header limits and read timeouts. Its finalizer
 * runs before the server closes: it refuses new tasks, cancels the live ones as `session/stop`
 * does and closes the event log, so observers get `capsule-closed` and every stream ends
 * instead of holding the server open.
 */
import { createServer } from "node:http"
import { type HttpApp, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, FiberRef, Layer, LogLevel, Option, Scope } from "effect"
import { DoorAddress } from "../services/DoorAddress.js"
import { EventLog } from "../services/EventLog.js"
import { isPeerPath, type PlaneResponse, ResourcePlanes } from "../services/ResourcePlanes.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { TaskRunner } from "../services/TaskRunner.js"
import { TracingEnabled } from "../services/Tracing.js"
import { bearerCheck, currentPrincipal } from "./DoorAuth.js"
import { DoorConfig, type DoorSettings } from "./DoorConfig.js"
import { credentialsOf } from "./DoorCredentials.js"
import { loggedApp, tracedApp } from "./DoorTracing.js"
import * as NodeDoorAdapter from "./NodeDoorAdapter.js"
import { makeRpcRoute } from "./RpcRoute.js"

const notFound = HttpServerResponse.text(`{"error":"not_found","message":"the door serves POST / and GET /.well-known/agent-card.json"}`, {
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

export const makeRouter = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  const config = yield* DoorConfig
  const rpc = yield* makeRpcRoute
  // Answered by the door itself from the export roots, never by the agent (door spec §8.4, §8.5);
  // a session without planes answers as a capsule that declared neither.
  const planes = Option.getOrElse(yield* Effect.serviceOption(ResourcePlanes), () => ResourcePlanes.undeclared)
  const planeRoute = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const audience = request.headers["x-murmur-audience"]
    return Effect.map(
      isPeerPath(request.url) ? planes.peer(request.method, request.url, audience) : planes.files(request.method, request.url),
      planeResponse
    )
  })
  const card = Effect.succeed(HttpServerResponse.text(identity.cardJson, {
    contentType: "application/json",
    headers: { "cache-control": "no-cache" }
  }))
  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/.well-known/agent-card.json", card),
    HttpRouter.get("/.well-known/agent.json", card),
    HttpRouter.post("/", rpc),
    // Routing order of §2: the peer plane (whole segment, query stripped), then the resource plane.
    HttpRouter.all("/resources/*", planeRoute),
    HttpRouter.all("*", Effect.succeed(notFound))
  )
  const tooManyHeaders = HttpServerResponse.text(
    `{"error":"too_many_headers","message":"the request has more than ${config.maxHeadersCount} headers"}`,
    { status: 431, contentType: "application/json", headers: { connection: "close" } }
  )
  const credentials = credentialsOf(config)
  const check = bearerCheck(credentials)
  // Node drops headers past its count instead of refusing the request; refuse it here, before
  // any route acts on a request whose headers were cut. Then the bearer token, when one is set.
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (NodeHttpServerRequest.toIncomingMessage(request).rawHeaders.length / 2 > config.maxHeadersCount) return Effect.succeed(tooManyHeaders)
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
  // Served by NodeDoorAdapter (see doorServerLayer): no per-request span, scope or middleware.
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

/** A Node HTTP server with the door's limits, listening on the configured address. */
export const doorServerLayer = (settings: DoorSettings) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const server = createServer({
      maxHeaderSize: settings.maxHeaderBytes,
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
      // Node checks the head/request timeouts only this often (30 s by default).
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(Math.min(settings.headersTimeoutMs, settings.requestTimeoutMs) / 2)))
    })
    // Node silently drops headers past this count; one more lets the door see the overflow and refuse it (431).
    server.maxHeadersCount = settings.maxHeadersCount + 1
    // Released before the server closes: streams end at shutdown, and whatever is still open a
    // moment later is cut, so closing (and exiting) stays bounded.
    const bound = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        // Keep-alive connections turn idle as their last stream ends; Node's close() only
        // drops the ones idle at that instant, so keep sweeping until the server is closed.
        const sweep = setInterval(() => server.closeIdleConnections(), 25).unref()
        server.once("close", () => clearInterval(sweep))
        setTimeout(() => server.closeAllConnections(), 2_000).unref()
      })
    ))
    return doorAddressLayer().pipe(
      Layer.provideMerge(bound),
      Layer.provideMerge(NodeDoorAdapter.layer(() => server, { host: settings.host, port: settings.port }))
    )
  }))

/** An absolute URL for a bound server and a path (wildcard binds advertise loopback). */
export const serverUrl = (address: HttpServer.Address, path = "/"): string => {
  const suffix = path.startsWith("/") ? path : `/${path}`
  const tail = suffix.endsWith("/") ? suffix : `${suffix}/`
  if (address._tag === "UnixAddress") return `http://localhost${tail}`
  const host = address.hostname === "0.0.0.0" || address.hostname === "::" ? "127.0.0.1" : address.hostname
  return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}${tail}`
}

/** The `DoorAddress` of a door served at `path` on the `HttpServer` in context. */
export const doorAddressLayer = (path = "/") =>
  Layer.effect(DoorAddress, Effect.map(HttpServer.HttpServer, (server) => DoorAddress.of({ url: serverUrl(server.address, path) })))
