/**
 * The A2A door a session is reached through: the agent card, JSON-RPC on `POST /` and the
 * resource planes. Serve a session on the runtime's hardened Node server (`layer` with
 * `layerServer`), or mount it at a path of your own `HttpLayerRouter` (`layerHttpRouter`).
 * Provide a gRPC server too (`layerGrpc`) and `layer` serves A2A 1.0 over gRPC as well.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http"
 * import { HttpLayerRouter } from "@effect/platform"
 * import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { CapsuleRuntime, Door } from "capsule-runtime"
 *
 * // Two capsules beside the host's own routes, on the host's own server.
 * HttpLayerRouter.serve(Layer.mergeAll(
 *   Door.layerHttpRouter(CapsuleRuntime.layerDirectory("./hello"), { path: "/agents/hello" }),
 *   Door.layerHttpRouter(CapsuleRuntime.layerEcho(), { path: "/agents/echo" })
 * )).pipe(
 *   Layer.provide(CapsuleRuntime.layerHost),
 *   Layer.provide(NodeHttpServer.layer(createServer, { port: 3000 })),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.2.0
 */
import type { HttpApp, HttpLayerRouter, HttpServer } from "@effect/platform"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Effect, type Layer, type Scope } from "effect"
import { DoorDispatch, makeDispatch } from "./http/Dispatch.js"
import { makeDoorApp } from "./http/Door.js"
import { DoorConfig, type DoorSettings } from "./http/DoorConfig.js"
import type { GrpcBindError, GrpcServer } from "./grpc/GrpcServer.js"
import * as server from "./layers/DoorServer.js"
import * as grpc from "./layers/GrpcDoor.js"
import type { Session } from "./layers/Session.js"
import type { DoorAddress } from "./services/DoorAddress.js"
import { SessionPort } from "./services/SessionPort.js"

/**
 * The door's settings: bind address, body and header limits, read timeouts, stream limits,
 * the door's task acceptance and its credentials.
 *
 * @since 0.2.0
 * @category models
 */
export type Settings = DoorSettings

/**
 * The settings a door serves with (what `layer` and `layerHttpRouter` were given).
 *
 * @since 0.2.0
 * @category tags
 */
export { DoorConfig }

/**
 * The door's principals for `Settings.credentials`: the operator token, a tokens file with
 * scopes (and its reload), and the `delegations` token children get. A refused file is a
 * `DoorTokensRefused` (`E-RUN-040`).
 *
 * @since 0.2.0
 * @category constructors
 */
export { DoorTokensRefused, makeDoorCredentials as makeCredentials } from "./http/DoorCredentials.js"

/**
 * What `makeCredentials` returns.
 *
 * @since 0.2.0
 * @category models
 */
export type { DoorCredentials as Credentials } from "./http/DoorCredentials.js"

/**
 * Reads an operator token from a file the way `--auth-token-file` does: owner-only, one token on
 * the first line; anything else is a `DoorTokensRefused` naming the file.
 *
 * @since 0.2.0
 * @category constructors
 */
export { readTokenFile } from "./http/DoorCredentials.js"

/**
 * A signer for `Settings.cardSigner` from a PEM private key file (owner-only, as a tokens file),
 * or the refusal (`E-RUN-040`) naming why.
 *
 * @since 0.2.0
 * @category constructors
 */
export { readCardSigner } from "./http/DoorCredentials.js"

/**
 * A signer for `Settings.cardSigner` from PEM text: the door's A2A 1.0 cards are then signed
 * (JWS) so a client can check them with the key's public half.
 *
 * @since 0.2.0
 * @category constructors
 */
export { type CardSigner, makeCardSigner } from "./services/CardSignature.js"

/**
 * A session behind a door on the `HttpServer` in context, at `/`: provides the session's
 * services, the `DoorAddress` it is reached at and the door's settings. Released, the door
 * refuses new tasks, cancels the live ones and closes the event log before the server closes.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: <E, R>(
  session: Layer.Layer<Session, E, R>,
  settings?: Partial<Settings>
) => Layer.Layer<Session | DoorAddress | DoorConfig, E, HttpServer.HttpServer | Exclude<Exclude<R, DoorAddress>, DoorConfig>> = server.serveDoor

/**
 * A session's door mounted at `options.path` of the host's `HttpLayerRouter`, on the host's
 * `HttpServer`: requests under the path reach the door with the prefix taken off, and the
 * card's URL names the path.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerHttpRouter: <E, R>(
  session: Layer.Layer<Session, E, R>,
  options: { readonly path: `/${string}` } & Partial<Settings>
) => Layer.Layer<never, E, HttpLayerRouter.HttpRouter | HttpServer.HttpServer | Exclude<Exclude<R, DoorAddress>, DoorConfig>> = server.mountedDoor

/**
 * The door as an `HttpApp`, for a host that mounts it itself (`HttpRouter.mountApp`); the
 * session ends when the enclosing scope closes.
 *
 * @since 0.2.0
 * @category constructors
 */
export const router: Effect.Effect<HttpApp.Default<unknown, never>, never, Scope.Scope | Session | DoorConfig> = Effect.provideServiceEffect(
  makeDoorApp,
  DoorDispatch,
  makeDispatch
).pipe(Effect.provide(SessionPort.layerLocal))

/**
 * The runtime's own Node HTTP server, with the door's header limits and read timeouts, bound at
 * `settings.host`:`settings.port` (default 127.0.0.1, any free port).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerServer: (settings?: Partial<Settings>) => Layer.Layer<HttpServer.HttpServer, ServeError> = server.layerServer

/**
 * A gRPC server for the door, bound at `settings.host`:`settings.port` (default 127.0.0.1, any
 * free port) for the session's life. Provided beside `layerServer`, `layer` also serves A2A 1.0's
 * gRPC binding (`lf.a2a.v1.A2AService`) on it and lists it in the card's `supportedInterfaces`.
 *
 * @example
 * ```ts
 * Door.layer(CapsuleRuntime.layerEcho()).pipe(
 *   Layer.provide(Layer.merge(Door.layerServer(), Door.layerGrpc({ port: 50051 })))
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerGrpc: (settings?: Partial<Settings>) => Layer.Layer<GrpcServer, GrpcBindError> = grpc.layerGrpc

/**
 * The gRPC server `layerGrpc` binds (its `address` is the bound `host:port`), and its failure to
 * bind.
 *
 * @since 0.2.0
 * @category tags
 */
export { GrpcBindError, GrpcServer } from "./grpc/GrpcServer.js"
