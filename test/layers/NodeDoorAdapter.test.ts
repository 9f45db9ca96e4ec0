/**
 * NodeDoorAdapter on a real Node server (port 0): streamed bodies with backpressure, client
 * aborts interrupting the handler (and a running body stream), failures mapped to well-formed
 * responses, HEAD, pre-response handlers, the request wrapper, and the `HttpServer` layer.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import {
  HttpApp,
  HttpRouter,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Deferred, Effect, Exit, Fiber, FiberId, Layer, Option, Schedule, Scope, Stream } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import * as NodeDoorAdapter from "../../src/layers/NodeDoorAdapter.js"

interface Served {
  readonly url: string
  readonly server: Server
  readonly close: () => Promise<void>
}

const open: Array<Served> = []
afterEach(async () => {
  for (const served of open.splice(0)) await served.close()
})

/** Serves an app with `NodeDoorAdapter.serve` on a fresh Node server bound to 127.0.0.1:0. */
const serve = async <E>(app: HttpApp.Default<E, never>): Promise<Served> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Scope.extend(NodeDoorAdapter.serve(app, server), scope))
  const { port } = server.address() as AddressInfo
  const served: Served = {
    url: `http://127.0.0.1:${port}`,
    server,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  open.push(served)
  return served
}

interface Reply {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

const call = (url: string, options: { readonly method?: string; readonly body?: string; readonly headers?: Record<string, string> } = {}) =>
  new Promise<Reply>((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(options.body)
  })

/** Sends a request and resolves with the response once its head has arrived (the body unread). */
const head = (url: string, method = "GET") =>
  new Promise<{ readonly res: IncomingMessage; readonly destroy: () => void }>((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => resolve({ res, destroy: () => req.destroy() }))
    req.on("error", (error) => ((error as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(error)))
    req.end()
  })

const until = async (condition: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time")
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const encoder = new TextEncoder()

describe("NodeDoorAdapter: plain responses", () => {
  it("serves router responses with their status, headers and body", async () => {
    const app = HttpRouter.empty.pipe(
      HttpRouter.get("/text", HttpServerResponse.text("hello", { headers: { "x-door": "yes" } })),
      HttpRouter.post("/status", Effect.succeed(HttpServerResponse.empty({ status: 202 }))),
      HttpRouter.get("/bytes", Effect.succeed(HttpServerResponse.uint8Array(new Uint8Array([104, 105]), { contentType: "application/octet-stream" })))
    )
    const { url } = await serve(app)
    const text = await call(`${url}/text`)
    expect(text).toMatchObject({ status: 200, body: "hello" })
    expect(text.headers["x-door"]).toBe("yes")
    expect(text.headers["content-type"]).toMatch(/^text\/plain/)
    expect(text.headers["content-length"]).toBe("5")
    expect(await call(`${url}/status`, { method: "POST" })).toMatchObject({ status: 202, body: "" })
    expect(await call(`${url}/bytes`)).toMatchObject({ status: 200, body: "hi" })
  })

  it("gives the handler platform-node's view of the request: source, headers, body, modify", async () => {
    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      const body = yield* request.json
      const moved = request.modify({ url: "/elsewhere" })
      return yield* HttpServerResponse.json({
        method: request.method,
        url: request.url,
        moved: moved.url,
        original: moved.originalUrl,
        header: request.headers["x-probe"],
        same: incoming.headers === request.headers,
        remote: Option.isSome(request.remoteAddress),
        responseIsNode: typeof NodeHttpServerRequest.toServerResponse(request).writeHead === "function",
        body
      })
    })
    const { url } = await serve(app)
    const reply = await call(`${url}/path?q=1`, { method: "POST", body: `{"a":1}`, headers: { "x-probe": "Yes-Verbatim", "content-type": "application/json" } })
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.body)).toEqual({
      method: "POST",
      url: "/path?q=1",
      moved: "/elsewhere",
      original: "/path?q=1",
      header: "Yes-Verbatim",
      same: true,
      remote: true,
      responseIsNode: true,
      body: { a: 1 }
    })
  })

  it("runs pre-response handlers before writing", async () => {
    const app = HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "x-hooked", "1"))).pipe(
      Effect.as(HttpServerResponse.text("ok"))
    )
    const { url } = await serve(app)
    const reply = await call(url)
    expect(reply).toMatchObject({ status: 200, body: "ok" })
    expect(reply.headers["x-hooked"]).toBe("1")
  })

  it("stops serving when its scope closes", async () => {
    const served = await serve(Effect.succeed(HttpServerResponse.text("ok")))
    expect(served.server.listenerCount("request")).toBe(1)
    await served.close()
    open.splice(open.indexOf(served), 1)
    expect(served.server.listenerCount("request")).toBe(0)
  })
})

