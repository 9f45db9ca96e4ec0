/**
 * The resource plane (`exports.files`) and the peer plane (`exports.peer_files`) of one agent
 * session (door spec §8.4, §8.5), answered host-side from the export roots in the accessible
 * workdir: no guest runs and no turn is consulted, so they answer idle or mid-task. Every list,
 * read, mint and redeem (refusals included) is a `trace.jsonl` line. A redeem that failed the MAC
 * records no path: its payload is the caller's, not this capsule's.
 */
import { closeSync } from "node:fs"
import { Effect, Either, Layer } from "effect"
import type { Exports } from "../project/manifest/Retention.js"
import { exportComponents } from "./ExportPath.js"
import {
  FILES_METHOD_MESSAGE,
  NO_PEER_PLANE_MESSAGE,
  NO_RESOURCE_PLANE_MESSAGE,
  PEER_METHOD_MESSAGE,
  PEER_PREFIX,
  type PlaneRefusal,
  type PlaneResponse,
  refusal,
  ResourcePlanes,
  SharingRefused
} from "../services/ResourcePlanes.js"
import { Trace } from "../records/Trace.js"
import type { Containment } from "../records/TraceEvents.js"
import { type Failure, hashOpened, listExport, openExportFile, streamFd } from "./ExportReader.js"
import * as PeerHandle from "./PeerHandle.js"

export interface ExportPlanesOptions {
  /** The accessible workdir the roots are relative to. */
  readonly workdir: string
  readonly exports: Exports
  readonly sessionId: string
  readonly containment: Containment
  /** The effective `exports.peer_files.max_ttl` (./PeerExport.ts). */
  readonly maxTtlSecs: number
}

const filesMessage = (failure: Failure, maxBytes: number): string => {
  switch (failure.code) {
    case "not_found":
      return "no such file under the export root"
    case "outside_root":
      return "the requested path resolves outside the export root"
    case "symlink_refused":
      return "a symbolic link was encountered under the export root; this runtime never follows one"
    case "not_a_regular_file":
      return "the requested path is not a regular file"
    case "too_large":
      return `file exceeds the declared exports.files.max_bytes of ${maxBytes} bytes`
    case "io_error":
      return `read failed: ${failure.detail ?? "unknown error"}`
  }
}

const peerMessage = (code: PlaneRefusal, maxBytes: number, detail?: string): string => {
  switch (code) {
    case "malformed_handle":
      return "the handle is not an mh1 peer handle"
    case "missing_audience":
      return "a redeem needs the x-murmur-audience header: the audience the handle was minted for"
    case "handle_not_valid":
      // Fixed text: every cause (payload, MAC, issuer, audience) must produce identical bytes.
      return "the handle is not valid for this capsule and audience"
    case "handle_expired":
      return "the handle has expired"
    case "not_found":
      return "no such file under the peer export root"
    case "outside_root":
      return "the handle names a path outside the peer export root"
    case "symlink_refused":
      return "a symbolic link was encountered under the peer export root; this runtime never follows one"
    case "not_a_regular_file":
      return "the handle does not name a regular file"
    case "too_large":
      return `file exceeds the declared exports.peer_files.max_bytes of ${maxBytes} bytes`
    default:
      return `read failed: ${detail ?? "unknown error"}`
  }
}

/** Components of a path the model passed to `share-file`: plain text, no percent-decoding. */
const plainComponents = (path: string): Either.Either<ReadonlyArray<string>, "outside_root"> => {
  const trimmed = path.endsWith("/") ? path.slice(0, -1) : path
  const parts = trimmed.split("/")
  return trimmed === "" || path.startsWith("/") || path.includes("\0") || parts.some((part) => part === "" || part === "." || part === "..")
    ? Either.left("outside_root")
    : Either.right(parts)
}

