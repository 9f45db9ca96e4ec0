/**
 * JSON-RPC errors in A2A 1.0's shape, and the same errors as HTTP+JSON answers. 1.0 keeps the
 * codes and adds details: `data` is a list of ProtoJSON `Any`s, the first a
 * `google.rpc.ErrorInfo` whose `reason` names the error (clients of the HTTP+JSON binding map
 * errors by it alone, since several share a status), with the 0.3 `data` fields as its string
 * metadata. Over HTTP+JSON the body is a `google.rpc.Status` under `error`, with the status code
 * of 1.0.1's table (A2A 1.0 §5.4, §11.6).
 */
import type { RpcError } from "./RpcErrors.js"

const a2aDomain = "a2a-protocol.org"
const ownDomain = "capsule-runtime"

interface Mapping {
  readonly reason: string
  readonly domain: string
  readonly http: number
  readonly status: string
}

const a2a = (reason: string, http: number, status: string): Mapping => ({ reason, domain: a2aDomain, http, status })
const own = (reason: string, http: number, status: string): Mapping => ({ reason, domain: ownDomain, http, status })

const mappings: ReadonlyMap<number, Mapping> = new Map([
  [-32001, a2a("TASK_NOT_FOUND", 404, "NOT_FOUND")],
  [-32002, a2a("TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION")],
  [-32003, a2a("PUSH_NOTIFICATION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION")],
  [-32004, a2a("UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION")],
  [-32005, a2a("CONTENT_TYPE_NOT_SUPPORTED", 400, "INVALID_ARGUMENT")],
  [-32006, a2a("INVALID_AGENT_RESPONSE", 500, "INTERNAL")],
  [-32007, a2a("EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400, "FAILED_PRECONDITION")],
  [-32008, a2a("EXTENSION_SUPPORT_REQUIRED", 400, "FAILED_PRECONDITION")],
  [-32009, a2a("VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION")],
  [-32602, a2a("INVALID_PARAMS", 400, "INVALID_ARGUMENT")],
  [-32700, own("PARSE_ERROR", 400, "INVALID_ARGUMENT")],
  [-32600, own("INVALID_REQUEST", 400, "INVALID_ARGUMENT")],
  [-32601, own("METHOD_NOT_FOUND", 404, "UNIMPLEMENTED")],
  [-32603, own("INTERNAL", 500, "INTERNAL")],
  [-32029, own("TOO_MANY_STREAMS", 429, "RESOURCE_EXHAUSTED")],
  [-32031, own("TOO_MANY_PUSH_CONFIGS", 429, "RESOURCE_EXHAUSTED")],
  [-32043, own("INSUFFICIENT_SCOPE", 403, "PERMISSION_DENIED")]
])

const fallback = own("INTERNAL", 500, "INTERNAL")

/** `ErrorInfo.metadata` is string to string: scalar fields of the 0.3 `data`, stringified. */
const metadataOf = (data: unknown): Record<string, string> | undefined => {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return undefined
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(data)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") out[key] = String(value)
  }
  return Object.keys(out).length === 0 ? undefined : out
}

const detailsOf = (error: RpcError) => {
  const mapping = mappings.get(error.code) ?? fallback
  const metadata = metadataOf(error.data)
  return [{
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    reason: mapping.reason,
    domain: mapping.domain,
    ...(metadata === undefined ? {} : { metadata })
  }]
}

/** The JSON-RPC error object of a 1.0 call. */
export const v1Error = (error: RpcError): RpcError => ({ code: error.code, message: error.message, data: detailsOf(error) })

/** The HTTP+JSON answer of the same error: its status and `{"error": google.rpc.Status}` body. */
export const restError = (error: RpcError): { readonly status: number; readonly body: string } => {
  const mapping = mappings.get(error.code) ?? fallback
  return {
    status: mapping.http,
    body: JSON.stringify({ error: { code: mapping.http, status: mapping.status, message: error.message, details: detailsOf(error) } })
  }
}

/**
 * The same error for the gRPC binding (../grpc/GrpcStatus.ts): its gRPC status by 1.0.1's table
 * (the code's name, as HTTP+JSON's `status`) and the `ErrorInfo` that goes in `status.details`.
 */
export const grpcErrorOf = (error: RpcError) => {
  const mapping = mappings.get(error.code) ?? fallback
  return { status: mapping.status, reason: mapping.reason, domain: mapping.domain, metadata: metadataOf(error.data) ?? {} }
}
