/**
 * `POST /`: body (with its limit), completion addressing and proof, envelope, dispatch, and the answer.
 * Every outcome is a well-formed response: JSON-RPC answers use HTTP 200, transport problems
 * (oversized body, wrong media type) their HTTP status with a JSON-RPC error body. Before a
 * method runs, its params' nesting is bounded and a streaming call takes a stream slot.
 */
import type { IncomingHttpHeaders } from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Either, FiberRef } from "effect"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { type BodyOutcome, readBodyLater, readBodyNow } from "./Body.js"
import { type CallContext, header, parseLastEventId, provenanceOf, speaksA2a } from "./CallContext.js"
import { currentPrincipal, scopeChallenge, scopeMessage } from "./DoorAuth.js"
import { DoorConfig } from "./DoorConfig.js"
import { allows, type Principal, scopeOf } from "./DoorScopes.js"
import { CompletionMisaddressed, InvalidParams, MethodNotFound, TooManyStreams } from "./DoorErrors.js"
import { decodeRequest, encodeError, encodeResult, idOf, nestsDeeperThan, parseJson, type RpcId } from "./JsonRpc.js"
import { makeMethods, type MethodResult, streamingMethods } from "./RpcMethods.js"
import { internalError, type RpcError, toRpcError } from "./RpcErrors.js"
import { sseHeaders } from "./Sse.js"
import { makeStreamSlots } from "./StreamSlots.js"

/**
 * A JSON answer with its length known: the body stays a string (no `TextEncoder` copy), so Node
 * writes head and body in one piece.
 */
const jsonResponse = (body: string, status = 200, headers?: Record<string, string>) =>
  HttpServerResponse.raw(body, {
    status,
    contentType: "application/json",
    contentLength: Buffer.byteLength(body),
    ...(headers === undefined ? {} : { headers })
  })

/** The methods that start a task (and so turn a completion into one). */
const taskStarting: ReadonlySet<string> = new Set(["message/send", "message/stream"])

const errorResponse = (id: RpcId, error: RpcError, status = 200, headers?: Record<string, string>) =>
  jsonResponse(encodeError(id, error), status, headers)

/**
 * A known token without the method's scope: HTTP 403 with RFC 6750's challenge, and a JSON-RPC
 * error whose data names the scope. Implementation-defined code, clear of A2A's -32001…-32009;
 * 43 recalls HTTP 403.
 */
export const insufficientScopeCode = -32043

const insufficientScope = (id: RpcId, principal: Principal, scope: string, method: string) =>
  errorResponse(id, {
    code: insufficientScopeCode,
    message: `Forbidden: ${scopeMessage(principal, scope)}`,
    data: { error: "insufficient_scope", scope, method, principal: principal.name }
  }, 403, { "www-authenticate": scopeChallenge(scope) })

