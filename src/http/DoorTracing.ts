/**
 * What the door adds per request only when asked: a span (`Door.request`, kind server) when
 * tracing is enabled, whose parent is the caller's `traceparent` (W3C trace context) when the
 * request carries one, so a client's trace continues into the door and, through `TaskRunner`,
 * into the task it starts; and a debug log line when debug logs are on.
 */
import { type HttpApp, HttpServerRequest, HttpTraceContext } from "@effect/platform"
import { Effect, Option } from "effect"

/** A debug line per request: method, path, status and duration (only when debug logs are on). */
export const loggedApp = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = Date.now()
    return app.pipe(Effect.tap((response) =>
      Effect.logDebug("request").pipe(Effect.annotateLogs({
        method: request.method,
        path: request.url.split("?", 1)[0],
        status: response.status,
        duration_ms: Date.now() - started
      }))
    ))
  })

export const tracedApp = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const parent = HttpTraceContext.fromHeaders(request.headers)
    return app.pipe(
      Effect.tap((response) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
      Effect.withSpan("Door.request", {
        kind: "server",
        attributes: { "http.request.method": request.method, "url.path": request.url.split("?", 1)[0] },
        ...(Option.isSome(parent) ? { parent: parent.value } : {})
      })
    )
  })
