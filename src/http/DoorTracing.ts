/**
 * The door's span per request (`Door.request`, kind server), only when tracing is enabled: its
 * parent is the caller's `traceparent` (W3C trace context) when the request carries one, so a
 * client's trace continues into the door and, through `TaskRunner`, into the task it starts.
 */
import { type HttpApp, HttpServerRequest, HttpTraceContext } from "@effect/platform"
import { Effect, Option } from "effect"

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
