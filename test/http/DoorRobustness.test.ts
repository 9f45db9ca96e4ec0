/**
 * The door's transport over real sockets: body limit, chunked bodies, keep-alive, media type,
 * slow clients, header limits, unknown routes, aborted calls. After each abuse the door must
 * still answer.
 */
import { Agent, request as httpRequest } from "node:http"
import { describe, expect, it } from "vitest"
import { a2aMessage, post, referenceMessage, rpc, sleep, waitForState } from "../lib/Door.js"
import { nodeStream, rawExchange, readUntil } from "../lib/DoorKit.js"
import { doorPerTest, stillServes } from "../lib/DoorPerTest.js"

const doors = doorPerTest()
const { open } = doors

interface NodeReply {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly localPort: number | undefined
  readonly reusedSocket: boolean
}

/** A POST over `node:http`, the body written in the given pieces (no content-length: chunked). */
const nodePost = (
  url: string,
  pieces: ReadonlyArray<string>,
  options: { readonly agent?: Agent | false; readonly headers?: Record<string, string | number>; readonly gapMs?: number; readonly path?: string } = {}
): Promise<NodeReply> =>
  new Promise((resolve, reject) => {
    const target = new URL(options.path ?? "/", url)
    const request = httpRequest(target, {
      method: "POST",
      agent: options.agent ?? false,
      headers: { "content-type": "application/json", ...options.headers }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          text,
          localPort: request.socket?.localPort,
          reusedSocket: request.reusedSocket
        }))
      response.on("error", reject)
    })
    request.on("error", reject)
    void (async () => {
      for (const piece of pieces) {
        request.write(piece)
        if (options.gapMs !== undefined) await sleep(options.gapMs)
      }
      request.end()
    })()
  })

const envelope = (method: string, params: unknown, id: string | number = 1) => JSON.stringify({ jsonrpc: "2.0", id, method, params })

describe("body limit", () => {
  it("answers a declared body over the limit with 413 and a JSON-RPC error body, then keeps serving", async () => {
    const { url } = await open({ door: { maxBodyBytes: 1024 } })
    const body = envelope("message/send", { message: referenceMessage("x".repeat(2_000)) })
    const reply = await post(url, body)
    expect(reply.status).toBe(413)
    expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
    expect(reply.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    expect(reply.body.error.message).toContain("1024")
    await stillServes(url)
    // Nothing was started.
    expect((await doors.door!.run(doors.door!.registry.stats())).retained).toBe(0)
  })

  it("cuts a chunked body as soon as it passes the limit", async () => {
    const { url } = await open({ door: { maxBodyBytes: 1024 } })
    const body = envelope("message/send", { message: referenceMessage("y".repeat(4_000)) })
    const pieces = body.match(/[\s\S]{1,500}/g)!
    const reply = await nodePost(url, pieces, { gapMs: 5 }).catch((error: Error) => error)
    // The door answers 413 (a client may see the reset instead if it was still writing).
    if (!(reply instanceof Error)) {
      expect(reply.status).toBe(413)
      expect(JSON.parse(reply.text)).toMatchObject({ error: { code: -32600 } })
    }
    await stillServes(url)
    expect((await doors.door!.run(doors.door!.registry.stats())).retained).toBe(0)
  })

  it("accepts a body of exactly the limit", async () => {
    const { url } = await open({ door: { maxBodyBytes: 1024 } })
    const bare = envelope("tasks/get", { id: "tsk_edge" }, 3)
    const body = bare + " ".repeat(1024 - Buffer.byteLength(bare))
    expect(Buffer.byteLength(body)).toBe(1024)
    const reply = await post(url, body)
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ id: 3, error: { code: -32001 } })
    const over = await post(url, body + " ")
    expect(over.status).toBe(413)
  })
})

