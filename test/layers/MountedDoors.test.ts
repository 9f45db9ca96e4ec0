/**
 * Two doors mounted in one application (`Door.layerHttpRouter` at two paths of the host's
 * router): each serves its own session through every binding on its path. A door's dispatch is
 * its own, though both are built from one layer value in one build.
 */
import { createServer } from "node:http"
import { HttpLayerRouter, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as CapsuleRuntime from "../../src/CapsuleRuntime.js"
import * as Door from "../../src/Door.js"
import { rpc } from "../lib/Door.js"

let scope: Scope.CloseableScope
let base = ""

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  const app = HttpLayerRouter.serve(Layer.mergeAll(
    Door.layerHttpRouter(CapsuleRuntime.layerEcho({ echoMs: 0 }), { path: "/alpha" }),
    Door.layerHttpRouter(CapsuleRuntime.layerEcho({ echoMs: 0 }), { path: "/beta" })
  )).pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })))
  const context = await Effect.runPromise(Layer.buildWithScope(app, scope))
  const address = Context.get(context, HttpServer.HttpServer).address
  base = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

describe("two mounted doors", () => {
  it("each keeps its own tasks, over JSON-RPC and HTTP+JSON alike", async () => {
    const v1 = { "a2a-version": "1.0" }
    const sent = await rpc(`${base}/alpha/`, "SendMessage", { message: { messageId: "m-alpha", role: "ROLE_USER", parts: [{ text: "/complete a" }] } }, { headers: v1 })
    const task = sent.body.result.task
    expect(task.status.state).toBe("TASK_STATE_COMPLETED")
    expect((await rpc(`${base}/alpha/`, "GetTask", { id: task.id }, { headers: v1 })).body.result.id).toBe(task.id)
    expect((await fetch(`${base}/alpha/tasks/${task.id}`, { headers: v1 })).status).toBe(200)
    // The other door's session never had it.
    expect((await rpc(`${base}/beta/`, "GetTask", { id: task.id }, { headers: v1 })).body.error.code).toBe(-32001)
    expect((await fetch(`${base}/beta/tasks/${task.id}`, { headers: v1 })).status).toBe(404)
    const cards = await Promise.all(["alpha", "beta"].map(async (path) => (await (await fetch(`${base}/${path}/.well-known/agent-card.json`)).json()).url))
    expect(cards).toEqual([`${base}/alpha/`, `${base}/beta/`])
  })
})
