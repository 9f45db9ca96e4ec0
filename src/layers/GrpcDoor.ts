/**
 * Composition of the door's gRPC binding (../grpc/): `layerGrpc` binds a gRPC server for the
 * session's life (`Door.layerGrpc`, `serve --grpc-port`), and a door served with one in context
 * (`Door.layer`) also serves A2A 1.0 over it and lists it on its card. Without one nothing of
 * gRPC is loaded: the binding's modules come in by dynamic import only when a server is there.
 */
import { Effect, Layer, Option } from "effect"
import type { DoorDispatch } from "../http/Dispatch.js"
import { type DoorConfig, type DoorSettings, defaultDoorSettings } from "../http/DoorConfig.js"
import { type GrpcBindError, GrpcServer } from "../grpc/GrpcServer.js"
import { DoorAddress } from "../services/DoorAddress.js"

/** How long calls still open at shutdown get before the server cancels them. */
const graceMs = 2_000

/**
 * A gRPC server at `settings.host`:`settings.port` (default 127.0.0.1, any free port), taking
 * messages up to the door's `maxBodyBytes`; shut down when the layer is released. It serves one
 * door: the service's methods can be added to a server once.
 */
export const layerGrpc = (settings: Partial<DoorSettings> = {}): Layer.Layer<GrpcServer, GrpcBindError> => {
  const given: DoorSettings = { ...defaultDoorSettings, ...settings }
  return GrpcServer.layer({ host: given.host, port: given.port, maxMessageBytes: given.maxBodyBytes, graceMs })
}

/** The door's gRPC binding on the `GrpcServer` in context, if there is one. */
export const grpcDoorLayer: Layer.Layer<never, never, DoorDispatch | DoorConfig> = Layer.scopedDiscard(Effect.gen(function*() {
  const server = yield* Effect.serviceOption(GrpcServer)
  if (Option.isNone(server)) return
  const { serveGrpcDoor } = yield* Effect.promise(() => import("../grpc/GrpcDoor.js"))
  yield* Effect.provideService(serveGrpcDoor, GrpcServer, server.value)
}))

/** `address` plus the gRPC server's `host:port` when one is in context: what the card lists. */
export const withGrpcAddress = <E, R>(address: Layer.Layer<DoorAddress, E, R>): Layer.Layer<DoorAddress, E, R> =>
  Layer.effect(
    DoorAddress,
    Effect.gen(function*() {
      const door = yield* DoorAddress
      const grpc = yield* Effect.serviceOption(GrpcServer)
      return Option.isNone(grpc) ? door : DoorAddress.of({ ...door, grpc: grpc.value.address })
    })
  ).pipe(Layer.provide(address))