export const makeExportPlanes = (options: ExportPlanesOptions) =>
  Effect.gen(function*() {
    const trace = yield* Trace
    const { files, peerFiles } = options.exports
    const key = PeerHandle.newKey()
    let generation = 0
    const record = (type: string, fields: Record<string, unknown>) =>
      trace.record(type, undefined, fields).pipe(
        Effect.catchAll((error) => Effect.logWarning(`${type} not traced: ${error.message}`)),
        Effect.asVoid
      )
    const common = (): ReadonlyArray<readonly [string, string]> => [
      ["x-murmur-generation", String(generation)],
      ["x-murmur-containment", options.containment]
    ]

    const filesPlane = Effect.fn("ResourcePlanes.files")(function*(method: string, rawPath: string) {
      if (method !== "GET") return refusal("method_not_allowed", FILES_METHOD_MESSAGE)
      const rest = rawPath.split("?", 1)[0]!.slice("/resources/".length)
      const verb = rest === "files" || rest === "files/" ? "list" : rest.startsWith("files/") ? "read" : undefined
      if (files === undefined) {
        yield* record(verb === "read" ? "resource_read" : "resource_list", { outcome: "no_resource_plane", generation, ...(verb === "read" ? { path: null, bytes: null, sha256: null } : {}) })
        return refusal("no_resource_plane", NO_RESOURCE_PLANE_MESSAGE)
      }
      const headers = [...common(), ["x-murmur-export-root", files.root] as const]
      const fail = (failure: Failure) => refusal(failure.code, filesMessage(failure, files.maxBytes), [["x-murmur-generation", String(generation)]])
      if (verb === undefined) return refusal("not_found", "the resource plane serves /resources/files and /resources/files/<path>", [["x-murmur-generation", String(generation)]])
      if (verb === "list") {
        const listed = listExport(options.workdir, files.root, files.maxBytes)
        yield* record("resource_list", { outcome: Either.isRight(listed) ? "ok" : listed.left.code, generation, entries: Either.isRight(listed) ? listed.right.length : null })
        if (Either.isLeft(listed)) return fail(listed.left)
        return {
          status: 200,
          headers: [["content-type", "application/json"], ...headers],
          body: JSON.stringify({
            root: files.root,
            mode: files.mode,
            max_bytes: files.maxBytes,
            generation,
            containment_achieved: options.containment,
            entries: listed.right
          })
        } satisfies PlaneResponse
      }
      const relpath = rest.slice("files/".length)
      const opened = Either.flatMap(
        Either.mapLeft(exportComponents(relpath), (code): Failure => ({ code })),
        (components) => openExportFile(options.workdir, files.root, components, files.maxBytes)
      )
      if (Either.isLeft(opened)) {
        yield* record("resource_read", { path: relpath, outcome: opened.left.code, generation, bytes: null, sha256: null })
        return fail(opened.left)
      }
      const { fd, size, mtimeMs } = opened.right
      const sha256 = hashOpened(opened.right)
      yield* record("resource_read", { path: relpath, outcome: "ok", generation, bytes: size, sha256 })
      return {
        status: 200,
        headers: [["content-type", "application/octet-stream"], ["etag", `"sha256:${sha256}"`], ["x-murmur-mtime-ms", String(mtimeMs)], ...headers],
        body: { stream: streamFd(fd, size), length: size }
      } satisfies PlaneResponse
    })

    const peerPlane = Effect.fn("ResourcePlanes.peer")(function*(method: string, rawPath: string, audience: string | undefined) {
      if (method !== "GET") return refusal("method_not_allowed", PEER_METHOD_MESSAGE)
      const path = rawPath.split("?", 1)[0]!
      const token = path.slice(PEER_PREFIX.length + 1)
      // No listing: enumeration is what the plane exists to prevent.
      if (token === "") return refusal("not_found", "the peer plane has no listing; redeem a handle at /resources/peer/<handle>")
      const handleId = PeerHandle.handleId(token)
      const tagged = (code: PlaneRefusal, detail?: string) =>
        refusal(code, peerMessage(code, peerFiles?.maxBytes ?? 0, detail), [["x-murmur-generation", String(generation)], ["x-murmur-handle-id", handleId]])
      const refuse = (code: PlaneRefusal, verifiedPath: string | null, detail?: string) =>
        record("peer_handle_redeem", { handle_id: handleId, path: verifiedPath, generation, audience: audience ?? null, bytes: null, sha256: null, outcome: code }).pipe(
          Effect.as(code === "no_peer_plane" ? refusal(code, NO_PEER_PLANE_MESSAGE, [["x-murmur-generation", String(generation)], ["x-murmur-handle-id", handleId]]) : tagged(code, detail))
        )
      if (peerFiles === undefined) return yield* refuse("no_peer_plane", null)
      if (Either.isLeft(PeerHandle.splitToken(token))) return yield* refuse("malformed_handle", null)
      const asserted = PeerHandle.canonicalAudience(audience ?? "")
      if (asserted === "") return yield* refuse("missing_audience", null)
      const verified = PeerHandle.verify(key, token, asserted, options.sessionId)
      if (Either.isLeft(verified)) return yield* refuse(verified.left, null)
      const p = verified.right.p
      const opened = Either.flatMap(
        Either.mapLeft(plainComponents(p), (code): Failure => ({ code })),
        (components) => openExportFile(options.workdir, peerFiles.root, components, peerFiles.maxBytes)
      )
      if (Either.isLeft(opened)) return yield* refuse(opened.left.code, p, opened.left.detail)
      const { fd, size, mtimeMs } = opened.right
      const sha256 = hashOpened(opened.right)
      yield* record("peer_handle_redeem", { handle_id: handleId, path: p, generation, audience: asserted, bytes: size, sha256, outcome: "ok" })
      return {
        status: 200,
        headers: [
          ["content-type", "application/octet-stream"],
          ["etag", `"sha256:${sha256}"`],
          ["x-murmur-mtime-ms", String(mtimeMs)],
          ...common(),
          ["x-murmur-handle-id", handleId]
        ],
        body: { stream: streamFd(fd, size), length: size }
      } satisfies PlaneResponse
    })

    const share = Effect.fn("ResourcePlanes.share")(function*(path: string, asked: string, ttlSecs: number | undefined) {
      const audience = PeerHandle.canonicalAudience(asked)
      if (peerFiles === undefined) return yield* new SharingRefused({ code: "no_peer_plane", message: NO_PEER_PLANE_MESSAGE })
      const opened = Either.flatMap(
        Either.mapLeft(plainComponents(path), (code): Failure => ({ code })),
        (components) => openExportFile(options.workdir, peerFiles.root, components, Number.MAX_SAFE_INTEGER)
      )
      if (Either.isLeft(opened)) {
        yield* record("peer_handle_mint", { handle_id: null, path, audience, outcome: opened.left.code })
        return yield* new SharingRefused({ code: opened.left.code, message: peerMessage(opened.left.code, peerFiles.maxBytes, opened.left.detail) })
      }
      closeSync(opened.right.fd)
      const canonical = path.endsWith("/") ? path.slice(0, -1) : path
      // A ttl may only narrow the declared ceiling, never widen it.
      const ttl = Math.min(ttlSecs ?? options.maxTtlSecs, options.maxTtlSecs)
      const expires = Date.now() + ttl * 1000
      const handle = PeerHandle.mint(key, { iss: options.sessionId, p: canonical, exp: expires }, audience)
      const handleId = PeerHandle.handleId(handle)
      yield* record("peer_handle_mint", { handle_id: handleId, path: canonical, audience, expires_at_ms: expires, ttl_secs: ttl, outcome: "ok" })
      return { handle, handle_id: handleId, expires_at_ms: expires, audience }
    })

    return ResourcePlanes.of({
      files: filesPlane,
      peer: peerPlane,
      share,
      taskEnded: Effect.sync(() => void generation++)
    })
  })

export const ExportPlanes = {
  /** The session's planes over its export roots; needs the launch's Trace. */
  layer: (options: ExportPlanesOptions) => Layer.effect(ResourcePlanes, makeExportPlanes(options))
}
