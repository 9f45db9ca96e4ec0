/**
 * A session behind its door: served on the `HttpServer` in context (`Door.layer`), or mounted at
 * a path of a host's `HttpLayerRouter` (`Door.layerHttpRouter`); and the door's own server
 * (`Door.layerServer`): a Node HTTP server with the door's header limits and read timeouts,
 * served through `./NodeDoorAdapter.ts`.
 */
import { createServer } from "node:http"
import { HttpServer } from "@effect/platform"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Effect, Layer } from "effect"
import type { HttpLayerRouter } from "@effect/platform"
import { DoorDispatch } from "../http/Dispatch.js"
import { DoorLive, mountDoor } from "../http/Door.js"
import { type DoorConfig, type DoorSettings, defaultDoorSettings } from "../http/DoorConfig.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { SessionPort } from "../services/SessionPort.js"
import { grpcDoorLayer, withGrpcAddress } from "./GrpcDoor.js"
import * as NodeDoorAdapter from "./NodeDoorAdapter.js"
import { doorConfigLayer, type Session } from "./Session.js"

/**
 * A session served on the `HttpServer` in context at `/`: its services, the `DoorAddress` it is
 * reached at and the door's settings. Released, the door ends the session before the server closes.
 */
export const serveDoor = <E, R>(
  session: Layer.Layer<Session, E, R>,
  settings: Partial<DoorSettings> = {}
): Layer.Layer<Session | DoorAddress | DoorConfig, E, HttpServer.HttpServer | Exclude<Exclude<R, DoorAddress>, DoorConfig>> =>
  Layer.merge(DoorLive, grpcDoorLayer).pipe(
    Layer.provide(DoorDispatch.layer),
    Layer.provide(Layer.fresh(SessionPort.layerLocal)),
    Layer.provideMerge(session),
    Layer.provideMerge(withGrpcAddress(doorAddressLayer("/"))),
    Layer.provideMerge(doorConfigLayer(settings))
  )

/** A session's door at `options.path` of the host's `HttpLayerRouter`, on the host's `HttpServer`. */
export const mountedDoor = <E, R>(
  session: Layer.Layer<Session, E, R>,
  options: { readonly path: `/${string}` } & Partial<DoorSettings>
): Layer.Layer<never, E, HttpLayerRouter.HttpRouter | HttpServer.HttpServer | Exclude<Exclude<R, DoorAddress>, DoorConfig>> => {
  const { path, ...settings } = options
  return mountDoor(path).pipe(
    Layer.provide(DoorDispatch.layer),
    Layer.provide(Layer.fresh(SessionPort.layerLocal)),
    Layer.provide(session),
    Layer.provide(doorAddressLayer(path)),
    Layer.provide(doorConfigLayer(settings))
  )
}

/** A Node HTTP server with the door's limits, listening on the configured address. */
export const layerServer = (settings: Partial<DoorSettings> = {}): Layer.Layer<HttpServer.HttpServer, ServeError> =>
  Layer.unwrapScoped(Effect.sync(() => {
    const given: DoorSettings = { ...defaultDoorSettings, ...settings }
    const server = createServer({
      maxHeaderSize: given.maxHeaderBytes,
      headersTimeout: given.headersTimeoutMs,
      requestTimeout: given.requestTimeoutMs,
      keepAliveTimeout: given.keepAliveTimeoutMs,
      // Node checks the head/request timeouts only this often (30 s by default).
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(Math.min(given.headersTimeoutMs, given.requestTimeoutMs) / 2)))
    })
    // Node silently drops headers past this count; one more lets the door see the overflow and refuse it (431).
    server.maxHeadersCount = given.maxHeadersCount + 1
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
    return bound.pipe(Layer.provideMerge(NodeDoorAdapter.layer(() => server, { host: given.host, port: given.port })))
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
export const doorAddressLayer = (path = "/"): Layer.Layer<DoorAddress, never, HttpServer.HttpServer> =>
  Layer.effect(DoorAddress, Effect.map(HttpServer.HttpServer, (server) => DoorAddress.of({ url: serverUrl(server.address, path) })))