export const makeRpcRoute = Effect.gen(function*() {
  const methods = yield* makeMethods
  const identity = yield* SessionIdentity
  const config = yield* DoorConfig
  const delegations = yield* DelegationTracker
  const slots = makeStreamSlots(config.maxWatchers)

  /** What a fully read body is answered: envelope, checks, dispatch and encoding. */
  const answer = (
    request: HttpServerRequest.HttpServerRequest,
    headers: IncomingHttpHeaders,
    body: BodyOutcome,
    principal: Principal
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    if (body._tag === "TooLarge") {
      return Effect.succeed(errorResponse(null, { code: -32600, message: `Invalid Request: the body exceeds ${body.limit} bytes` }, 413, {
        connection: "close"
      }))
    }
    if (body._tag === "Aborted") return Effect.succeed(HttpServerResponse.empty({ status: 400 }))

    const provenance = provenanceOf(headers)
    if (provenance.origin === "completion") {
      const addressed = header(headers, "x-murmur-completion-session")?.trim()
      if (addressed !== identity.sessionId) {
        const id = Either.getOrElse(Either.map(parseJson(body.text), idOf), () => null)
        return Effect.succeed(errorResponse(id, toRpcError(new CompletionMisaddressed(addressed === undefined ? {} : { addressed }))))
      }
    }

    const decoded = decodeRequest(body.text)
    if (Either.isLeft(decoded)) return Effect.succeed(errorResponse(decoded.left.id, toRpcError(decoded.left.error)))
    const { id, method, params } = decoded.right
    const handler = methods.get(method)
    if (handler === undefined) return Effect.succeed(errorResponse(id, toRpcError(new MethodNotFound({ method }))))
    const scope = scopeOf(method, provenance.origin)
    if (scope !== undefined && !allows(principal, scope, method)) return Effect.succeed(insufficientScope(id, principal, scope, method))
    if (nestsDeeperThan(params, config.maxParamsDepth)) {
      return Effect.succeed(errorResponse(id, toRpcError(new InvalidParams({ detail: `params nest deeper than ${config.maxParamsDepth} levels` }))))
    }
    if (streamingMethods.has(method)) {
      const release = slots.acquire()
      if (release === undefined) return Effect.succeed(errorResponse(id, toRpcError(new TooManyStreams({ limit: config.maxWatchers }))))
      // The slot is held while the response is open: a stream's whole life, or a JSON answer's
      // moment. Node emits `close` on every response, finished or cut, so no slot is lost.
      const response = NodeHttpServerRequest.toServerResponse(request)
      if (response.closed) release()
      else response.once("close", release)
    }

    const call: CallContext = {
      id,
      method,
      params,
      a2a: speaksA2a(headers, params),
      lastEventId: parseLastEventId(header(headers, "last-event-id")),
      provenance,
      principal
    }
    // A completion that would start a task must prove it is its delegation's one completion.
    const run = provenance.origin === "completion" && taskStarting.has(method)
      ? completing(provenance.delegationId, header(headers, "x-murmur-completion-secret")?.trim(), handler(call))
      : handler(call)
    return Effect.matchCauseEffect(run, {
      onSuccess: (outcome) =>
        Effect.succeed(
          outcome._tag === "Json"
            ? jsonResponse(encodeResult(id, outcome.result))
            : HttpServerResponse.stream(outcome.body, { contentType: "text/event-stream", headers: sseHeaders })
        ),
      onFailure: (cause) => {
        const failure = Cause.failureOption(cause)
        if (failure._tag === "Some") return Effect.succeed(errorResponse(id, toRpcError(failure.value)))
        // Interruption only (a client abort): no failure in it, so nothing of `RpcFailure` escapes.
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        return Effect.logError("JSON-RPC handler died", cause).pipe(Effect.as(errorResponse(id, internalError)))
      }
    })
  }

  /** Claims the delegation's completion around `started`; it counts once a task exists. */
  const completing = <E, R>(delegationId: string | undefined, secret: string | undefined, started: Effect.Effect<MethodResult, E, R>) =>
    Effect.flatMap(delegations.claim(delegationId, secret), () =>
      Effect.onExit(started, (exit) => {
        const outcome = exit._tag === "Success" ? exit.value : undefined
        const task = outcome?._tag === "Json" ? outcome.result as { id?: unknown; status?: { state?: unknown } } | undefined : undefined
        const took = outcome !== undefined && (outcome._tag !== "Json" || (typeof task?.id === "string" && task.status?.state !== "rejected"))
        return delegations.settle(delegationId!, took, typeof task?.id === "string" ? task.id : undefined)
      }))

  // Plain functions around one Effect per step that can wait (the body, the method): a request
  // whose body Node already holds is answered without a generator or an extra suspension.
  return Effect.flatMap(Effect.zip(HttpServerRequest.HttpServerRequest, FiberRef.get(currentPrincipal)), ([request, principal]) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const headers = incoming.headers
    const contentType = header(headers, "content-type")
    if (contentType !== undefined && !/json/i.test(contentType)) {
      incoming.resume()
      return Effect.succeed(errorResponse(null, { code: -32600, message: `Invalid Request: content-type must be application/json, not ${contentType}` }, 415, {
        connection: "close"
      }))
    }
    const now = readBodyNow(incoming, config.maxBodyBytes)
    return now === undefined
      ? Effect.flatMap(readBodyLater(incoming, config.maxBodyBytes), (body) => answer(request, headers, body, principal))
      : answer(request, headers, now, principal)
  })
})
