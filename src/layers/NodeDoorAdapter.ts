/**
 * A small Node adapter for `@effect/platform` HTTP apps (the door's `HttpRouter`), used instead
 * of `NodeHttpServer`'s request handling, which cost the door about 40% more CPU per request
 * (docs/benchmarks.md). Routing, request and response types and failure mapping stay
 * `@effect/platform`'s; what changes is how a request becomes a fiber and a response becomes
 * bytes:
 *
 * - one fiber per request, started from a `Runtime` whose context is the serving context plus
 *   the `HttpServerRequest`: no per-request `provideService`, `Scope` or tracer span (handlers
 *   that need a scope open one themselves; `Scope` is removed from the context, so a handler
 *   that asks for one fails loudly instead of borrowing the server's);
 * - the fiber starts a microtask after Node's `request` event, once the parser is done with the
 *   bytes at hand: a small request's body is then already buffered in the `IncomingMessage`, so a
 *   handler may take it without suspending; a request whose client left by then is not started;
 * - the fiber starts uninterruptible and without runtime metrics, as `HttpApp.toHandled` runs it
 *   uninterruptible: the router makes each route's handler interruptible unless the route says
 *   otherwise;
 * - the response is written from the fiber's exit observer, synchronously, except `Stream`
 *   bodies, which run in a fiber of their own (inheriting the handler fiber's refs) that writes
 *   each Effect chunk as one write and waits for `drain` when Node's buffer is full
 *   (backpressure);
 * - the running fiber (handler, then body stream) is interrupted with
 *   `HttpServerError.clientAbortFiberId` when the response closes before it finished;
 * - failures become responses with `HttpServerError.causeResponse` (500 when even that fails; a
 *   stream failing part-way ends the response after what was sent); what is left of the cause is
 *   logged (defects at error level, expected failures at debug, as the runtime reports the stock
 *   adapter's failed fibers); `HEAD` gets the head and no body (a stream body never runs);
 *   `HttpApp.currentPreResponseHandlers` run before a response is written.
 *
 * The request wrapper is our own `HttpServerRequest` over the Node `IncomingMessage`, exposing
 * `source` and `response` like platform-node's, so `NodeHttpServerRequest.toIncomingMessage`
 * and `toServerResponse` work on it. The adapter reads no body itself. It does not upgrade
 * connections (`request.upgrade` fails): the door serves no WebSocket.
 *
 * Re-check this module on every `@effect/platform` upgrade: it leans on the router applying
 * interruptibility per route and on `causeResponse`'s contract.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { ListenOptions } from "node:net"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import {
  Cookies,
  type Headers,
  HttpApp,
  HttpIncomingMessage,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  type HttpServerResponse,
  UrlParams
} from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { NodeHttpServer, NodeMultipart, NodeStream } from "@effect/platform-node"
import { Cause, Chunk, Context, Effect, type Exit, type Fiber, Inspectable, Layer, Option, Runtime, RuntimeFlags, Scope, Stream } from "effect"

// ---------------------------------------------------------------------------------------------
// The request

const incomingTypeId: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
const requestTypeId: HttpServerRequest.TypeId = HttpServerRequest.TypeId

/** `HttpServerRequest` over a Node request, as platform-node's wrapper behaves. */
class DoorServerRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [incomingTypeId]: HttpIncomingMessage.TypeId = incomingTypeId
  readonly [requestTypeId]: HttpServerRequest.TypeId = requestTypeId

  constructor(
    readonly source: IncomingMessage,
    readonly response: ServerResponse,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string
  ) {
    super()
  }

  private readonly onError = (cause: unknown) =>
    new HttpServerError.RequestError({ request: this, reason: "Decode", cause })

  get originalUrl(): string {
    return this.source.url ?? "/"
  }
  get method(): HttpMethod {
    return (this.source.method ?? "GET").toUpperCase() as HttpMethod
  }
  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }
  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }
  private cachedCookies: Record<string, string> | undefined
  get cookies(): Record<string, string> {
    return this.cachedCookies ??= Cookies.parseHeader(this.headers["cookie"] ?? "")
  }

  private textEffect: Effect.Effect<string, HttpServerError.RequestError> | undefined
  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    return this.textEffect ??= Effect.runSync(Effect.cached(Effect.flatMap(HttpIncomingMessage.MaxBodySize, (maxBytes) =>
      NodeStream.toString(() => this.source, { onFailure: this.onError, maxBytes: Option.getOrUndefined(maxBytes) }))))
  }
  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return Effect.tryMap(this.text, { try: (text) => (text === "" ? null : JSON.parse(text)), catch: this.onError })
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: this.onError }))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return Effect.flatMap(HttpIncomingMessage.MaxBodySize, (maxBytes) =>
      NodeStream.toUint8Array(() => this.source, { onFailure: this.onError, maxBytes: Option.getOrUndefined(maxBytes) })).pipe(
        Effect.map((bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
      )
  }
  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return NodeStream.fromReadable(() => this.source, this.onError)
  }
  get multipart() {
    return NodeMultipart.persisted(this.source, this.source.headers)
  }
  get multipartStream() {
    return NodeMultipart.stream(this.source, this.source.headers)
  }
  get upgrade(): Effect.Effect<never, HttpServerError.RequestError> {
    return Effect.fail(new HttpServerError.RequestError({ request: this, reason: "Decode", description: "the door does not upgrade connections" }))
  }
  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }): HttpServerRequest.HttpServerRequest {
    return new DoorServerRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride
    )
  }
  override toString(): string {
    return `ServerRequest(${this.method} ${this.url})`
  }
  toJSON(): unknown {
    return { _id: "@effect/platform/HttpServerRequest", method: this.method, url: this.originalUrl }
  }
}

