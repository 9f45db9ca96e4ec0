/**
 * JSON-RPC 2.0 envelopes: decoding a request body (never throws; any byte string yields either
 * a request or a typed error with the id to answer with) and encoding responses with the keys in
 * the reference's order (`jsonrpc`, `id`, then `result` or `error`).
 */
import { Either } from "effect"
import { InvalidRequest, ParseError } from "./DoorErrors.js"
import type { RpcError } from "./RpcErrors.js"

export type RpcId = string | number | null

export interface RpcRequest {
  readonly id: RpcId
  readonly method: string
  readonly params: unknown
}

export interface EnvelopeFailure {
  readonly id: RpcId
  readonly error: ParseError | InvalidRequest
}

const isId = (value: unknown): value is RpcId =>
  value === null || typeof value === "string" || (typeof value === "number" && Number.isFinite(value))

/** The id to echo from any parsed value: the request's if it is a valid id, else null. */
export const idOf = (value: unknown): RpcId => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null
  const id = (value as { id?: unknown }).id
  return isId(id) ? id : null
}

export const parseJson = (text: string): Either.Either<unknown, ParseError> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (error) {
    return Either.left(new ParseError({ detail: error instanceof Error ? error.message : String(error) }))
  }
}

/** Validates a parsed body as a JSON-RPC 2.0 request (a missing `id` is answered with `null`). */
export const decodeEnvelope = (value: unknown): Either.Either<RpcRequest, EnvelopeFailure> => {
  const fail = (detail: string) => Either.left({ id: idOf(value), error: new InvalidRequest({ detail }) })
  if (Array.isArray(value)) return fail("batch requests are not supported")
  if (typeof value !== "object" || value === null) return fail("the request must be a JSON object")
  const body = value as Record<string, unknown>
  if (body.jsonrpc !== "2.0") return fail(`"jsonrpc" must be "2.0"`)
  if (typeof body.method !== "string" || body.method.length === 0) return fail(`"method" must be a non-empty string`)
  if ("id" in body && !isId(body.id)) return fail(`"id" must be a string, a number or null`)
  const params = body.params
  if (params !== undefined && (typeof params !== "object" || params === null)) {
    return fail(`"params" must be an object or an array`)
  }
  return Either.right({ id: (body.id ?? null) as RpcId, method: body.method, params: params ?? {} })
}

/** Parses and validates a body; the `Left` carries the id to answer with. */
export const decodeRequest = (text: string): Either.Either<RpcRequest, EnvelopeFailure> =>
  Either.match(parseJson(text), {
    onLeft: (error) => Either.left({ id: null, error }),
    onRight: decodeEnvelope
  })

/**
 * Whether a parsed JSON value nests arrays and objects deeper than `limit` (a scalar is depth 0).
 * Iterative, stopping at the first path past the limit: deep values would overflow the stack of
 * anything recursive downstream (Schema's decoder and error formatter).
 */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  let top: { readonly value: unknown; readonly depth: number } | undefined
  while ((top = stack.pop()) !== undefined) {
    if (typeof top.value !== "object" || top.value === null) continue
    const depth = top.depth + 1
    if (depth > limit) return true
    const children = Array.isArray(top.value) ? top.value : Object.values(top.value)
    for (const child of children) if (typeof child === "object" && child !== null) stack.push({ value: child, depth })
  }
  return false
}

export const encodeResult = (id: RpcId, result: unknown): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result)}}`

export const encodeError = (id: RpcId, error: RpcError): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(error)}}`
