/**
 * The two file planes under `/resources/` (door spec §8.4, §8.5): the operator's resource plane
 * (`exports.files`, list and read by path) and the peer plane (`exports.peer_files`, one file per
 * audience-bound handle). The door asks this service and writes out what it answers; the
 * implementation that touches the export roots lives with the agent (src/planes/ExportPlanes.ts),
 * so nothing here opens a file. Without an implementation in context the door answers as a
 * capsule that declared neither plane: `ResourcePlanes.undeclared`.
 */
import { Context, Effect, Layer, Schema, type Stream } from "effect"

/** A plane's answer: status, headers in order, and a body that is either JSON text or streamed file bytes. */
export interface PlaneResponse {
  readonly status: number
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string | { readonly stream: Stream.Stream<Uint8Array>; readonly length: number }
}

export type PlaneRefusal =
  | "no_resource_plane"
  | "no_peer_plane"
  | "method_not_allowed"
  | "not_found"
  | "malformed_handle"
  | "missing_audience"
  | "handle_not_valid"
  | "handle_expired"
  | "outside_root"
  | "symlink_refused"
  | "not_a_regular_file"
  | "too_large"
  | "io_error"

export const refusalStatus: Readonly<Record<PlaneRefusal, number>> = {
  no_resource_plane: 404,
  no_peer_plane: 404,
  not_found: 404,
  method_not_allowed: 405,
  malformed_handle: 400,
  missing_audience: 400,
  handle_not_valid: 403,
  outside_root: 403,
  symlink_refused: 403,
  not_a_regular_file: 403,
  handle_expired: 410,
  too_large: 413,
  io_error: 500
}

export const PEER_PREFIX = "/resources/peer"
export const FILES_PREFIX = "/resources/"

/** Whether a raw request path (query included) addresses the peer plane: whole segment, query stripped. */
export const isPeerPath = (rawPath: string): boolean => {
  const path = rawPath.split("?", 1)[0]!
  return path === PEER_PREFIX || path.startsWith(`${PEER_PREFIX}/`)
}

/** A refusal: `{"error","message"}` with `content-type: application/json`, then the plane's extra headers. */
export const refusal = (code: PlaneRefusal, message: string, extra: ReadonlyArray<readonly [string, string]> = []): PlaneResponse => ({
  status: refusalStatus[code],
  headers: [["content-type", "application/json"], ...extra, ...(code === "method_not_allowed" ? [["allow", "GET"] as const] : [])],
  body: JSON.stringify({ error: code, message })
})

export const FILES_METHOD_MESSAGE = "the resource plane serves GET only; it has no write path"
export const PEER_METHOD_MESSAGE = "the peer plane serves GET only; it has no write path and no list verb"
export const NO_RESOURCE_PLANE_MESSAGE = "this capsule declares no exports.files block, so it has no resource plane"
export const NO_PEER_PLANE_MESSAGE = "this capsule declares no exports.peer_files block, so it has no peer plane"

export interface MintedHandle {
  readonly handle: string
  readonly handle_id: string
  readonly expires_at_ms: number
  readonly audience: string
}

/** Why `share-file` minted nothing: the plane's refusal code and its sentence. */
export class SharingRefused extends Schema.TaggedError<SharingRefused>()("SharingRefused", {
  code: Schema.String,
  message: Schema.String
}) {}

export class ResourcePlanes extends Context.Tag("capsule-runtime/services/ResourcePlanes")<ResourcePlanes, {
  /** Answers a request under `/resources/` that is not the peer plane's (`rawPath` with its query). */
  readonly files: (method: string, rawPath: string) => Effect.Effect<PlaneResponse>
  /** Answers a request under `/resources/peer`, with the caller's `x-murmur-audience` if sent. */
  readonly peer: (method: string, rawPath: string, audience: string | undefined) => Effect.Effect<PlaneResponse>
  /**
   * `share-file`: mints a handle for `path` (relative to `exports.peer_files.root`) bound to
   * `audience`, living `ttlSecs` at most (never past `max_ttl`).
   */
  readonly share: (path: string, audience: string, ttlSecs: number | undefined) => Effect.Effect<MintedHandle, SharingRefused>
  /** One more task reached a terminal state in this process (the planes' `generation`). */
  readonly taskEnded: Effect.Effect<void>
}>() {
  /** Neither plane declared: the method check first, then `no_resource_plane` / `no_peer_plane`. */
  static readonly undeclared = ResourcePlanes.of({
    files: (method) =>
      Effect.succeed(
        method !== "GET" ? refusal("method_not_allowed", FILES_METHOD_MESSAGE) : refusal("no_resource_plane", NO_RESOURCE_PLANE_MESSAGE)
      ),
    peer: (method, rawPath) => {
      if (method !== "GET") return Effect.succeed(refusal("method_not_allowed", PEER_METHOD_MESSAGE))
      const path = rawPath.split("?", 1)[0]!
      return Effect.succeed(
        path === PEER_PREFIX || path === `${PEER_PREFIX}/`
          ? refusal("not_found", "the peer plane has no listing; redeem a handle at /resources/peer/<handle>")
          : refusal("no_peer_plane", NO_PEER_PLANE_MESSAGE)
      )
    },
    share: () => Effect.fail(new SharingRefused({ code: "no_peer_plane", message: NO_PEER_PLANE_MESSAGE })),
    taskEnded: Effect.void
  })

  static readonly layerUndeclared = Layer.succeed(ResourcePlanes, ResourcePlanes.undeclared)
}