// ---------------------------------------------------------------------------------------------
// Writing responses

const headersOf = (response: HttpServerResponse.HttpServerResponse): Record<string, string | Array<string>> => {
  if (Cookies.isEmpty(response.cookies)) return response.headers as Record<string, string>
  const headers: Record<string, string | Array<string>> = { ...response.headers }
  const cookies = Cookies.toSetCookieHeaders(response.cookies)
  const existing = headers["set-cookie"]
  if (existing !== undefined) cookies.push(...(Array.isArray(existing) ? existing : [existing as string]))
  headers["set-cookie"] = cookies
  return headers
}

const writeHead = (res: ServerResponse, response: HttpServerResponse.HttpServerResponse) => {
  const headers = headersOf(response)
  if (response.statusText === undefined) res.writeHead(response.status, headers)
  else res.writeHead(response.status, response.statusText, headers)
}

/** Ends a response that could not be produced or finished: an error status if the head is still ours to write. */
const abandon = (res: ServerResponse, status: number) => {
  if (res.destroyed || res.writableEnded) return
  if (!res.headersSent) res.writeHead(status, { "content-length": "0" })
  res.end()
}

/**
 * Writes a stream body one Effect chunk at a time (a chunk of several pieces as one write, so one
 * HTTP chunk and one syscall), waiting for `drain` whenever Node's buffer is full (backpressure).
 */
const writeStream = (res: ServerResponse, stream: Stream.Stream<Uint8Array, unknown>) =>
  Stream.runForEachChunk(stream, (chunk) => {
    const size = Chunk.size(chunk)
    if (size === 0) return Effect.void
    const ok = res.write(size === 1 ? Chunk.unsafeHead(chunk) : Buffer.concat(Chunk.toReadonlyArray(chunk)))
    if (ok || res.destroyed) return Effect.void
    return Effect.async<void>((resume) => {
      const go = () => {
        res.off("drain", go)
        res.off("close", go)
        resume(Effect.void)
      }
      res.on("drain", go)
      res.on("close", go)
      return Effect.sync(() => {
        res.off("drain", go)
        res.off("close", go)
      })
    })
  })

// ---------------------------------------------------------------------------------------------
// Serving

