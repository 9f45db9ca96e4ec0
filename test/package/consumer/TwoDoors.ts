// (b) Two sessions' doors mounted under two path prefixes of one host router, on one server.
import { createServer } from "node:http"
import { HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { doorAddressLayer, makeSessionApp } from "capsule-runtime"
import { Greeter, sendTask } from "./Greeter.js"

const HostRoutes = Layer.unwrapScoped(Effect.gen(function*() {
  const alpha = yield* makeSessionApp(Greeter("alpha")).pipe(Effect.provide(doorAddressLayer("/alpha/")))
  const beta = yield* makeSessionApp(Greeter("beta")).pipe(Effect.provide(doorAddressLayer("/beta/")))
  return HttpRouter.empty.pipe(
    HttpRouter.get("/health", HttpServerResponse.text("ok")),
    HttpRouter.mountApp("/alpha", alpha),
    HttpRouter.mountApp("/beta", beta),
    HttpServer.serve()
  )
}))

const ServerLive = NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })

const program = Effect.gen(function*() {
  const { address } = yield* HttpServer.HttpServer
  const base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://localhost"
  const cards = yield* Effect.forEach(["alpha", "beta"], (prefix) =>
    Effect.promise(() => fetch(`${base}/${prefix}/.well-known/agent-card.json`).then((response) => response.json() as Promise<{ name: string; url: string }>)))
  const tasks = yield* Effect.forEach(cards, (card) => sendTask(card.url, "Ada"))
  const health = yield* Effect.promise(() => fetch(`${base}/health`).then((response) => response.text()))
  yield* Console.log(JSON.stringify({ health, cards, tasks }))
})

program.pipe(Effect.provide(HostRoutes.pipe(Layer.provideMerge(ServerLive))), NodeRuntime.runMain)
