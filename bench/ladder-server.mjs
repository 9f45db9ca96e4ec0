// One rung of the adapter ladder (bench/ladder.mjs): a node:http server whose request handler
// adds one piece of the door's per-request machinery at a time. Not a production entry point.
//   L0  raw: read the body in Node, JSON.parse, answer
//   L2  NodeDoorAdapter, app = a prebuilt response (no router, body not read)
//   L3  NodeDoorAdapter + HttpRouter, route = a prebuilt response
//   L4  NodeDoorAdapter, app = Effect.gen: read the body with Body.readBody (async), JSON.parse, HttpServerResponse.text
//   L5  L4 behind an HttpRouter (= the door's floor for a trivial JSON-RPC answer)
//   L6  NodeDoorAdapter, app = Effect.async resumed from process.nextTick
//   L7  NodeDoorAdapter, app = readBody (async) then a prebuilt response
//   L8  NodeDoorAdapter, app = Effect.gen building HttpServerResponse.text (no body read)
//   L9  NodeDoorAdapter, app = Effect.async resumed from setImmediate
//   L12 NodeDoorAdapter, app = body taken synchronously when Node holds all of it, else readBody; prebuilt response
// usage: node bench/ladder-server.mjs <rung>; prints {"event":"listening","url":...}
import { createServer } from "node:http"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { readBody } from "../dist/http/Body.js"
import { makeHandler } from "../dist/layers/NodeDoorAdapter.js"

const level = process.argv[2] ?? "L0"
const answer = (id) => JSON.stringify({ jsonrpc: "2.0", id, result: { ok: true } })
const rt = await Effect.runPromise(Effect.runtime())
const pre = HttpServerResponse.text(answer(1), { contentType: "application/json" })
const bodyApp = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), 1 << 20)
  return HttpServerResponse.text(answer(JSON.parse(body.text).id), { contentType: "application/json" })
})
/** The body, read synchronously, when Node already holds all declared bytes (else undefined). */
const bufferedBody = (req) => {
  const declared = Number(req.headers["content-length"] ?? Number.NaN)
  if (!(req.readableLength >= declared)) return undefined
  const chunks = []
  let chunk
  while ((chunk = req.read()) !== null) chunks.push(chunk)
  return Buffer.concat(chunks).toString("utf8")
}

const rungs = {
  L0: () => (req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      const body = answer(JSON.parse(Buffer.concat(chunks).toString()).id)
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
    })
  },
  L2: () => makeHandler(Effect.succeed(pre), rt),
  L3: () => makeHandler(HttpRouter.empty.pipe(HttpRouter.post("/", Effect.succeed(pre))), rt),
  L4: () => makeHandler(bodyApp, rt),
  L5: () => makeHandler(HttpRouter.empty.pipe(HttpRouter.post("/", bodyApp)), rt),
  L6: () => makeHandler(Effect.async((resume) => void process.nextTick(() => resume(Effect.succeed(pre)))), rt),
  L7: () =>
    makeHandler(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), 1 << 20)
      return pre
    }), rt),
  L8: () =>
    makeHandler(Effect.gen(function*() {
      yield* HttpServerRequest.HttpServerRequest
      return HttpServerResponse.text(answer(1), { contentType: "application/json" })
    }), rt),
  L9: () => makeHandler(Effect.async((resume) => void setImmediate(() => resume(Effect.succeed(pre)))), rt),
  L12: () =>
    makeHandler(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      if (bufferedBody(incoming) === undefined) yield* readBody(incoming, 1 << 20)
      return pre
    }), rt)
}

const server = createServer(rungs[level]()).listen(0, "127.0.0.1", () =>
  console.log(JSON.stringify({ event: "listening", url: `http://127.0.0.1:${server.address().port}/`, rung: level })))
process.on("SIGINT", () => process.exit(0))
process.on("SIGTERM", () => process.exit(0))
