/**
 * A2A 1.0's HTTP+JSON binding (A2A 1.0 §11), on the door's router beside JSON-RPC: each route is
 * a 1.0 method with its params taken from the path, the query and the body, dispatched as a
 * JSON-RPC call is (./Dispatch.ts), so both bindings share every check and every task.
 *
 * | route                                          | method                           |
 * | ---------------------------------------------- | -------------------------------- |
 * | `POST /message:send`, `POST /message:stream`   | `SendMessage`, `SendStreamingMessage` |
 * | `GET /tasks/{id}`, `GET /tasks`                | `GetTask`, `ListTasks`           |
 * | `POST /tasks/{id}:cancel`                      | `CancelTask`                     |
 * | `GET` or `POST /tasks/{id}:subscribe`          | `SubscribeToTask`                |
 * | `/tasks/{id}/pushNotificationConfigs[/{cfg}]`  | the push-config methods          |
 * | `GET /extendedAgentCard`                       | `GetExtendedAgentCard`           |
 *
 * Answers are `application/a2a+json`; errors a `google.rpc.Status` with 1.0.1's HTTP status
 * (./A2a1Errors.ts); streams SSE whose `data:` is the bare `StreamResponse`. The routes speak
 * only 1.0 (0.3's REST paths were never served here); a request naming another version than 1.0
 * or 0.3 is refused, and one naming none is served as 1.0, as the official SDK's server does.
 */
import type { IncomingHttpHeaders } from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, FiberRef } from "effect"
import { restError } from "./A2a1Errors.js"
import { readBodyLater, readBodyNow } from "./Body.js"
import { header, provenanceOf } from "./CallContext.js"
import { DoorDispatch, whenResponseDone } from "./Dispatch.js"
import { currentPrincipal } from "./DoorAuth.js"
import { DoorConfig } from "./DoorConfig.js"
import { ContentTypeNotSupported, MethodNotFound, ParseError, VersionNotSupported } from "./DoorErrors.js"
import { parseJson } from "./JsonRpc.js"
import { jsonResponse } from "./JsonResponse.js"
import { isObject } from "./ParamChecks.js"
import { negotiate } from "./ProtocolVersion.js"
import { type RpcError, toRpcError } from "./RpcErrors.js"
import { sseHeaders } from "./Sse.js"

const a2aJson = "application/a2a+json"

const a2aResponse = (body: string, status = 200, headers?: Record<string, string>) => jsonResponse(body, status, headers, a2aJson)

const errorResponse = (error: RpcError, status?: number, headers?: Record<string, string>) => {
  const rest = restError(error)
  return a2aResponse(rest.body, status ?? rest.status, headers)
}

/** A route's method, its params from the path and query, and whether it reads a body. */
interface Routed {
  readonly method: string
  readonly params: Record<string, unknown>
  readonly body: "none" | "params" | "optional"
  /** The success status when it is not 200 (a created config, a deleted one). */
  readonly status?: number
}

const decodeSegment = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/** A query value is text; a field the method reads as a number is given as one when it is one. */
const numeric = (query: Record<string, string>, name: string): Record<string, unknown> => {
  const value = query[name]
  return value !== undefined && /^-?\d{1,9}$/.test(value) ? { [name]: Number(value) } : {}
}

/** Which 1.0 method a path names (query already split off), or `undefined` for none. */
export const routeOf = (httpMethod: string, path: string, query: string): Routed | undefined => {
  // Only the routes that read a query pay for parsing one.
  const fromQuery: Record<string, string> = query.length === 0 ? {} : Object.fromEntries(new URLSearchParams(query))
  if (path === "/message:send" && httpMethod === "POST") return { method: "SendMessage", params: {}, body: "params" }
  if (path === "/message:stream" && httpMethod === "POST") return { method: "SendStreamingMessage", params: {}, body: "params" }
  if (path === "/extendedAgentCard" && httpMethod === "GET") return { method: "GetExtendedAgentCard", params: {}, body: "none" }
  if ((path === "/tasks" || path === "/tasks/") && httpMethod === "GET") return { method: "ListTasks", params: fromQuery, body: "none" }
  if (!path.startsWith("/tasks/")) return undefined
  const segments = path.slice("/tasks/".length).split("/").map(decodeSegment)
  if (segments.some((segment) => segment === undefined || segment.length === 0)) return undefined
  const [first, ...rest] = segments as Array<string>
  if (rest.length === 0) {
    // A task id may itself hold a colon: only a known verb after the last one is a verb.
    const colon = first!.lastIndexOf(":")
    const verb = colon < 0 ? undefined : first!.slice(colon + 1)
    const id = verb === "cancel" || verb === "subscribe" ? first!.slice(0, colon) : first!
    if (verb === "cancel" && httpMethod === "POST") return { method: "CancelTask", params: { id }, body: "optional" }
    if (verb === "subscribe" && (httpMethod === "POST" || httpMethod === "GET")) return { method: "SubscribeToTask", params: { id }, body: "none" }
    if (id === first && httpMethod === "GET") return { method: "GetTask", params: { ...fromQuery, ...numeric(fromQuery, "historyLength"), id }, body: "none" }
    return undefined
  }
  if (rest[0] !== "pushNotificationConfigs" || rest.length > 2) return undefined
  const taskId = first!
  const configId = rest[1]
  if (configId === undefined) {
    if (httpMethod === "POST") return { method: "CreateTaskPushNotificationConfig", params: { taskId }, body: "params", status: 201 }
    if (httpMethod === "GET") return { method: "ListTaskPushNotificationConfigs", params: { ...fromQuery, taskId }, body: "none" }
    return undefined
  }
  if (httpMethod === "GET") return { method: "GetTaskPushNotificationConfig", params: { taskId, id: configId }, body: "none" }
  if (httpMethod === "DELETE") return { method: "DeleteTaskPushNotificationConfig", params: { taskId, id: configId }, body: "none", status: 204 }
  return undefined
}

