/**
 * `sendPeerMessage` against real peers on port 0: what the peer answers decides the guest's
 * result or its one-line error, and what the peer sees (headers, body) is what A2A expects.
 * The guest-facing paths (grants, redirects) are in HostImports.test.ts with real components.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { sendPeerMessage } from "../../src/script/PeerMessage.js"

interface Seen {
  readonly headers: IncomingMessage["headers"]
  readonly body: Record<string, any>
}

const peer = (answer: (seen: Seen, response: import("node:http").ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly seen: Array<Seen> }>((resume) => {
      const seen: Array<Seen> = []
      const server: Server = createServer((request, response) => {
        let body = ""
        request.on("data", (chunk) => (body += chunk))
        request.on("end", () => {
          const entry = { headers: request.headers, body: JSON.parse(body) }
          seen.push(entry)
          answer(entry, response)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen, server })))
    }) as Effect.Effect<{ readonly url: string; readonly seen: Array<Seen>; readonly server?: Server }>,
    (running) => Effect.promise(() => new Promise<void>((done) => { running.server!.closeAllConnections(); running.server!.close(() => done()) }))
  )

const json = (value: unknown) => (_: Seen, response: import("node:http").ServerResponse) =>
  response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value))

const rules = [{ scheme: "http" as const, host: "127.0.0.1" }]
const call = (peerUrl: string) => ({ method: "sendMessage" as const, peerUrl, messageId: "msg-1", contextId: "ctx-9", text: "hi" })

describe("sendPeerMessage", () => {
  it.scoped("sends an A2A message/send stamped peer and the task's trust, with the caller's traceparent, and answers the peer's task", () =>
    Effect.gen(function*() {
      const { seen, url } = yield* peer(json({ jsonrpc: "2.0", id: 1, result: { kind: "task", id: "tsk_1", contextId: "ctx-9", status: { state: "submitted" }, extra: 1 } }))
      const [result, span] = yield* Effect.all([sendPeerMessage(rules, "trusted", call(url)), Effect.currentSpan]).pipe(Effect.withSpan("caller"))
      assert.deepStrictEqual(result, { taskId: "tsk_1", contextId: "ctx-9", state: "submitted" })
      assert.strictEqual(seen.length, 1)
      const [only] = seen
      assert.strictEqual(only!.headers["x-murmur-task-origin"], "peer")
      assert.strictEqual(only!.headers["x-murmur-task-trust"], "trusted")
      assert.strictEqual(only!.headers["content-type"], "application/json")
      assert.strictEqual(String(only!.headers["traceparent"]).split("-")[1], span.traceId)
      assert.strictEqual(only!.body.method, "message/send")
      assert.deepStrictEqual(only!.body.params.message, { messageId: "msg-1", contextId: "ctx-9", role: "user", parts: [{ text: "hi" }] })
    }))

  it.scoped("a JSON-RPC error from the peer is the guest's error, with the peer's message", () =>
    Effect.gen(function*() {
      const { url } = yield* peer(json({ jsonrpc: "2.0", id: 1, error: { code: -32001, message: "task not found" } }))
      const result = yield* Effect.either(sendPeerMessage(rules, "untrusted", call(url)))
      assert.deepStrictEqual(result, Either.left({ message: "peer answered an error: task not found" }))
    }))

  it.scoped("an answer that is not a task, or not JSON, is refused by name", () =>
    Effect.gen(function*() {
      const notTask = yield* peer(json({ jsonrpc: "2.0", id: 1, result: { id: 7 } }))
      const first = yield* Effect.flip(sendPeerMessage(rules, "untrusted", call(notTask.url)))
      assert.match(first.message, /^peer answered something that is not an A2A task/)
      const notJson = yield* peer((_, response) => response.writeHead(200).end("<html>"))
      const second = yield* Effect.flip(sendPeerMessage(rules, "untrusted", call(notJson.url)))
      assert.match(second.message, /^message\/send to 'http:\/\/127\.0\.0\.1:\d+\/' failed: /)
    }))

  // Live clock: the deadline is real time.
  it.scopedLive("a peer that never answers gives up at the deadline, and a refused connection says so", () =>
    Effect.gen(function*() {
      const silent = yield* peer(() => {})
      const late = yield* Effect.flip(sendPeerMessage(rules, "untrusted", call(silent.url), 200))
      assert.strictEqual(late.message, `message/send to '${silent.url}' failed: no answer within 200 ms`)
      const refused = yield* Effect.flip(sendPeerMessage(rules, "untrusted", call("http://127.0.0.1:9/")))
      assert.match(refused.message, /^message\/send to 'http:\/\/127\.0\.0\.1:9\/' failed: /)
    }))
})