describe("NodeDoorAdapter: failures become well-formed responses", () => {
  it("maps RouteNotFound to 404, a failed response to itself, a defect to 500, each with an empty body", async () => {
    const app = HttpRouter.empty.pipe(
      HttpRouter.get("/teapot", Effect.fail(HttpServerResponse.empty({ status: 418 }))),
      HttpRouter.get("/die", Effect.die(new Error("boom"))),
      HttpRouter.get("/error", Effect.fail(new Error("typed failure")))
    )
    const { url } = await serve(app)
    expect(await call(`${url}/nowhere`)).toMatchObject({ status: 404, body: "" })
    expect(await call(`${url}/teapot`)).toMatchObject({ status: 418, body: "" })
    expect(await call(`${url}/die`)).toMatchObject({ status: 500, body: "" })
    expect(await call(`${url}/error`)).toMatchObject({ status: 500, body: "" })
    // The server is still serving after every failure.
    expect((await call(`${url}/teapot`)).status).toBe(418)
  })

  it("answers 503 when the handler is interrupted by something other than the client", async () => {
    const app = Effect.flatMap(Effect.fiberId, (self) => Effect.interruptWith(FiberId.combine(self, FiberId.none)))
    const { url } = await serve(Effect.interruptible(app) as HttpApp.Default<never, never>)
    expect(await call(url)).toMatchObject({ status: 503, body: "" })
  })

  it("ends a stream whose body fails part-way, after what was sent", async () => {
    const body = Stream.make("one ", "two ").pipe(
      Stream.concat(Stream.fail(new Error("stream broke"))),
      Stream.map((text) => encoder.encode(text))
    )
    const { url } = await serve(Effect.succeed(HttpServerResponse.stream(body, { contentType: "text/plain" })))
    expect(await call(url)).toMatchObject({ status: 200, body: "one two " })
  })
})

describe("NodeDoorAdapter: streamed bodies", () => {
  it("streams SSE frames as they are produced, not at the end", async () => {
    const gate = Effect.runSync(Deferred.make<void>())
    const frames = Stream.make("id: 1\ndata: a\n\n").pipe(
      Stream.concat(Stream.fromEffect(Deferred.await(gate).pipe(Effect.as("id: 2\ndata: b\n\n")))),
      Stream.map((text) => encoder.encode(text))
    )
    const { url } = await serve(Effect.succeed(HttpServerResponse.stream(frames, { contentType: "text/event-stream" })))
    const { res } = await head(url)
    expect(res.statusCode).toBe(200)
    expect(res.headers["content-type"]).toBe("text/event-stream")
    res.setEncoding("utf8")
    let received = ""
    res.on("data", (chunk: string) => (received += chunk))
    const ended = new Promise((resolve) => res.on("end", resolve))
    // The first frame arrives while the stream still waits for the second.
    await until(() => received === "id: 1\ndata: a\n\n")
    Effect.runSync(Deferred.succeed(gate, undefined))
    await ended
    expect(received).toBe("id: 1\ndata: a\n\nid: 2\ndata: b\n\n")
  })

  it("writes a chunk of several pieces whole, in order", async () => {
    const body = Stream.fromIterable(Array.from({ length: 100 }, (_, i) => `${i},`)).pipe(Stream.map((text) => encoder.encode(text)))
    const { url } = await serve(Effect.succeed(HttpServerResponse.stream(body)))
    const reply = await call(url)
    expect(reply.body).toBe(Array.from({ length: 100 }, (_, i) => `${i},`).join(""))
  })

  it("stops pulling the stream while the client does not read (backpressure), and resumes when it does", async () => {
    let produced = 0
    const piece = new Uint8Array(64 * 1024)
    const body = Stream.repeatEffect(Effect.sync(() => {
      produced++
      return piece
    })).pipe(Stream.take(1_000)) // 64 MiB if nothing held it back
    const { url } = await serve(Effect.succeed(HttpServerResponse.stream(body)))
    const { res } = await head(url)
    res.pause()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const whilePaused = produced
    await new Promise((resolve) => setTimeout(resolve, 300))
    // Socket and stream buffers hold a few MiB at most; production stalls well short of the end.
    expect(whilePaused).toBeLessThan(300)
    expect(produced).toBe(whilePaused)
    let bytes = 0
    res.on("data", (chunk: Buffer) => (bytes += chunk.length))
    const ended = new Promise((resolve) => res.on("end", resolve))
    res.resume()
    await ended
    expect(produced).toBe(1_000)
    expect(bytes).toBe(1_000 * piece.length)
  })

  it("answers HEAD with the head only and never runs a streamed body", async () => {
    let started = false
    const body = Stream.fromEffect(Effect.sync(() => {
      started = true
      return encoder.encode("data: x\n\n")
    }))
    const app = HttpRouter.empty.pipe(
      HttpRouter.get("/card", HttpServerResponse.text(`{"name":"door"}`, { contentType: "application/json" })),
      HttpRouter.get("/events", Effect.succeed(HttpServerResponse.stream(body, { contentType: "text/event-stream" })))
    )
    const { url } = await serve(app)
    const card = await call(`${url}/card`, { method: "HEAD" })
    expect(card).toMatchObject({ status: 200, body: "" })
    expect(card.headers["content-type"]).toBe("application/json")
    expect(card.headers["content-length"]).toBe(String(`{"name":"door"}`.length))
    const events = await call(`${url}/events`, { method: "HEAD" })
    expect(events).toMatchObject({ status: 200, body: "" })
    expect(events.headers["content-type"]).toBe("text/event-stream")
    expect(started).toBe(false)
    expect((await call(`${url}/card`)).body).toBe(`{"name":"door"}`)
  })
})