describe("request framing", () => {
  it("reads a chunked request body (no content-length)", async () => {
    const { url } = await open()
    const body = envelope("message/send", { message: a2aMessage("/complete chunked"), configuration: { blocking: true } }, "ch")
    const third = Math.ceil(body.length / 3)
    const reply = await nodePost(url, [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)], { gapMs: 20 })
    expect(reply.status).toBe(200)
    const parsed = JSON.parse(reply.text)
    expect(parsed.id).toBe("ch")
    expect(parsed.result.status.state).toBe("completed")
    expect(parsed.result.status.message.parts[0].text).toBe("chunked")
  })

  it("keeps a connection alive across several requests", async () => {
    const { url } = await open()
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const replies: Array<NodeReply> = []
      for (let i = 0; i < 5; i++) {
        replies.push(await nodePost(url, [envelope("tasks/get", { id: `tsk_${i}` }, i)], { agent }))
      }
      for (const [i, reply] of replies.entries()) {
        expect(reply.status).toBe(200)
        expect(JSON.parse(reply.text)).toMatchObject({ id: i, error: { code: -32001 } })
      }
      expect(new Set(replies.map((reply) => reply.localPort)).size).toBe(1)
      expect(replies.slice(1).every((reply) => reply.reusedSocket)).toBe(true)
      expect(replies[0]!.headers.connection).toBe("keep-alive")
      // A streamed answer on the same connection, then another call on it.
      const card = await new Promise<number>((resolve, reject) => {
        httpRequest(new URL(".well-known/agent.json", url), { agent }, (response) => {
          response.resume()
          response.on("end", () => resolve(response.statusCode ?? 0))
        }).on("error", reject).end()
      })
      expect(card).toBe(200)
      const after = await nodePost(url, [envelope("session/stop", {}, "s")], { agent })
      expect(after.reusedSocket).toBe(true)
      expect(JSON.parse(after.text).result.canceled).toEqual([])
    } finally {
      agent.destroy()
    }
  })

  it("serves POST / with a query string", async () => {
    const { url } = await open()
    const reply = await nodePost(url, [envelope("tasks/get", { id: "tsk_q" }, "q")], { path: "/?A2A-Version=0.3" })
    expect(reply.status).toBe(200)
    expect(JSON.parse(reply.text)).toMatchObject({ id: "q", error: { code: -32001 } })
  })

  it("answers a wrong content-type with 415 and a JSON body", async () => {
    const { url } = await open()
    const reply = await post(url, envelope("tasks/get", { id: "x" }), { "content-type": "text/plain" })
    expect(reply.status).toBe(415)
    expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
    expect(reply.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    expect(reply.body.error.message).toContain("text/plain")
    const form = await post(url, "a=b", { "content-type": "application/x-www-form-urlencoded" })
    expect(form.status).toBe(415)
    // JSON media types with parameters are fine.
    const charset = await post(url, envelope("tasks/get", { id: "x" }, 2), { "content-type": "application/json; charset=utf-8" })
    expect(charset.status).toBe(200)
    expect(charset.body).toMatchObject({ id: 2, error: { code: -32001 } })
    await stillServes(url)
  })

  it("answers unknown routes with a JSON 404", async () => {
    const { url } = await open()
    for (const [method, path] of [["GET", ""], ["GET", "task"], ["POST", "rpc"], ["PUT", ""], ["GET", ".well-known/other.json"]] as const) {
      const response = await fetch(`${url}${path}`, { method, ...(method === "GET" ? {} : { body: "{}", headers: { "content-type": "application/json" } }) })
      expect(response.status).toBe(404)
      expect(response.headers.get("content-type")).toMatch(/^application\/json/)
      const body = await response.json() as { error?: unknown }
      expect(body.error).toBe("not_found")
    }
  })

  it("answers HEAD of the agent card under both paths with the GET's head and no body", async () => {
    const { url } = await open()
    for (const path of [".well-known/agent-card.json", ".well-known/agent.json"]) {
      const get = await fetch(`${url}${path}`)
      const body = await get.text()
      const head = await fetch(`${url}${path}`, { method: "HEAD" })
      expect(head.status, path).toBe(200)
      expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"))
      expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(body)))
      expect(await head.text()).toBe("")
    }
    // A raw HEAD: the head ends the answer, no body bytes follow on the connection.
    const { text } = await rawExchange(url, ["HEAD /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"], 2_000)
    expect(text).toMatch(/^HTTP\/1\.1 200 /)
    expect(text.endsWith("\r\n\r\n")).toBe(true)
  })

  it("answers a request line naming HTTP/2.0 with 505 and closes, for a card read and a JSON-RPC call alike", async () => {
    const { url } = await open()
    const call = envelope("tasks/get", { id: "tsk_probe" })
    for (const request of [
      "GET /.well-known/agent-card.json HTTP/2.0\r\nhost: x\r\n\r\n",
      `POST / HTTP/2.0\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${call.length}\r\n\r\n${call}`
    ]) {
      const { text, closedByServer } = await rawExchange(url, [request], 2_000)
      expect(text).toMatch(/^HTTP\/1\.1 505 HTTP Version Not Supported\r\n/)
      expect(text).toContain('"error":"http_version_not_supported"')
      expect(text).not.toContain("-32700")
      expect(closedByServer).toBe(true)
    }
    await stillServes(url)
  })

  it("answers garbage on the socket with 400 and keeps serving", async () => {
    const { url } = await open()
    const { text } = await rawExchange(url, ["\x16\x03\x01 not http at all\r\n\r\n"], 2_000)
    expect(text).toMatch(/^HTTP\/1\.1 400 /)
    await stillServes(url)
  })
})

