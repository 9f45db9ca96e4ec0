/**
 * A JSON answer with its length known: the body stays a string (no `TextEncoder` copy), so Node
 * writes head and body in one piece. JSON-RPC answers are `application/json`, HTTP+JSON ones
 * `application/a2a+json`.
 */
import { HttpServerResponse } from "@effect/platform"

export const jsonResponse = (body: string, status = 200, headers?: Record<string, string>, contentType = "application/json") =>
  HttpServerResponse.raw(body, {
    status,
    contentType,
    contentLength: Buffer.byteLength(body),
    ...(headers === undefined ? {} : { headers })
  })
