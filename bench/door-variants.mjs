// A door session (dist/: services, scripted capsule, the door's router) served in one of several
// ways, to price each piece of per-request overhead against the same raw baseline
// (bench/variants.mjs runs them). Not a production entry point.
// usage: node bench/door-variants.mjs <variant>; prints {"event":"listening","url":...}
//   stock            NodeHttpServer.layer + HttpServer.serve(router + withTracerDisabledWhen) (the door before NodeDoorAdapter)
//   stock-traced     same without withTracerDisabledWhen (a span per request)
//   adapter          NodeDoorAdapter, router served from a context holding only the scope (the door now)
//   adapter-fullctx  NodeDoorAdapter, router served from the session's whole context (a Map copy per request)
//   adapter+scoped   adapter, each request in Effect.scoped (what HttpApp.toHandled adds)
//   adapter+span     adapter, each request in Effect.withSpan (the stock tracer middleware's span)
//   adapter+provide  adapter, each request wrapped in Effect.provideService (a per-request service)
//   adapter+all      adapter + scoped + span + provideService
//   adapter+stub     adapter, POST / answering a constant after reading the body (router + adapter floor)
//   adapter+stubsync same, reading the body synchronously when Node already holds all of it
import { createServer } from "node:http"
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Fiber, Layer, Scope } from "effect"
import { makeRouter } from "../dist/http/Door.js"
import { readBody } from "../dist/http/Body.js"
import { DoorConfig, defaultDoorSettings } from "../dist/http/DoorConfig.js"
import * as NodeDoorAdapter from "../dist/layers/NodeDoorAdapter.js"
import { doorAddressLayer } from "../dist/layers/DoorServer.js"
import { servicesLayer } from "../dist/layers/Session.js"
import { EchoCapsule } from "../dist/services/EchoCapsule.js"
import { SessionIdentity } from "../dist/services/SessionIdentity.js"

const variant = process.argv[2] ?? "adapter"
const stock = variant.startsWith("stock")

class Extra extends Context.Tag("bench/Extra")() {}

const stub = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), 1024 * 1024)
  const id = body._tag === "Body" ? JSON.parse(body.text).id : null
  return HttpServerResponse.text(JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true } }), { contentType: "application/json" })
})

/** The body, read synchronously, when Node holds all of it already (all declared bytes buffered). */
const syncBody = (req) => {
  const declared = Number(req.headers["content-length"] ?? Number.NaN)
  if (!(req.readableLength >= declared)) return undefined
  const chunks = []
  let chunk
  while ((chunk = req.read()) !== null) chunks.push(chunk)
  return Buffer.concat(chunks).toString("utf8")
}
const stubSync = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  let text = syncBody(incoming)
  if (text === undefined) {
    const body = yield* readBody(incoming, 1024 * 1024)
    text = body._tag === "Body" ? body.text : "{}"
  }
  const id = JSON.parse(text).id
  return HttpServerResponse.text(JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true } }), { contentType: "application/json" })
})

const wrap = (app) => {
  let out = app
  if (variant === "adapter+scoped" || variant === "adapter+all") out = Effect.scoped(out)
  if (variant === "adapter+span" || variant === "adapter+all") out = Effect.withSpan(out, "http.server POST", { kind: "server" })
  if (variant === "adapter+provide" || variant === "adapter+all") out = Effect.provideService(out, Extra, { ok: true })
  return out
}

const DoorVariant = Layer.scopedDiscard(Effect.gen(function*() {
  const router = variant === "adapter+stub"
    ? HttpRouter.empty.pipe(HttpRouter.post("/", stub))
    : variant === "adapter+stubsync"
    ? HttpRouter.empty.pipe(HttpRouter.post("/", stubSync))
    : yield* makeRouter
  if (variant === "stock") yield* HttpServer.serveEffect()(router.pipe(HttpMiddleware.withTracerDisabledWhenEffect(() => true)))
  else if (variant === "stock-traced") yield* HttpServer.serveEffect()(router)
  else if (variant === "adapter-fullctx") yield* HttpServer.serveEffect()(router)
  else {
    // as DoorLive: serve from a context holding only the scope
    const server = yield* HttpServer.HttpServer
    const scope = yield* Effect.scope
    yield* server.serve(wrap(router)).pipe(Effect.mapInputContext(() => Context.make(Scope.Scope, scope)))
  }
}))

const settings = { ...defaultDoorSettings, acceptance: "queue" }
const server = () => createServer({ maxHeaderSize: settings.maxHeaderBytes, headersTimeout: settings.headersTimeoutMs, requestTimeout: settings.requestTimeoutMs, keepAliveTimeout: settings.keepAliveTimeoutMs })
const serverLayer = stock
  ? NodeHttpServer.layer(server, { host: "127.0.0.1", port: 0 })
  : NodeDoorAdapter.layer(server, { host: "127.0.0.1", port: 0 })
const identity = SessionIdentity.layer({ streaming: true }).pipe(Layer.provide(doorAddressLayer()))
const session = DoorVariant.pipe(
  Layer.provideMerge(identity),
  Layer.provideMerge(servicesLayer(EchoCapsule.layer(), { tasks: { acceptance: "queue", queueDepth: 100000, maxActive: 100000 } })),
  Layer.provideMerge(serverLayer),
  Layer.provideMerge(DoorConfig.layer(settings))
)

const fiber = Effect.runFork(Effect.gen(function*() {
  const id = yield* SessionIdentity
  process.stdout.write(`${JSON.stringify({ event: "listening", url: id.url, variant })}\n`)
  return yield* Effect.never
}).pipe(Effect.provide(session)))
const stop = () => Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
