/**
 * Bearer authentication of the door (`--auth-token`, `--auth-tokens-file`; ./DoorCredentials.ts).
 * With any token set, every request but the public agent card (`GET`/`HEAD` of the two well-known
 * paths) must present one: anything else is answered 401 with `WWW-Authenticate: Bearer` before
 * any route runs. A known token whose principal lacks the scope the request needs is answered 403
 * `insufficient_scope` naming that scope (RFC 6750 §3.1), here for the file planes and in
 * ./RpcRoute.ts for a method. Without a token the door is open, as before (keep it on loopback).
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { FiberRef } from "effect"
import type { DoorCredentials } from "./DoorCredentials.js"
import { allowsResources, anonymous, type Principal } from "./DoorScopes.js"

const publicPaths = new Set(["/.well-known/agent-card.json", "/.well-known/agent.json"])

const realm = `realm="capsule-runtime"`

const unauthorized = (challenge: string, message: string) =>
  HttpServerResponse.text(JSON.stringify({ error: "unauthorized", message }), {
    status: 401,
    contentType: "application/json",
    headers: { "www-authenticate": challenge }
  })

const missing = unauthorized(`Bearer ${realm}`, "this door needs an Authorization: Bearer <token> header")
const invalid = unauthorized(`Bearer ${realm}, error="invalid_token"`, "the bearer token is not one of this door's")

/** The challenge of a 403 for a known token that lacks `scope`. */
export const scopeChallenge = (scope: string) => `Bearer ${realm}, error="insufficient_scope", scope="${scope}"`

/** The sentence a 403 carries; it goes only to the holder of the principal's own token. */
export const scopeMessage = (principal: Principal, scope: string) => `principal '${principal.name}' does not hold the scope '${scope}'`

/** The principal a request was authenticated as, for the routes it reaches (`anonymous` on an open door). */
export const currentPrincipal = FiberRef.unsafeMake<Principal>(anonymous)

/** Whether a request needs no token: the agent card, read with GET or HEAD. */
export const isPublic = (request: HttpServerRequest.HttpServerRequest): boolean =>
  (request.method === "GET" || request.method === "HEAD") && publicPaths.has(request.url.split("?", 1)[0]!)

/**
 * The door's check: the request's principal, or the 401/403 to answer instead. The file planes
 * under `/resources/` need the `resources` scope; JSON-RPC methods are checked once the method is
 * known.
 */
export const bearerCheck = (credentials: DoorCredentials) =>
(request: HttpServerRequest.HttpServerRequest): Principal | HttpServerResponse.HttpServerResponse => {
  if (credentials.open) return anonymous
  if (isPublic(request)) return anonymous
  const found = credentials.authenticate(request.headers["authorization"])
  if (found === "missing") return missing
  if (found === "invalid") return invalid
  if (request.url.startsWith("/resources/") && !allowsResources(found)) {
    return HttpServerResponse.text(JSON.stringify({ error: "insufficient_scope", message: scopeMessage(found, "resources"), scope: "resources" }), {
      status: 403,
      contentType: "application/json",
      headers: { "www-authenticate": scopeChallenge("resources") }
    })
  }
  return found
}
