/**
 * The port a door binds: `--port` when given, else the manifest's `network.internal_port`, else 0
 * (any free port). A port that cannot be bound is E-RUN-010, naming where the port came from.
 */
import type { ServeError } from "@effect/platform/HttpServerError"
import { Option } from "effect"

export interface DoorPort {
  readonly port: number
  /** Where it came from, for the E-RUN-010 message. */
  readonly source: "--port" | "network.internal_port" | "default"
}

export const doorPort = (flag: Option.Option<number>, network: { readonly internalPort?: number | undefined } | undefined): DoorPort =>
  Option.isSome(flag)
    ? { port: flag.value, source: "--port" }
    : network?.internalPort === undefined
    ? { port: 0, source: "default" }
    : { port: network.internalPort, source: "network.internal_port" }

/** `cannot listen on HOST:PORT (network.internal_port in murmur.yaml): address already in use; …`. */
export const bindFailureMessage = (host: string, chosen: DoorPort, error: ServeError): string => {
  const cause = error.cause as NodeJS.ErrnoException | undefined
  const taken = cause?.code === "EADDRINUSE"
  const reason = taken ? "the port is already in use" : cause instanceof Error ? cause.message : String(error.cause)
  const where = chosen.source === "network.internal_port" ? " (network.internal_port in murmur.yaml)" : chosen.source === "--port" ? " (--port)" : ""
  const hint = !taken ? "" : chosen.source === "network.internal_port"
    ? "; stop what holds it, change network.internal_port, or pass --port (0: any free port)"
    : "; stop what holds it or choose another port (0: any free port)"
  return `cannot listen on ${host}:${chosen.port}${where}: ${reason}${hint}`
}

/** `cannot listen for gRPC on HOST:PORT (--grpc-port): …`, for a `--grpc-port` that cannot be bound. */
export const grpcBindFailureMessage = (error: { readonly host: string; readonly port: number; readonly message: string }): string => {
  // grpc-js words a taken port as "No address added … errors: [listen EADDRINUSE: …]".
  const reason = error.message.includes("EADDRINUSE")
    ? "the port is already in use; stop what holds it or choose another port (0: any free port)"
    : error.message
  return `cannot listen for gRPC on ${error.host}:${error.port} (--grpc-port): ${reason}`
}
