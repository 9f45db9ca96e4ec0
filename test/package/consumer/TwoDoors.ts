// (c) Capsules beside the host's own routes, on the host's own server: each door mounted at a path of the host's HttpLayerRouter.
import { createServer } from "node:http"
import { HttpLayerRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { CapsuleRuntime, Door } from "capsule-runtime"
import { Greeter, sendTask } from "./Greeter.js"

const MyRoutes = HttpLayerRouter.add("GET", "/health", HttpServerResponse.text("ok"))

const HostApp = HttpLayerRouter.serve(Layer.mergeAll(
  Door.layerHttpRouter(CapsuleRuntime.layer().pipe(Layer.provide(Greeter("alpha"))), { path: "/alpha" }),
  Door.layerHttpRouter(CapsuleRuntime.layer().pipe(Layer.provide(Greeter("beta"))), { path: "/beta" }),
  Door.layerHttpRouter(CapsuleRuntime.layerDirectory("node_modules/capsule-runtime/examples/hello"), { path: "/agents/hello" }),
  Door.layerHttpRouter(CapsuleRuntime.layerEcho({ echoMs: 0 }), { path: "/agents/echo" }),
  MyRoutes
)).pipe(Layer.provide(CapsuleRuntime.layerHost))

const ServerLive = NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })

const program = Effect.gen(function*() {
  const { address } = yield* HttpServer.HttpServer
  const base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://localhost"
  const cards = yield* Effect.forEach(["alpha", "beta", "agents/hello", "agents/echo"], (prefix) =>
    Effect.promise(() => fetch(`${base}/${prefix}/.well-known/agent-card.json`).then((response) => response.json() as Promise<{ name: string; url: string }>)))
  const tasks = yield* Effect.forEach(cards.slice(0, 3), (card) => sendTask(card.url, "Ada"))
  const health = yield* Effect.promise(() => fetch(`${base}/health`).then((response) => response.text()))
  yield* Console.log(JSON.stringify({ health, cards, tasks }))
})

program.pipe(Effect.provide(HostApp.pipe(Layer.provideMerge(ServerLive))), NodeRuntime.runMain)