describe("NodeDoorAdapter: client aborts", () => {
  it("interrupts the handler fiber, as the client-abort fiber, when the client goes away first", async () => {
    const started = Effect.runSync(Deferred.make<void>())
    const interrupted = Effect.runSync(Deferred.make<ReadonlyArray<FiberId.FiberId>>())
    const handler = Deferred.succeed(started, undefined).pipe(
      Effect.zipRight(Effect.never),
      Effect.onInterrupt((interruptors) => Deferred.succeed(interrupted, [...interruptors])),
      Effect.as(HttpServerResponse.text("never"))
    )
    // As under HttpApp.toHandled, the router opens each route's handler to interruption.
    const { url } = await serve(HttpRouter.empty.pipe(HttpRouter.get("/", handler)))
    const req = httpRequest(url)
    req.on("error", () => undefined)
    req.end()
    await Effect.runPromise(Deferred.await(started))
    req.destroy()
    const by = await Effect.runPromise(Deferred.await(interrupted).pipe(Effect.timeout("5 seconds")))
    expect(by).toEqual([HttpServerError.clientAbortFiberId])
  })

  it("leaves an uninterruptible route alone until it answers", async () => {
    const gate = Effect.runSync(Deferred.make<void>())
    const started = Effect.runSync(Deferred.make<void>())
    let finished = false
    const handler = Deferred.succeed(started, undefined).pipe(
      Effect.zipRight(Deferred.await(gate)),
      Effect.zipRight(Effect.sync(() => (finished = true))),
      Effect.as(HttpServerResponse.text("late"))
    )
    const { url } = await serve(HttpRouter.empty.pipe(HttpRouter.get("/", handler, { uninterruptible: true })))
    const req = httpRequest(url)
    req.on("error", () => undefined)
    req.end()
    await Effect.runPromise(Deferred.await(started))
    req.destroy()
    await new Promise((resolve) => setTimeout(resolve, 50))
    Effect.runSync(Deferred.succeed(gate, undefined))
    await until(() => finished)
  })

  it("interrupts a running body stream and runs its finalizers when the client disconnects mid-stream", async () => {
    const closed = Effect.runSync(Deferred.make<Exit.Exit<unknown, unknown>>())
    const body = Stream.unwrapScoped(
      Effect.acquireRelease(Effect.void, (_, exit) => Deferred.succeed(closed, exit)).pipe(
        Effect.as(Stream.fromSchedule(Schedule.spaced("10 millis")).pipe(Stream.map((n) => encoder.encode(`data: ${n}\n\n`))))
      )
    )
    const { url } = await serve(Effect.succeed(HttpServerResponse.stream(body, { contentType: "text/event-stream" })))
    const { res, destroy } = await head(url)
    await new Promise((resolve) => res.once("data", resolve))
    destroy()
    const exit = await Effect.runPromise(Deferred.await(closed).pipe(Effect.timeout("5 seconds")))
    expect(Exit.isInterrupted(exit)).toBe(true)
  })

  it("does not start a handler for a request whose client left before it could start", async () => {
    let runs = 0
    const { url, server } = await serve(Effect.sync(() => {
      runs++
      return HttpServerResponse.text("ok")
    }))
    // A request that is complete, then an immediate abort: Node may or may not emit `request`;
    // either way nothing is written to a closed socket and the server keeps serving.
    const req = httpRequest(url)
    req.on("error", () => undefined)
    req.end()
    req.destroy()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(runs).toBeLessThanOrEqual(1)
    expect((await call(url)).body).toBe("ok")
    expect(server.listening).toBe(true)
  })
})

describe("NodeDoorAdapter.layer", () => {
  it("provides an HttpServer with the bound address that serves through the adapter", async () => {
    const server = createServer()
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(NodeDoorAdapter.layer(() => server, { host: "127.0.0.1", port: 0 }), scope))
    try {
      const http = context.unsafeMap.get(HttpServer.HttpServer.key) as HttpServer.HttpServer
      expect(http.address._tag).toBe("TcpAddress")
      const port = (http.address as HttpServer.TcpAddress).port
      expect(port).toBe((server.address() as AddressInfo).port)
      const fiber = Effect.runFork(
        Effect.scoped(HttpServer.serveEffect()(HttpServerResponse.text("via layer")).pipe(Effect.zipRight(Effect.never))).pipe(
          Effect.provide(context)
        )
      )
      await until(() => server.listenerCount("request") === 1)
      expect((await call(`http://127.0.0.1:${port}/`)).body).toBe("via layer")
      await Effect.runPromise(Fiber.interrupt(fiber))
      expect(server.listenerCount("request")).toBe(0)
    } finally {
      server.closeAllConnections()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    expect(server.listening).toBe(false)
  })
})