export const makeRestRoute = Effect.gen(function*() {
  const dispatch = yield* DoorDispatch
  const config = yield* DoorConfig

  const call = (
    request: HttpServerRequest.HttpServerRequest,
    headers: IncomingHttpHeaders,
    routed: Routed,
    params: Record<string, unknown>
  ) =>
    Effect.flatMap(FiberRef.get(currentPrincipal), (principal) =>
      Effect.map(
        dispatch({
          whenDone: whenResponseDone(request),
          headers,
          principal,
          provenance: provenanceOf(headers),
          id: null,
          method: routed.method,
          params,
          version: "1.0",
          binding: "HTTP+JSON"
        }),
        (outcome) => {
          if (outcome._tag === "Error") return errorResponse(outcome.error, outcome.status, outcome.headers)
          const result = outcome.result
          if (result._tag === "Sse") return HttpServerResponse.stream(result.body, { contentType: "text/event-stream", headers: sseHeaders })
          if (routed.status === 204) return HttpServerResponse.empty({ status: 204 })
          return a2aResponse(JSON.stringify(result.result), routed.status ?? 200)
        }
      ))

  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const headers = incoming.headers
    const at = request.url.indexOf("?")
    const path = at < 0 ? request.url : request.url.slice(0, at)
    const routed = routeOf(request.method, path, at < 0 ? "" : request.url.slice(at + 1))
    const negotiated = negotiate(headers, request.url)
    const refuse = (error: RpcError) => {
      incoming.resume()
      return Effect.succeed(errorResponse(error))
    }
    if (negotiated._tag === "Unsupported") return refuse(toRpcError(new VersionNotSupported({ requested: negotiated.requested })))
    if (routed === undefined) return refuse(toRpcError(new MethodNotFound({ method: `${request.method} ${path}` })))
    if (routed.body === "none") {
      incoming.resume()
      return call(request, headers, routed, routed.params)
    }
    const contentType = header(headers, "content-type")
    if (contentType !== undefined && !/^application\/(a2a\+)?json\s*(;|$)/i.test(contentType)) {
      return refuse(toRpcError(new ContentTypeNotSupported({ detail: `requests are application/json or ${a2aJson}, not ${contentType}` })))
    }
    const now = readBodyNow(incoming, config.maxBodyBytes)
    return Effect.flatMap(now === undefined ? readBodyLater(incoming, config.maxBodyBytes) : Effect.succeed(now), (body) => {
      if (body._tag === "TooLarge") {
        return Effect.succeed(errorResponse({ code: -32600, message: `Invalid Request: the body exceeds ${body.limit} bytes` }, 413, { connection: "close" }))
      }
      if (body._tag === "Aborted") return Effect.succeed(HttpServerResponse.empty({ status: 400 }))
      if (body.text.trim().length === 0 && routed.body === "optional") return call(request, headers, routed, routed.params)
      const parsed = parseJson(body.text)
      if (parsed._tag === "Left") return Effect.succeed(errorResponse(toRpcError(parsed.left)))
      if (!isObject(parsed.right)) return Effect.succeed(errorResponse(toRpcError(new ParseError({ detail: "the body must be a JSON object" }))))
      // The path names the task: a body cannot move the call to another one.
      return call(request, headers, routed, Object.keys(routed.params).length === 0 ? parsed.right : { ...parsed.right, ...routed.params })
    })
  })
})
