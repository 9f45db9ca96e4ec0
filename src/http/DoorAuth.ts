/**
 * Bearer authentication of the door (`serve --auth-token`). With a token set, every request but
 * the public agent card (`GET`/`HEAD` of the two well-known paths) must carry
 * `Authorization: Bearer <token>`; anything else is answered 401 with `WWW-Authenticate: Bearer`
 * before any route runs. The comparison is constant-time: both sides are hashed to SHA-256 and
 * compared with `timingSafeEqual`, so neither the token's length nor a matching prefix shows in
 * the timing. Without a token the door is open, as before (keep it on loopback).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Redacted } from "effect"

const publicPaths = new Set(["/.well-known/agent-card.json", "/.well-known/agent.json"])

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest()

const unauthorized = (challenge: string, message: string) =>
  HttpServerResponse.text(JSON.stringify({ error: "unauthorized", message }), {
    status: 401,
    contentType: "application/json",
    headers: { "www-authenticate": challenge }
  })

const missing = unauthorized(`Bearer realm="capsule-runtime"`, "this door needs an Authorization: Bearer <token> header")
const invalid = unauthorized(`Bearer realm="capsule-runtime", error="invalid_token"`, "the bearer token is not this door's")

/** Whether a request needs no token: the agent card, read with GET or HEAD. */
export const isPublic = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (request.method === "GET" || request.method === "HEAD") && publicPaths.has(request.url.split("?", 1)[0]!)

/**
 * The door's check for a token: `undefined` when the request may pass, else the 401 to answer.
 * Without a token every request passes.
 */
export const bearerCheck = (token: Redacted.Redacted<string> | undefined) => {
  if (token === undefined) return (_: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => undefined
  const expected = digest(Redacted.value(token))
  return (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => {
    if (isPublic(request)) return undefined
    const header = request.headers["authorization"]
    if (header === undefined) return missing
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
    if (match === null) return missing
    return timingSafeEqual(digest(match[1]!), expected) ? undefined : invalid
  }
}