describe("limits and slow clients", () => {
  it("answers an oversized header with 431 and keeps serving", async () => {
    const { url } = await open()
    const { port } = new URL(url)
    const head = `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Big: ${"a".repeat(20_000)}\r\nContent-Length: 2\r\n\r\n{}`
    const { text } = await rawExchange(url, [head], 3_000)
    expect(text).toMatch(/^HTTP\/1\.1 431 /)
    await stillServes(url)
  })

  it("answers too many headers with 431", async () => {
    const { url } = await open()
    const { port } = new URL(url)
    const many = Array.from({ length: 150 }, (_, i) => `X-H${i}: ${i}\r\n`).join("")
    const { text } = await rawExchange(url, [`GET /.well-known/agent.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${many}\r\n`], 3_000)
    expect(text).toMatch(/^HTTP\/1\.1 431 /)
    await stillServes(url)
  })

  it("times out a client that sends its headers and then stalls the body, and keeps serving", async () => {
    const { url } = await open({ door: { requestTimeoutMs: 500, headersTimeoutMs: 300 } })
    const { port } = new URL(url)
    const head = `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"jsonrpc":"2.0",`
    const slow = rawExchange(url, [head], 2_500)
    // Meanwhile, others are served.
    await stillServes(url)
    const { closedByServer, elapsedMs, text } = await slow
    expect(closedByServer).toBe(true)
    expect(elapsedMs).toBeLessThan(2_000)
    expect(text === "" || /^HTTP\/1\.1 (408|400) /.test(text)).toBe(true)
    await stillServes(url)
  })

  it("times out a client that never finishes its headers", async () => {
    const { url } = await open({ door: { requestTimeoutMs: 500, headersTimeoutMs: 300 } })
    const { port } = new URL(url)
    const { closedByServer, elapsedMs } = await rawExchange(url, [`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Ty`], 2_500)
    expect(closedByServer).toBe(true)
    expect(elapsedMs).toBeLessThan(2_000)
    await stillServes(url)
  })
})

describe("clients that go away", () => {
  it("survives a client aborting a blocking message/send; the task still runs to its end", async () => {
    const { url } = await open()
    const controller = new AbortController()
    const pending = fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope("message/send", { message: a2aMessage("/sleep 300"), configuration: { blocking: true } }),
      signal: controller.signal
    })
    await sleep(80)
    const live = await doors.door!.run(doors.door!.registry.live())
    expect(live).toHaveLength(1)
    controller.abort()
    await expect(pending).rejects.toThrow()
    await stillServes(url)
    const done = await waitForState(url, live[0]!, ["completed"])
    expect(done.status.state).toBe("completed")
    await stillServes(url)
  })

  it("releases the subscriptions of streams whose clients disconnect", async () => {
    const { url } = await open()
    const watch = await nodeStream(url, "stream/watch", {})
    await readUntil(watch.events, () => true)
    const streamed = await nodeStream(url, "message/stream", { message: referenceMessage("/forever") })
    const head = await readUntil(streamed.events, () => true)
    expect(await doors.door!.run(doors.door!.log.subscriberCount())).toBe(2)
    watch.destroy()
    streamed.destroy()
    const deadline = Date.now() + 2_000
    while (Date.now() < deadline && (await doors.door!.run(doors.door!.log.subscriberCount())) > 0) await sleep(20)
    expect(await doors.door!.run(doors.door!.log.subscriberCount())).toBe(0)
    // The task itself is not canceled by its stream going away.
    const taskId = JSON.parse(head[0]!.data!).id
    expect((await rpc(url, "tasks/get", { id: taskId })).body.result.status.state).toBe("working")
    await stillServes(url)
  })

  it("keeps serving when a task dies of a defect", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/send", { message: a2aMessage("/die"), configuration: { blocking: true } })
    expect(reply.body.result.status.state).toBe("failed")
    expect(reply.body.result.status.message.parts[0].text).toBe("internal error")
    await stillServes(url)
  })

  it("answers many concurrent calls", async () => {
    const { url } = await open()
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => rpc(url, "tasks/get", { id: `tsk_${i}` }, { id: i })))
    expect(replies.map((reply) => reply.body.id)).toEqual(Array.from({ length: 50 }, (_, i) => i))
    expect(replies.every((reply) => reply.body.error.code === -32001)).toBe(true)
  })
})
