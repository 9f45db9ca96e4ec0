/**
 * A gRPC server bound for a session's life, as `HttpServer` is for HTTP: the layer binds
 * `host:port` (0: any free port) before the session starts, so the agent card can list the bound
 * address, and the door adds its service later (`serve`, ./GrpcDoor.ts). Closing the layer shuts
 * the server down: `tryShutdown` lets calls still open finish, and after a short grace
 * `forceShutdown` cancels whatever is left, so no server outlives its session.
 *
 * `@grpc/grpc-js` is loaded when the layer is built, not when this module is: a door without
 * gRPC (and every `run`) never pays for loading it.
 */
import type { Server, ServiceDefinition, UntypedServiceImplementation } from "@grpc/grpc-js"
import { Context, Effect, Layer, Schema, type Scope } from "effect"

/** The port could not be bound (taken, no such address). */
export class GrpcBindError extends Schema.TaggedError<GrpcBindError>()("GrpcBindError", {
  host: Schema.String,
  port: Schema.Number,
  message: Schema.String
}) {}

export interface GrpcServerSettings {
  readonly host: string
  readonly port: number
  /** Largest request message accepted, in bytes (the door's `maxBodyBytes`). */
  readonly maxMessageBytes: number
  /** How long open calls get to finish at shutdown before they are cancelled. */
  readonly graceMs: number
}

export class GrpcServer extends Context.Tag("capsule-runtime/grpc/GrpcServer")<GrpcServer, {
  /** `host:port` as clients dial it: the bound port; a wildcard bind reads as loopback. */
  readonly address: string
  /** Serves a service's handlers until the scope closes. */
  readonly serve: (definition: ServiceDefinition, implementation: UntypedServiceImplementation) => Effect.Effect<void, never, Scope.Scope>
}>() {
  static readonly layer = (settings: GrpcServerSettings): Layer.Layer<GrpcServer, GrpcBindError> => Layer.scoped(GrpcServer, make(settings))
}

/** `host:port` with an IPv6 host in brackets. */
const hostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

const make = (settings: GrpcServerSettings) =>
  Effect.gen(function*() {
    const grpc = yield* Effect.promise(() => import("@grpc/grpc-js"))
    const server = new grpc.Server({ "grpc.max_receive_message_length": settings.maxMessageBytes })
    const bound = Effect.async<number, GrpcBindError>((resume) => {
      server.bindAsync(hostPort(settings.host, settings.port), grpc.ServerCredentials.createInsecure(), (error, port) => {
        resume(error === null ? Effect.succeed(port) : Effect.fail(new GrpcBindError({ host: settings.host, port: settings.port, message: error.message })))
      })
    })
    // A server that bound nothing holds no port, but is still let go of.
    const port = yield* Effect.acquireRelease(
      Effect.tapError(bound, () => Effect.sync(() => server.forceShutdown())),
      () => shutdown(server, settings.graceMs)
    )
    const shown = settings.host === "0.0.0.0" || settings.host === "::" ? "127.0.0.1" : settings.host
    const serve = (definition: ServiceDefinition, implementation: UntypedServiceImplementation) =>
      Effect.acquireRelease(
        Effect.sync(() => server.addService(definition, implementation)),
        () => Effect.sync(() => server.removeService(definition))
      )
    return GrpcServer.of({ address: hostPort(shown, port), serve })
  })

/** `tryShutdown`, then `forceShutdown` once `graceMs` passed without it completing. */
const shutdown = (server: Server, graceMs: number) =>
  Effect.async<void>((resume) => {
    let done = false
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(Effect.void)
    }
    const timer = setTimeout(() => {
      server.forceShutdown()
      finish()
    }, graceMs)
    server.tryShutdown(finish)
  })