/** Logs what `causeResponse` left of a failed request: defects loudly, expected failures at debug. */
const reportCause = (cause: Cause.Cause<unknown>) => {
  const defects = Chunk.toReadonlyArray(Cause.defects(cause)).filter((defect) => !isResponse(defect))
  return defects.length > 0
    ? Effect.logError("door request failed", cause)
    : Effect.logDebug("door request failed", cause)
}

const isResponse = (u: unknown): u is HttpServerResponse.HttpServerResponse =>
  typeof u === "object" && u !== null && Symbol.for("@effect/platform/HttpServerResponse") in u

/**
 * Serves an HTTP app (an `HttpRouter`, possibly with middleware applied) on a Node server until
 * the scope closes. The app runs with the context this effect runs in, plus the request.
 */
export const serve = <E, R>(
  app: HttpApp.Default<E, R>,
  server: Server
): Effect.Effect<void, never, Scope.Scope | Exclude<R, HttpServerRequest.HttpServerRequest>> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<Exclude<R, HttpServerRequest.HttpServerRequest>>()
    const handler = makeHandler(app, runtime as Runtime.Runtime<unknown>)
    server.on("request", handler)
    yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
  })

/** The Node `request` listener for an app, given the runtime whose context the app runs with. */
export const makeHandler = <E, R>(app: HttpApp.Default<E, R>, runtime: Runtime.Runtime<unknown>) => {
  // Handlers get no per-request scope: take the server's out so nothing borrows it by accident.
  const base = Context.omit(Scope.Scope)(runtime.context) as Context.Context<unknown>
  // Request fibers start uninterruptible (the router opens each route's handler to interruption)
  // and without runtime metrics (the runtime's fiber counters and lifetime histogram).
  const requestFlags = RuntimeFlags.disable(
    RuntimeFlags.disable(runtime.runtimeFlags, RuntimeFlags.Interruption),
    RuntimeFlags.RuntimeMetrics
  )
  const backgroundRuntime = Runtime.make({ context: base, fiberRefs: runtime.fiberRefs, runtimeFlags: runtime.runtimeFlags }) as Runtime.Runtime<never>
  const background = Runtime.runFork(backgroundRuntime)
  const run = app as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, never>

  /** Writes a produced response; returns the fiber that streams its body, if any. */
  const respond = (
    request: DoorServerRequest,
    res: ServerResponse,
    response: HttpServerResponse.HttpServerResponse,
    streamRuntime: () => Runtime.Runtime<never>
  ): Fiber.RuntimeFiber<unknown, unknown> | undefined => {
    if (res.destroyed || res.writableEnded) return undefined
    if (request.method === "HEAD") {
      writeHead(res, response)
      res.end()
      return undefined
    }
    const body = response.body
    switch (body._tag) {
      case "Empty":
        writeHead(res, response)
        res.end()
        return undefined
      case "Uint8Array":
        writeHead(res, response)
        res.end(body.body)
        return undefined
      case "Raw": {
        const raw = body.body as unknown
        writeHead(res, response)
        if (raw instanceof Readable) {
          pipeline(raw, res).catch((cause) => {
            background(reportCause(Cause.die(cause)))
            abandon(res, 500)
          })
        } else res.end(raw as string | Uint8Array | undefined)
        return undefined
      }
      case "FormData": {
        const web = new Response(body.formData)
        res.writeHead(response.status, { ...headersOf(response), ...Object.fromEntries(web.headers) })
        pipeline(Readable.fromWeb(web.body! as import("node:stream/web").ReadableStream), res).catch(() => abandon(res, 500))
        return undefined
      }
      case "Stream": {
        writeHead(res, response)
        const fiber = Runtime.runFork(streamRuntime())(writeStream(res, body.stream))
        fiber.addObserver((exit) => {
          if (exit._tag === "Success") {
            if (!res.destroyed && !res.writableEnded) res.end()
            return
          }
          if (!Cause.isInterruptedOnly(exit.cause)) background(reportCause(exit.cause))
          abandon(res, 500)
        })
        return fiber
      }
    }
  }

  /** Maps a failed request to a response with `causeResponse` and writes it (a short fiber, not tracked). */
  const fail = (request: DoorServerRequest, res: ServerResponse, state: InFlight, cause: Cause.Cause<unknown>) => {
    background(
      HttpServerError.causeResponse(cause).pipe(
        Effect.flatMap(([response, rest]) =>
          Effect.sync(() => {
            const streaming = respond(request, res, response, () => backgroundRuntime)
            if (streaming !== undefined) state.current = streaming
            return rest
          })
        ),
        Effect.flatMap((rest) => (Cause.isEmptyType(rest) || Cause.isInterruptedOnly(cause) ? Effect.void : reportCause(rest))),
        Effect.catchAllCause((mapping) => Effect.sync(() => abandon(res, 500)).pipe(Effect.zipRight(reportCause(mapping))))
      )
    )
  }

  const start = (req: IncomingMessage, res: ServerResponse, state: InFlight) => {
    const request = new DoorServerRequest(req, res)
    const context = Context.add(base, HttpServerRequest.HttpServerRequest, request)
    const handlerFiber = Runtime.runFork(Runtime.make({ context, fiberRefs: runtime.fiberRefs, runtimeFlags: requestFlags }))(run)
    state.current = handlerFiber
    // A body stream runs with the handler fiber's context and refs (log annotations, services).
    const streamRuntime = () =>
      Runtime.make({ context: handlerFiber.currentContext, fiberRefs: handlerFiber.getFiberRefs(), runtimeFlags: runtime.runtimeFlags })
    handlerFiber.addObserver((exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>) => {
      if (exit._tag === "Failure") return fail(request, res, state, exit.cause)
      const pre = handlerFiber.getFiberRef(HttpApp.currentPreResponseHandlers)
      if (pre._tag === "None") {
        const streaming = respond(request, res, exit.value, streamRuntime)
        if (streaming !== undefined) state.current = streaming
        return
      }
      // Pre-response handlers (middleware hooks) may change the response before it is written.
      const hooked = background(Effect.locally(pre.value(request, exit.value), HttpApp.currentPreResponseHandlers, Option.none()))
      state.current = hooked
      hooked.addObserver((hooks) => {
        if (hooks._tag === "Failure") return fail(request, res, state, hooks.cause)
        const streaming = respond(request, res, hooks.value, streamRuntime)
        if (streaming !== undefined) state.current = streaming
      })
    })
  }

  return function handler(req: IncomingMessage, res: ServerResponse): void {
    const state: InFlight = { current: undefined, aborted: false }
    res.on("close", () => {
      if (res.writableEnded) return
      state.aborted = true
      state.current?.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
    })
    // Start once Node's parser is done with the bytes at hand (a microtask later): the body of a
    // small request is then already buffered in `req` (`req.complete`), so the handler can take
    // it without suspending.
    if (req.complete) start(req, res, state)
    else {
      queueMicrotask(() => {
        if (!state.aborted) start(req, res, state)
      })
    }
  }
}

/** The fiber doing a request's work now: the handler, then a body stream or a hook. */
interface InFlight {
  current: Fiber.RuntimeFiber<unknown, unknown> | undefined
  aborted: boolean
}

// ---------------------------------------------------------------------------------------------
// As an `HttpServer`

/**
 * An `HttpServer` on a Node server: listening and closing as `NodeHttpServer.make` does (its
 * address is the bound one), serving with this adapter.
 */
export const make = (evaluate: () => Server, options: ListenOptions): Effect.Effect<HttpServer.HttpServer, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    let server: Server | undefined
    const stock = yield* NodeHttpServer.make(() => (server = evaluate()), options)
    const node = server!
    return HttpServer.make({
      address: stock.address,
      serve: (app, middleware) => serve(middleware === undefined ? app : middleware(app), node)
    })
  })

/** `NodeHttpServer.layer` with this adapter serving: the same services (server, platform, Node context). */
export const layer = (evaluate: () => Server, options: ListenOptions) =>
  Layer.mergeAll(Layer.scoped(HttpServer.HttpServer, make(evaluate, options)), NodeHttpServer.layerContext)
