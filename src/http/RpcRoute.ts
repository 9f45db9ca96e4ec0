/**
 * `POST /`: body (with its limit), completion addressing, envelope, version, dispatch
 * (./Dispatch.ts) and the answer. Every outcome is a well-formed response: JSON-RPC answers use
 * HTTP 200, transport problems (oversized body, wrong media type) their HTTP status with a
 * JSON-RPC error body. A 1.0 method (./ProtocolVersion.ts) is answered in 1.0's shapes, its
 * errors with 1.0's `ErrorInfo` details.
 */
import type { IncomingHttpHeaders } from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, FiberRef } from "effect"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { v1Error } from "./A2a1Errors.js"
import { type BodyOutcome, readBodyLater, readBodyNow } from "./Body.js"
import { header, provenanceOf } from "./CallContext.js"
import { DoorDispatch, whenResponseDone } from "./Dispatch.js"
import { currentPrincipal } from "./DoorAuth.js"
import { DoorConfig } from "./DoorConfig.js"
import type { Principal } from "./DoorScopes.js"
import { CompletionMisaddressed, VersionNotSupported } from "./DoorErrors.js"
import { jsonResponse } from "./JsonResponse.js"
import { decodeRequest, encodeError, encodeResult, idOf, parseJson, type RpcId } from "./JsonRpc.js"
import { negotiate, speaksV1 } from "./ProtocolVersion.js"
import { type RpcError, toRpcError } from "./RpcErrors.js"
import { sseHeaders } from "./Sse.js"

export const makeRpcRoute = Effect.gen(function*() {
  const dispatch = yield* DoorDispatch
  const identity = yield* SessionIdentity
  const config = yield* DoorConfig

  /** What a fully read body is answered: envelope, checks, dispatch and encoding. */
  const answer = (
    request: HttpServerRequest.HttpServerRequest,
    headers: IncomingHttpHeaders,
    body: BodyOutcome,
    principal: Principal
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    const negotiated = negotiate(headers, request.url)
    // Before a method is known, the header alone says which shape an error takes.
    let v1 = negotiated._tag === "Unsupported" || negotiated.version === "1.0"
    const errorResponse = (id: RpcId, error: RpcError, status = 200, extra?: Record<string, string>) =>
      jsonResponse(encodeError(id, v1 ? v1Error(error) : error), status, extra)
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
    if (negotiated._tag === "Unsupported") {
      return Effect.succeed(errorResponse(id, toRpcError(new VersionNotSupported({ requested: negotiated.requested }))))
    }
    v1 = speaksV1(method)
    return Effect.map(
      dispatch({ whenDone: whenResponseDone(request), headers, principal, provenance, id, method, params, version: v1 ? "1.0" : "0.3", binding: "JSONRPC" }),
      (outcome) => {
        if (outcome._tag === "Error") return errorResponse(id, outcome.error, outcome.status, outcome.headers)
        const result = outcome.result
        return result._tag === "Json"
          ? jsonResponse(encodeResult(id, result.result))
          : HttpServerResponse.stream(result.body, { contentType: "text/event-stream", headers: sseHeaders })
      }
    )
  }

  // Plain functions around one Effect per step that can wait (the body, the method): a request
  // whose body Node already holds is answered without a generator or an extra suspension.
  return Effect.flatMap(Effect.zip(HttpServerRequest.HttpServerRequest, FiberRef.get(currentPrincipal)), ([request, principal]) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const headers = incoming.headers
    const contentType = header(headers, "content-type")
    if (contentType !== undefined && !/json/i.test(contentType)) {
      incoming.resume()
      return Effect.succeed(jsonResponse(
        encodeError(null, { code: -32600, message: `Invalid Request: content-type must be application/json, not ${contentType}` }),
        415,
        { connection: "close" }
      ))
    }
    const now = readBodyNow(incoming, config.maxBodyBytes)
    return now === undefined
      ? Effect.flatMap(readBodyLater(incoming, config.maxBodyBytes), (body) => answer(request, headers, body, principal))
      : answer(request, headers, now, principal)
  })
})
