/**
 * What a JSON-RPC method handler sees of its HTTP request: the envelope, the headers of spec §3
 * read verbatim (names are case-insensitive, values are not lowercased), the dialect signals of
 * a2a-protocol.md D13 and the request's provenance.
 */
import type { IncomingHttpHeaders } from "node:http"
import type { Origin, Provenance, Trust } from "../services/Task.js"
import type { A2aVersion, Binding } from "./A2aWire.js"
import type { Principal } from "./DoorScopes.js"
import { header } from "./Header.js"
import type { RpcId } from "./JsonRpc.js"

export interface CallContext {
  readonly id: RpcId
  readonly method: string
  readonly params: unknown
  /** The request speaks A2A (a 1.0 method, or 0.3's header, media type or `kind` fields), not the reference's dialect. */
  readonly a2a: boolean
  /** Which A2A spelling answers it (./ProtocolVersion.ts): 1.0 for 1.0 methods and routes. */
  readonly version: A2aVersion
  readonly binding: Binding
  readonly lastEventId: number | undefined
  readonly provenance: Provenance
  /** Who called (./DoorScopes.ts): what it may see of other principals' tasks and contexts. */
  readonly principal: Principal
}

export { header } from "./Header.js"

export const parseLastEventId = (value: string | undefined): number | undefined => {
  if (value === undefined || !/^\s*\d{1,15}\s*$/.test(value)) return undefined
  return Number.parseInt(value, 10)
}

/** Origin and trust claims (reference origin.rs): only `peer` and `completion` come from the wire. */
export const provenanceOf = (headers: IncomingHttpHeaders): Provenance => {
  const claimed = header(headers, "x-murmur-task-origin")?.trim()
  const origin: Origin = claimed === "peer" || claimed === "completion" ? claimed : "event"
  const trustClaim = header(headers, "x-murmur-task-trust")?.trim()
  const trust: Trust = origin !== "event" && trustClaim === "trusted" ? "trusted" : "untrusted"
  const delegationId = origin === "completion" ? header(headers, "x-murmur-delegation-id")?.trim() : undefined
  const traceparent = header(headers, "traceparent")?.trim()
  return {
    origin,
    trust,
    ...(delegationId === undefined || delegationId.length === 0 ? {} : { delegationId }),
    ...(traceparent === undefined || traceparent.length === 0 ? {} : { traceparent })
  }
}

const hasKind = (params: unknown): boolean => {
  if (typeof params !== "object" || params === null) return false
  const record = params as { configuration?: unknown; message?: unknown }
  if (record.configuration !== undefined) return true
  const message = record.message
  if (typeof message !== "object" || message === null) return false
  const { kind, parts } = message as { kind?: unknown; parts?: unknown }
  if (kind === "message") return true
  return Array.isArray(parts) && parts.some((part) => typeof part === "object" && part !== null && "kind" in part)
}

export const speaksA2a = (headers: IncomingHttpHeaders, params: unknown): boolean =>
  header(headers, "a2a-version") !== undefined ||
  (header(headers, "accept") ?? "").includes("application/a2a+json") ||
  hasKind(params)
