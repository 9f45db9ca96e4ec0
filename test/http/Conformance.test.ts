/**
 * Black-box conformance checks of a2a-protocol.md §3.4, by ID, in the A2A 0.3 dialect (`kind`
 * fields), over raw fetch against a real door on loopback. AUTH-1 and VER-1 are not served yet
 * and have no checks here. Q-3 is the scenario that cost the A2A TCK's quality category half its
 * checks (issue 17, item 13); its CLI check needs `npm run build` first.
 */
import { request as httpRequest } from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import { echoInfo, followUpPrompt } from "../../src/services/EchoCapsule.js"
import { listeningCli } from "../lib/CapsuleDirs.js"
import {
  a2aMessage,
  collect,
  type DoorOptions,
  type OpenDoor,
  openDoor,
  openStream,
  post,
  referenceMessage,
  rpc,
  type SseEvent,
  sleep,
  waitForState
} from "../lib/Door.js"

let door: OpenDoor | undefined

const open = async (options: DoorOptions = {}) => {
  door = await openDoor(options)
  return door
}

afterEach(async () => {
  await door?.close()
  door = undefined
})

/** `message/send` params in A2A shapes. */
const send = (text: string, extra: Record<string, unknown> = {}, configuration?: Record<string, unknown>) => ({
  message: a2aMessage(text, extra),
  ...(configuration === undefined ? {} : { configuration })
})

const resultOf = (reply: { body: any }) => {
  expect(reply.body.error, JSON.stringify(reply.body.error)).toBeUndefined()
  return reply.body.result
}

const errorOf = (reply: { body: any }) => {
  expect(reply.body.result).toBeUndefined()
  expect(reply.body.error).toBeDefined()
  return reply.body.error as { code: number; message: string; data?: unknown }
}

const textOf = (parts: ReadonlyArray<any> | undefined) => (parts ?? []).map((part) => part.text ?? "").join("")

/** Starts a task and returns at once (`blocking: false`; A2A's default is to block). */
const start = async (url: string, text: string, extra: Record<string, unknown> = {}) =>
  resultOf(await rpc(url, "message/send", send(text, extra, { blocking: false })))

/** Opens an SSE call, reads it to its end (bounded by a timeout), and parses every `data`. */
const streamAll = async (url: string, method: string, params: unknown, options: { id?: string | number; headers?: Record<string, string> } = {}) => {
  const signal = AbortSignal.timeout(10_000)
  const { events, response } = await openStream(url, method, params, { ...options, signal })
  const all = await collect(events)
  const data = all.filter((event) => event.data !== undefined)
  return { response, all, data, results: data.map((event) => JSON.parse(event.data!)) }
}

/** Parses an SSE body text into events (as the harness's `sseEvents` does). */
const parseSse = (text: string): Array<SseEvent> =>
  text.split("\n\n").filter((block) => block.length > 0).map((block) => {
    const event: { id?: number; event?: string; data?: string; comment?: string } = {}
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) event.comment = line.slice(1)
      else if (line.startsWith("id: ")) event.id = Number(line.slice(4))
      else if (line.startsWith("event: ")) event.event = line.slice(7)
      else if (line.startsWith("data: ")) event.data = line.slice(6)
    }
    return event
  })

/**
 * Reads an SSE call until `count` data events arrived, then drops the connection (node:http
 * `destroy`: an aborted `fetch` leaves undici holding a socket that delays server close by ~2 s).
 */
const streamSome = (url: string, method: string, params: unknown, count: number, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; contentType: string | undefined; events: Array<SseEvent>; data: Array<SseEvent> }>((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      const finish = () => {
        request.destroy()
        const complete = text.slice(0, text.lastIndexOf("\n\n") + 2)
        const events = parseSse(complete)
        resolve({ status: response.statusCode ?? 0, contentType: response.headers["content-type"], events, data: events.filter((e) => e.data !== undefined) })
      }
      response.on("data", (chunk: string) => {
        text += chunk
        const complete = text.slice(0, text.lastIndexOf("\n\n") + 2)
        if (parseSse(complete).filter((e) => e.data !== undefined).length >= count) finish()
      })
      response.on("end", finish)
    })
    request.on("error", reject)
    request.setTimeout(10_000, () => request.destroy(new Error("stream timed out")))
    request.end(JSON.stringify({ jsonrpc: "2.0", id: "some", method, params }))
  })

/** A stream event without its per-encoding parts (timestamps, `append`), for comparing streams. */
const essence = (result: any) =>
  result.kind === "artifact-update"
    ? { kind: result.kind, taskId: result.taskId, artifactId: result.artifact.artifactId, text: textOf(result.artifact.parts), lastChunk: result.lastChunk }
    : { kind: result.kind, taskId: result.taskId, state: result.status?.state, text: textOf(result.status?.message?.parts), final: result.final }

const keywordsOf: Record<number, ReadonlyArray<string>> = {
  [-32001]: ["task", "not", "found"],
  [-32002]: ["task", "cannot", "canceled"],
  [-32003]: ["push", "notification", "not", "supported"],
  [-32004]: ["operation", "not", "supported"],
  [-32005]: ["incompatible", "content", "type"]
}

describe("agent card", () => {
  it("CARD-1: the card is served as JSON at /.well-known/agent-card.json and /.well-known/agent.json", async () => {
    const { url } = await open()
    const main = await fetch(`${url}.well-known/agent-card.json`)
    expect(main.status).toBe(200)
    expect(main.headers.get("content-type")).toMatch(/^application\/json/)
    const legacy = await fetch(`${url}.well-known/agent.json`)
    expect(legacy.status).toBe(200)
    expect(legacy.headers.get("content-type")).toMatch(/^application\/json/)
    expect(await legacy.json()).toEqual(await main.json())
  })

  it("CARD-2: the nine required fields with the right types, an absolute POSTable url, JSONRPC transport", async () => {
    const { url } = await open()
    const card: any = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card.protocolVersion).toBe("0.3.0")
    for (const field of ["name", "description", "url", "version"]) expect(typeof card[field], field).toBe("string")
    expect(typeof card.capabilities).toBe("object")
    expect(card.capabilities).not.toBeNull()
    for (const field of ["defaultInputModes", "defaultOutputModes"]) {
      expect(Array.isArray(card[field]), field).toBe(true)
      expect(card[field].length, field).toBeGreaterThan(0)
      for (const mode of card[field]) expect(typeof mode).toBe("string")
    }
    expect(Array.isArray(card.skills)).toBe(true)
    expect(card.skills.length).toBeGreaterThan(0)
    for (const skill of card.skills) {
      for (const field of ["id", "name", "description"]) expect(typeof skill[field], field).toBe("string")
      expect(Array.isArray(skill.tags)).toBe(true)
    }
    expect(card.preferredTransport).toBe("JSONRPC")
    const endpoint = new URL(card.url)
    expect(endpoint.protocol).toBe("http:")
    expect(card.url).toBe(url)
    const reply = await rpc(card.url, "tasks/get", { id: "tsk_card_probe" })
    expect(reply.status).toBe(200)
    expect(reply.body.jsonrpc).toBe("2.0")
    expect(errorOf(reply).code).toBe(-32001)
  })

  it("CARD-3: declared capabilities are honest (streaming works, push configs are taken)", async () => {
    const { url } = await open({ door: { pushAllow: ["127.0.0.1"] } })
    const card: any = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card.capabilities.streaming).toBe(true)
    expect(card.capabilities.pushNotifications).toBe(true)
    const stream = await streamAll(url, "message/stream", send("/complete ok"))
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(stream.results.at(-1).result.status.state).toBe("completed")
    const live = resultOf(await rpc(url, "message/send", send("/forever", {}, { blocking: false })))
    const push = await rpc(url, "tasks/pushNotificationConfig/set", {
      taskId: live.id,
      pushNotificationConfig: { url: "http://127.0.0.1:9/hook" }
    })
    expect(resultOf(push).pushNotificationConfig.url).toBe("http://127.0.0.1:9/hook")
    await rpc(url, "tasks/cancel", { id: live.id })
  })

  it("CARD-4 (SHOULD): the card carries caching headers (Cache-Control: no-cache)", async () => {
    const { url } = await open()
    for (const path of [".well-known/agent-card.json", ".well-known/agent.json"]) {
      const response = await fetch(`${url}${path}`)
      expect(response.headers.get("cache-control"), path).toBe("no-cache")
    }
  })
})

describe("JSON-RPC envelope", () => {
  it("RPC-1: a non-JSON body answers -32700 with id null", async () => {
    const { url } = await open()
    for (const body of ["{not json", "", "\u0000\u0001garbage"]) {
      const reply = await post(url, body)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
      expect(reply.body.jsonrpc).toBe("2.0")
      expect(reply.body.id).toBeNull()
      expect(errorOf(reply).code).toBe(-32700)
    }
  })

  it("RPC-2: jsonrpc != \"2.0\", a missing method and an object id answer -32600", async () => {
    const { url } = await open()
    const wrongVersion = await post(url, JSON.stringify({ jsonrpc: "aaa", id: 1, method: "tasks/get", params: { id: "x" } }))
    expect(errorOf(wrongVersion).code).toBe(-32600)
    expect(wrongVersion.body.id).toBe(1)
    const noMethod = await post(url, JSON.stringify({ jsonrpc: "2.0", id: "m", params: {} }))
    expect(errorOf(noMethod).code).toBe(-32600)
    expect(noMethod.body.id).toBe("m")
    const objectId = await post(url, JSON.stringify({ jsonrpc: "2.0", id: { a: 1 }, method: "tasks/get", params: { id: "x" } }))
    expect(errorOf(objectId).code).toBe(-32600)
    expect(objectId.body.id).toBeNull()
  })

  it("RPC-3: an unknown method answers -32601", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/ssend", send("hi"), { id: 9 })
    expect(reply.body.id).toBe(9)
    const error = errorOf(reply)
    expect(error.code).toBe(-32601)
    expect(error.message).toBe("Method not found")
  })

  it("RPC-4: bad params answer -32602", async () => {
    const { url } = await open()
    const cases: Array<[string, string, unknown]> = [
      ["empty key", "message/send", { "": "not_a_dict" }],
      ["parts not an array", "message/send", { message: { kind: "message", messageId: "m1", role: "user", parts: "invalid" } }],
      ["missing message", "message/send", { configuration: { blocking: false } }],
      ["bad role", "message/send", { message: { kind: "message", messageId: "m2", role: "robot", parts: [{ kind: "text", text: "x" }] } }],
      ["empty parts", "message/send", { message: { kind: "message", messageId: "m3", role: "user", parts: [] } }],
      ["historyLength not an int", "tasks/get", { id: "tsk_x", historyLength: "two" }],
      ["cancel without id", "tasks/cancel", {}]
    ]
    for (const [name, method, params] of cases) {
      const reply = await rpc(url, method, params)
      expect(reply.body.error?.code, name).toBe(-32602)
    }
    // tasks/get without id means "the active task" only in the reference dialect.
    const noId = await rpc(url, "tasks/get", {}, { headers: { "a2a-version": "0.3.0" } })
    expect(errorOf(noId).code).toBe(-32602)
  })

  it("RPC-5: the response id echoes the request's (string and number); Content-Type application/json", async () => {
    const { url } = await open()
    for (const id of ["req-abc", 42, 0, "", null]) {
      const reply = await rpc(url, "tasks/get", { id: "tsk_none" }, { id })
      expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
      expect(reply.body.jsonrpc).toBe("2.0")
      expect(reply.body.id).toStrictEqual(id)
    }
    const ok = await rpc(url, "message/send", send("/complete x"), { id: "s-1" })
    expect(ok.body.id).toBe("s-1")
    expect(ok.headers.get("content-type")).toMatch(/^application\/json/)
    expect(resultOf(ok).kind).toBe("task")
    const unknown = await rpc(url, "nope/nope", {}, { id: 77 })
    expect(unknown.body.id).toBe(77)
  })

  it("RPC-6: A2A error messages carry the spec's keywords and codes lie in -32001…-32099", async () => {
    // A capsule that takes text only, so a data part is refused (-32005).
    const { url } = await open({ scripted: { info: { ...echoInfo, attachments: false } } })
    const completed = resultOf(await rpc(url, "message/send", send("/complete x", {}, { blocking: true })))
    expect(completed.status.state).toBe("completed")
    const errors = [
      errorOf(await rpc(url, "tasks/get", { id: "tsk_missing" })),
      errorOf(await rpc(url, "tasks/cancel", { id: completed.id })),
      errorOf(await rpc(url, "agent/getAuthenticatedExtendedCard", {})),
      errorOf(await rpc(url, "message/send", {
        message: a2aMessage("x", { parts: [{ kind: "data", data: { a: 1 } }] })
      }))
    ]
    expect(errors.map((error) => error.code)).toEqual([-32001, -32002, -32004, -32005])
    for (const error of errors) {
      expect(error.code).toBeLessThanOrEqual(-32001)
      expect(error.code).toBeGreaterThanOrEqual(-32099)
      const message = error.message.toLowerCase()
      for (const word of keywordsOf[error.code]!) expect(message, `${error.code}: ${error.message}`).toContain(word)
    }
  })
})

describe("message/send", () => {
  it("SEND-1: a text message answers a Task (kind, id, contextId, status.state)", async () => {
    const { url } = await open()
    const task = resultOf(await rpc(url, "message/send", send("hello")))
    expect(task.kind).toBe("task")
    expect(typeof task.id).toBe("string")
    expect(typeof task.contextId).toBe("string")
    // Blocking by default: the echo capsule's turn ends asking for more.
    expect(task.status.state).toBe("input-required")
    expect(typeof task.status.timestamp).toBe("string")
    expect(Number.isNaN(Date.parse(task.status.timestamp))).toBe(false)
    expect(task.history[0]).toMatchObject({ kind: "message", role: "user", parts: [{ kind: "text", text: "hello" }] })
  })

  it("SEND-2: a contextId is generated when absent and kept when given", async () => {
    const { url } = await open()
    const generated = await start(url, "/complete a")
    expect(generated.contextId).toMatch(/\S/)
    const other = await start(url, "/complete b")
    expect(other.contextId).not.toBe(generated.contextId)
    const kept = await start(url, "/complete c", { contextId: "ctx-client-1" })
    expect(kept.contextId).toBe("ctx-client-1")
    const fetched = resultOf(await rpc(url, "tasks/get", { id: kept.id }))
    expect(fetched.contextId).toBe("ctx-client-1")
  })

  it("SEND-3: an unknown taskId answers -32001; a terminal task's id answers -32004", async () => {
    const { url } = await open()
    expect(errorOf(await rpc(url, "message/send", send("more", { taskId: "tsk_unknown" }))).code).toBe(-32001)
    const done = resultOf(await rpc(url, "message/send", send("/complete x", {}, { blocking: true })))
    expect(done.status.state).toBe("completed")
    expect(errorOf(await rpc(url, "message/send", send("more", { taskId: done.id }))).code).toBe(-32004)
  })

  it("SEND-4: taskId alone infers the contextId; a mismatching pair is an error", async () => {
    const { url } = await open()
    const first = resultOf(await rpc(url, "message/send", send("turn", {}, { blocking: true })))
    expect(first.status.state).toBe("input-required")
    const mismatch = await rpc(url, "message/send", send("x", { taskId: first.id, contextId: "ctx-other" }))
    expect(errorOf(mismatch).code).toBe(-32602)
    expect(resultOf(await rpc(url, "tasks/get", { id: first.id })).status.state).toBe("input-required")
    const follow = resultOf(await rpc(url, "message/send", send("again", { taskId: first.id }, { blocking: true })))
    expect(follow.id).toBe(first.id)
    expect(follow.contextId).toBe(first.contextId)
  })

  it("SEND-5: a follow-up with taskId resumes an input-required task (→ working)", async () => {
    const { url } = await open()
    const first = resultOf(await rpc(url, "message/send", send("one", {}, { blocking: true })))
    expect(first.status.state).toBe("input-required")
    expect(textOf(first.status.message.parts)).toBe(followUpPrompt)
    const resumed = resultOf(await rpc(url, "message/send", send("two", { taskId: first.id, contextId: first.contextId }, { blocking: false })))
    expect(resumed.id).toBe(first.id)
    expect(resumed.status.state).toBe("working")
    const settled = await waitForState(url, first.id, ["input-required"])
    expect(textOf(settled.artifacts.at(-1).parts)).toBe("echo: two")
  })

  it("SEND-6: blocking:true or absent waits for a terminal or interrupted state; blocking:false returns at once", async () => {
    const { url } = await open()
    let began = Date.now()
    const blocked = resultOf(await rpc(url, "message/send", send("/sleep 300", {}, { blocking: true })))
    expect(blocked.status.state).toBe("completed")
    expect(Date.now() - began).toBeGreaterThanOrEqual(280)
    const interrupted = resultOf(await rpc(url, "message/send", send("/ask name?", {}, { blocking: true })))
    expect(interrupted.status.state).toBe("input-required")
    expect(textOf(interrupted.status.message.parts)).toBe("name?")
    began = Date.now()
    const absent = resultOf(await rpc(url, "message/send", send("/sleep 300")))
    expect(absent.status.state).toBe("completed")
    expect(Date.now() - began).toBeGreaterThanOrEqual(280)
    const explicit = resultOf(await rpc(url, "message/send", send("/sleep 300", {}, { blocking: false })))
    expect(["submitted", "working"]).toContain(explicit.status.state)
    // The reference dialect (no `kind`, no configuration) keeps its own default: it never blocks unasked.
    began = Date.now()
    const reference = (await rpc(url, "message/send", { message: referenceMessage("/sleep 300") })).body.result
    expect(["submitted", "working"]).toContain(reference.status.state)
    expect(Date.now() - began).toBeLessThan(280)
  })

  it("SEND-7: a busy capsule answers a Task in state rejected", async () => {
    const { url } = await open({ door: { acceptance: "single" } })
    const first = await start(url, "/forever")
    expect(["submitted", "working"]).toContain(first.status.state)
    const second = resultOf(await rpc(url, "message/send", send("hello")))
    expect(second.kind).toBe("task")
    expect(second.id).not.toBe(first.id)
    expect(second.status.state).toBe("rejected")
    expect(textOf(second.status.message.parts)).toBe("task rejected: capsule is busy")
    expect(resultOf(await rpc(url, "tasks/get", { id: second.id })).status.state).toBe("rejected")
  })

  it("SEND-8: file and data parts answer -32005 when the capsule takes text only", async () => {
    const { url } = await open({ scripted: { info: { ...echoInfo, attachments: false } } })
    const file = await rpc(url, "message/send", {
      message: a2aMessage("x", { parts: [{ kind: "file", file: { uri: "http://example.com/a.txt", mimeType: "text/plain" } }] })
    })
    expect(errorOf(file).code).toBe(-32005)
    const data = await rpc(url, "message/send", { message: a2aMessage("x", { parts: [{ kind: "text", text: "t" }, { kind: "data", data: { a: 1 } }] }) })
    expect(errorOf(data).code).toBe(-32005)
    expect(errorOf(data).message).toBe("Incompatible content types")
  })

  it("SEND-9: an A2A part without a kind, or of another kind, answers -32602; the reference dialect reads `text` as a text part", async () => {
    const { url } = await open()
    for (const part of [{ text: "no kind" }, { kind: "image", text: "x" }, { kind: null, text: "x" }]) {
      const reply = errorOf(await rpc(url, "message/send", { message: a2aMessage("x", { parts: [{ kind: "text", text: "ok" }, part] }) }))
      expect(reply.code, JSON.stringify(part)).toBe(-32602)
    }
    const reference = (await rpc(url, "message/send", { message: referenceMessage("/complete plain") })).body
    expect(reference.error).toBeUndefined()
    // `/complete` was read from the kind-less part: the task completes.
    await waitForState(url, reference.result.id, ["completed"])
  })
})

describe("tasks/get and tasks/cancel", () => {
  it("GET-1: tasks/get answers the Task; an unknown id answers -32001", async () => {
    const { url } = await open()
    const started = await start(url, "/complete hi")
    const task = resultOf(await rpc(url, "tasks/get", { id: started.id }))
    expect(task.kind).toBe("task")
    expect(task.id).toBe(started.id)
    expect(task.contextId).toBe(started.contextId)
    expect(typeof task.status.state).toBe("string")
    const missing = errorOf(await rpc(url, "tasks/get", { id: "tsk_missing" }))
    expect(missing.code).toBe(-32001)
    expect(missing.message).toBe("Task not found")
  })

  it("GET-2: historyLength 0 omits history, N keeps the last N, in chronological order", async () => {
    const { url } = await open()
    const first = resultOf(await rpc(url, "message/send", send("alpha", {}, { blocking: true })))
    resultOf(await rpc(url, "message/send", send("beta", { taskId: first.id }, { blocking: true })))
    const full = resultOf(await rpc(url, "tasks/get", { id: first.id }))
    const lines = (history: ReadonlyArray<any> = []) => history.map((m) => `${m.role}:${textOf(m.parts)}`)
    expect(lines(full.history)).toEqual(["user:alpha", "agent:echo: alpha", "user:beta", "agent:echo: beta"])
    const none = resultOf(await rpc(url, "tasks/get", { id: first.id, historyLength: 0 }))
    expect(none.history ?? []).toEqual([])
    const two = resultOf(await rpc(url, "tasks/get", { id: first.id, historyLength: 2 }))
    expect(lines(two.history)).toEqual(["user:beta", "agent:echo: beta"])
    const many = resultOf(await rpc(url, "tasks/get", { id: first.id, historyLength: 50 }))
    expect(lines(many.history)).toEqual(lines(full.history))
    const sent = resultOf(await rpc(url, "message/send", send("gamma", { taskId: first.id }, { blocking: true, historyLength: 1 })))
    expect(lines(sent.history)).toEqual(["agent:echo: gamma"])
  })

  it("CAN-1: cancel of a running task answers canceled and the capsule turn really stops", async () => {
    const d = await open()
    const watch = await openStream(d.url, "stream/watch", {})
    const started = await start(d.url, "/stream 1000 10")
    await waitForState(d.url, started.id, ["working"])
    await sleep(50)
    const canceled = resultOf(await rpc(d.url, "tasks/cancel", { id: started.id }))
    expect(canceled.kind).toBe("task")
    expect(canceled.id).toBe(started.id)
    expect(canceled.status.state).toBe("canceled")
    expect(textOf(canceled.status.message.parts)).toBe("task canceled")
    expect(await d.run(d.runner.running())).toBe(0)
    // The watch sees the final canceled frame and nothing for the task after it.
    const seen = await collect(watch.events, (event) => event.event === "status" && JSON.parse(event.data!).status.state === "canceled")
    const cursor = await d.run(d.log.lastId())
    await sleep(200)
    expect(await d.run(d.log.lastId())).toBe(cursor)
    expect(seen.filter((event) => event.event === "text").length).toBeGreaterThan(0)
    expect(resultOf(await rpc(d.url, "tasks/get", { id: started.id })).status.state).toBe("canceled")
  })

  it("CAN-2: cancel unknown → -32001; cancel completed → -32002; cancel canceled → the same Task", async () => {
    const { url } = await open()
    expect(errorOf(await rpc(url, "tasks/cancel", { id: "tsk_missing" })).code).toBe(-32001)
    const done = resultOf(await rpc(url, "message/send", send("/complete x", {}, { blocking: true })))
    const refused = errorOf(await rpc(url, "tasks/cancel", { id: done.id }))
    expect(refused.code).toBe(-32002)
    expect(refused.message).toBe("Task cannot be canceled")
    const running = await start(url, "/forever")
    const first = resultOf(await rpc(url, "tasks/cancel", { id: running.id }))
    expect(first.status.state).toBe("canceled")
    const again = resultOf(await rpc(url, "tasks/cancel", { id: running.id }))
    expect(again.id).toBe(running.id)
    expect(again.status.state).toBe("canceled")
    expect(again.contextId).toBe(first.contextId)
  })
})

describe("streaming", () => {
  it("STR-1: message/stream is 200 text/event-stream, one-line JSON-RPC data with the request id, Task first, final last, then closes", async () => {
    const { url } = await open()
    const { all, data, response, results } = await streamAll(url, "message/stream", send("/stream 3 20"), { id: "stream-1" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(response.headers.get("cache-control")).toBe("no-cache")
    expect(data.length).toBeGreaterThanOrEqual(3)
    for (const event of data) expect(event.data).not.toContain("\n")
    for (const result of results) {
      expect(result.jsonrpc).toBe("2.0")
      expect(result.id).toBe("stream-1")
      expect(result.result).toBeDefined()
    }
    expect(results[0].result.kind).toBe("task")
    expect(results.at(-1).result.final).toBe(true)
    expect(results.slice(0, -1).some((r) => r.result.final === true)).toBe(false)
    // The stream closed by itself after the final event (collect returned without a break).
    expect(all.at(-1)!.data).toBe(data.at(-1)!.data)
  })

  it("STR-2: event kinds and the fields each carries", async () => {
    const { url } = await open()
    const runs = await Promise.all(["/think deeply", "/artifact report some content", "echo me"].map((text) =>
      streamAll(url, "message/stream", send(text))
    ))
    const results = runs.flatMap((run) => run.results.map((r) => r.result))
    for (const result of results) {
      expect(["task", "message", "status-update", "artifact-update"]).toContain(result.kind)
      if (result.kind === "status-update") {
        expect(typeof result.taskId).toBe("string")
        expect(typeof result.contextId).toBe("string")
        expect(typeof result.status.state).toBe("string")
        expect(typeof result.final).toBe("boolean")
      }
      if (result.kind === "artifact-update") {
        expect(typeof result.taskId).toBe("string")
        expect(typeof result.contextId).toBe("string")
        expect(typeof result.artifact.artifactId).toBe("string")
        expect(Array.isArray(result.artifact.parts)).toBe(true)
        for (const part of result.artifact.parts) expect(part.kind).toBe("text")
      }
    }
    const thinking = results.find((r) => r.kind === "status-update" && r.status.message?.metadata?.["murmur/kind"] === "thinking")
    expect(textOf(thinking?.status.message.parts)).toBe("thinking about: deeply")
    const report = results.find((r) => r.kind === "artifact-update" && r.artifact.name === "report")
    expect(textOf(report?.artifact.parts)).toBe("some content")
    expect(results.filter((r) => r.kind === "status-update" && r.final).map((r) => r.status.state).sort())
      .toEqual(["completed", "completed", "input-required"])
  })

  it("STR-2: every agent status message has its own messageId (Message.messageId is a unique id)", async () => {
    const { url } = await open()
    const { results } = await streamAll(url, "message/stream", send("/think it over"))
    const messages = results.map((r) => r.result).filter((r) => r.kind === "status-update" && r.status.message !== undefined)
      .map((r) => r.status.message)
    const texts = messages.map((m) => textOf(m.parts))
    expect(new Set(texts).size).toBeGreaterThanOrEqual(3)
    for (const message of messages) expect(message).toMatchObject({ kind: "message", role: "agent" })
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(messages.length)
  })

  it("STR-3: chunked text is one artifactId with append and lastChunk", async () => {
    const { url } = await open()
    const { results } = await streamAll(url, "message/stream", send("/stream 4 20"))
    const chunks = results.map((r) => r.result).filter((r) => r.kind === "artifact-update")
    expect(chunks.length).toBe(5)
    expect(new Set(chunks.map((c) => c.artifact.artifactId)).size).toBe(1)
    expect(chunks.map((c) => c.append)).toEqual([false, true, true, true, true])
    expect(chunks.map((c) => c.lastChunk)).toEqual([false, false, false, false, true])
    expect(chunks.map((c) => textOf(c.artifact.parts)).join("")).toBe("chunk 1 chunk 2 chunk 3 chunk 4 ")
    const task = resultOf(await rpc(url, "tasks/get", { id: results[0].result.id }))
    expect(task.artifacts.find((a: any) => a.artifactId === chunks[0].artifact.artifactId)).toBeDefined()
  })

  it("STR-4: events in generation order; concurrent subscribers see the same sequence; closing one leaves the others", async () => {
    const { url } = await open()
    const signal = AbortSignal.timeout(10_000)
    const main = await openStream(url, "message/stream", send("/stream 10 40"), { signal })
    const mainEvents: Array<SseEvent> = []
    // Read by hand: leaving a for-await loop would cancel the body.
    while (mainEvents.every((event) => event.data === undefined)) {
      const next = await main.events.next()
      if (next.done === true) break
      mainEvents.push(next.value)
    }
    const taskId = JSON.parse(mainEvents[0]!.data!).result.id
    const second = streamAll(url, "tasks/resubscribe", { id: taskId })
    const dropped = streamSome(url, "tasks/resubscribe", { id: taskId }, 2)
    mainEvents.push(...await collect(main.events))
    const mainResults = mainEvents.filter((e) => e.data !== undefined).map((e) => JSON.parse(e.data!).result)
    const secondResults = (await second).results.map((r) => r.result)
    expect((await dropped).data.length).toBe(2)

    const chunkNumbers = mainResults.filter((r) => r.kind === "artifact-update" && textOf(r.artifact.parts) !== "")
      .map((r) => Number(textOf(r.artifact.parts).match(/\d+/)![0]))
    expect(chunkNumbers).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    expect(mainResults.at(-1).status.state).toBe("completed")
    expect(secondResults[0].kind).toBe("task")
    const tail = secondResults.slice(1).map(essence)
    expect(tail.length).toBeGreaterThanOrEqual(2)
    expect(mainResults.slice(1).map(essence).slice(-tail.length)).toEqual(tail)
  })

  it("STR-5: invalid params on message/stream answer a JSON-RPC error", async () => {
    const { url } = await open()
    const { body, response } = await (async () => {
      const r = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: "bad-1", method: "message/stream", params: { message: { kind: "message", messageId: "m", role: "user", parts: "invalid" } } })
      })
      return { response: r, body: await r.text() }
    })()
    const parsed = response.headers.get("content-type")?.startsWith("text/event-stream")
      ? JSON.parse(body.split("\n").find((line) => line.startsWith("data: "))!.slice(6))
      : JSON.parse(body)
    expect(parsed.id).toBe("bad-1")
    expect(parsed.error.code).toBe(-32602)
  })

  it("STR-6: with streaming not declared (acceptance none), message/stream answers -32004", async () => {
    const { url } = await open({ door: { acceptance: "none" } })
    const card: any = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card.capabilities.streaming).toBe(false)
    const reply = await rpc(url, "message/stream", send("hello"))
    const error = errorOf(reply)
    expect(error.code).toBe(-32004)
    expect(error.message).toBe("This operation is not supported")
  })
})

describe("resubscribe and replay", () => {
  it("SUB-1: tasks/resubscribe on a live task: the current Task first, then live events, ending at the terminal state", async () => {
    const { url } = await open()
    const started = await start(url, "/stream 6 60")
    await waitForState(url, started.id, ["working"])
    const { response, results } = await streamAll(url, "tasks/resubscribe", { id: started.id }, { id: 31 })
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(results.every((r) => r.id === 31)).toBe(true)
    expect(results[0].result).toMatchObject({ kind: "task", id: started.id, status: { state: "working" } })
    expect(results.length).toBeGreaterThan(2)
    for (const r of results.slice(1)) expect(r.result.taskId).toBe(started.id)
    expect(results.at(-1).result).toMatchObject({ kind: "status-update", final: true, status: { state: "completed" } })
  })

  it("SUB-2: resubscribe unknown → -32001; terminal → -32004", async () => {
    const { url } = await open()
    expect(errorOf(await rpc(url, "tasks/resubscribe", { id: "tsk_missing" })).code).toBe(-32001)
    const done = resultOf(await rpc(url, "message/send", send("/complete x", {}, { blocking: true })))
    expect(errorOf(await rpc(url, "tasks/resubscribe", { id: done.id })).code).toBe(-32004)
  })

  it("SUB-3: Last-Event-ID replays exactly the events after it; an evicted range gets a gap", async () => {
    const { url } = await open()
    const first = await streamSome(url, "message/stream", send("/stream 8 50"), 4)
    const numbered = first.data.filter((e) => e.id !== undefined)
    expect(numbered.length).toBe(3)
    const taskId = JSON.parse(first.data[0]!.data!).result.id
    const lastSeen = numbered.at(-1)!.id!
    const replay = await streamAll(url, "tasks/resubscribe", { id: taskId }, { headers: { "last-event-id": String(lastSeen) } })
    expect(replay.results[0].result.kind).toBe("task")
    const ids = replay.data.slice(1).map((e) => e.id!)
    expect(ids[0]).toBe(lastSeen + 1)
    for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1]! + 1)
    expect(replay.results.at(-1).result.status.state).toBe("completed")
    const replayedChunks = replay.results.map((r) => r.result).filter((r) => r.kind === "artifact-update").map((r) => textOf(r.artifact.parts))
    const seenChunks = first.data.map((e) => JSON.parse(e.data!).result).filter((r) => r.kind === "artifact-update").map((r) => textOf(r.artifact.parts))
    expect([...seenChunks, ...replayedChunks].join("")).toBe("chunk 1 chunk 2 chunk 3 chunk 4 chunk 5 chunk 6 chunk 7 chunk 8 ")
  })

  it("SUB-3: a cursor older than the buffer gets a gap notice (A2A comment, reference `gap` event)", async () => {
    const d = await open({ events: { capacity: 4 } })
    const started = await start(d.url, "/stream 40 20")
    await waitForState(d.url, started.id, ["working"])
    while ((await d.run(d.log.lastId())) < 10) await sleep(20)
    const a2a = await streamSome(d.url, "tasks/resubscribe", { id: started.id }, 2, { "last-event-id": "1" })
    expect(JSON.parse(a2a.data[0]!.data!).result.kind).toBe("task")
    const gap = a2a.events.find((e) => e.comment?.startsWith("gap "))
    expect(gap).toBeDefined()
    expect(JSON.parse(gap!.comment!.slice(4)).first_available_id).toBeGreaterThan(2)
    const watch = await streamSome(d.url, "stream/watch", {}, 3, { "last-event-id": "1" })
    expect(watch.events.map((e) => e.event).slice(0, 2)).toEqual(["connection-ack", "gap"])
    expect(JSON.parse(watch.events[1]!.data!).first_available_id).toBeGreaterThan(2)
  })
})

describe("vendor methods, push, extended card", () => {
  it("WATCH-1: stream/watch keeps the reference shapes, acks first, spans task turns, ends with capsule-closed", async () => {
    const d = await open()
    const watch = await openStream(d.url, "stream/watch", {}, { id: "w" })
    expect(watch.response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const events: Array<SseEvent> = []
    const reading = (async () => {
      for await (const event of watch.events) events.push(event)
    })()
    const one = resultOf(await rpc(d.url, "message/send", send("/complete one", {}, { blocking: true })))
    const two = resultOf(await rpc(d.url, "message/send", send("/complete two", {}, { blocking: true })))
    await sleep(50)
    await d.close()
    await reading
    const named = events.filter((e) => e.event !== undefined)
    expect(named[0]!.event).toBe("connection-ack")
    expect(JSON.parse(named[0]!.data!)).toMatchObject({ role: "observer" })
    expect(named.at(-1)!.event).toBe("capsule-closed")
    const statuses = named.filter((e) => e.event === "status").map((e) => JSON.parse(e.data!))
    for (const status of statuses) {
      expect(status.jsonrpc).toBeUndefined()
      expect(typeof status.context_id).toBe("string")
      expect(status.kind).toBeUndefined()
    }
    const finals = statuses.filter((s) => s.final)
    expect(finals.map((s) => [s.id, s.status.state, s.status.response])).toEqual([
      [one.id, "completed", "one"],
      [two.id, "completed", "two"]
    ])
  })

  it("PUSH-1: the push notification config methods take, read, list and delete configs in 0.3's shapes", async () => {
    const { url } = await open({ door: { pushAllow: ["127.0.0.1"] } })
    const live = resultOf(await rpc(url, "message/send", send("/forever", {}, { blocking: false })))
    const config = { id: "cfg-1", url: "http://127.0.0.1:9/hook", token: "tk", authentication: { schemes: ["Bearer"], credentials: "cr" } }
    const set = resultOf(await rpc(url, "tasks/pushNotificationConfig/set", { taskId: live.id, pushNotificationConfig: config }, { id: "set" }))
    expect(set).toEqual({ taskId: live.id, pushNotificationConfig: config })
    expect(resultOf(await rpc(url, "tasks/pushNotificationConfig/get", { id: live.id, pushNotificationConfigId: "cfg-1" }))).toEqual(set)
    // Without a config id, 0.3 means the task's (first) config.
    expect(resultOf(await rpc(url, "tasks/pushNotificationConfig/get", { id: live.id }))).toEqual(set)
    expect(resultOf(await rpc(url, "tasks/pushNotificationConfig/list", { id: live.id }))).toEqual([set])
    expect(resultOf(await rpc(url, "tasks/pushNotificationConfig/delete", { id: live.id, pushNotificationConfigId: "cfg-1" }))).toBeNull()
    expect(resultOf(await rpc(url, "tasks/pushNotificationConfig/list", { id: live.id }))).toEqual([])
    expect(errorOf(await rpc(url, "tasks/pushNotificationConfig/get", { id: live.id, pushNotificationConfigId: "cfg-1" })).code).toBe(-32001)
    expect(errorOf(await rpc(url, "tasks/pushNotificationConfig/set", { taskId: "tsk_none", pushNotificationConfig: config })).code).toBe(-32001)
    await rpc(url, "tasks/cancel", { id: live.id })
  })

  it("XCARD-1: agent/getAuthenticatedExtendedCard, not declared, answers -32004", async () => {
    const { url } = await open()
    const card: any = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card.supportsAuthenticatedExtendedCard ?? false).toBe(false)
    const error = errorOf(await rpc(url, "agent/getAuthenticatedExtendedCard", {}))
    expect(error.code).toBe(-32004)
    expect(error.message).toBe("This operation is not supported")
  })
})

describe("quality", () => {
  it("Q-1: 20 parallel message/send + tasks/get", async () => {
    const { url } = await open({ tasks: { queueDepth: 32, maxActive: 4 } })
    const tasks = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const task = resultOf(await rpc(url, "message/send", send(`/complete n${i}`)))
      const fetched = resultOf(await rpc(url, "tasks/get", { id: task.id }))
      expect(fetched.id).toBe(task.id)
      return task
    }))
    expect(new Set(tasks.map((t) => t.id)).size).toBe(20)
    const settled = await Promise.all(tasks.map((t) => waitForState(url, t.id, ["completed"])))
    expect(settled.map((t) => textOf(t.status.message.parts))).toEqual(tasks.map((_, i) => `n${i}`))
  })

  it("Q-1: unicode round-trips", async () => {
    const { url } = await open()
    const text = "héllo 🌍 日本語 \u202e ‮ zero\u200bwidth \"quotes\" \\ back"
    const task = resultOf(await rpc(url, "message/send", send(text, {}, { blocking: true })))
    expect(textOf(task.history[0].parts)).toBe(text)
    expect(textOf(task.artifacts[0].parts)).toBe(`echo: ${text}`)
  })

  it("Q-1: a 1 MiB text is taken when the body limit allows it; beyond the limit 413 with a JSON-RPC error", async () => {
    const { url } = await open({ door: { maxBodyBytes: 4 * 1024 * 1024 } })
    const big = "a".repeat(1024 * 1024)
    const task = resultOf(await rpc(url, "message/send", send(`/complete ${big}`, {}, { blocking: true })))
    expect(task.status.state).toBe("completed")
    expect(textOf(task.status.message.parts).length).toBe(big.length)
    await door!.close()
    const small = await open()
    const refused = await rpc(small.url, "message/send", send(big))
    expect(refused.status).toBe(413)
    expect(refused.body.jsonrpc).toBe("2.0")
    expect(errorOf(refused).code).toBe(-32600)
  })

  it("Q-1: unknown extra fields are ignored; nulls in optional fields are accepted", async () => {
    const { url } = await open()
    const extra = resultOf(await rpc(url, "message/send", {
      message: { ...a2aMessage("/complete extra"), futureField: { x: 1 }, parts: [{ kind: "text", text: "/complete extra", extraPart: true }] },
      configuration: { blocking: true, acceptedOutputModes: ["text/plain"], unknownOption: 3 },
      metadata: { anything: true },
      somethingNew: [1, 2]
    }))
    expect(extra.status.state).toBe("completed")
    const nulls = resultOf(await rpc(url, "message/send", {
      message: { ...a2aMessage("/complete nulls"), contextId: null, taskId: null, metadata: null, referenceTaskIds: null },
      configuration: { blocking: null, historyLength: null, pushNotificationConfig: null },
      metadata: null
    }))
    expect(["submitted", "working", "completed"]).toContain(nulls.status.state)
    expect(resultOf(await rpc(url, "tasks/get", { id: nulls.id, historyLength: null })).id).toBe(nulls.id)
  })

  it("Q-3: with max-active 2, two tasks parked in input-required leave their slots: a third blocking send answers", async () => {
    const { url, registry } = await open({ tasks: { queueDepth: 8, maxActive: 2 } })
    const parked = [
      resultOf(await rpc(url, "message/send", send("first"))),
      resultOf(await rpc(url, "message/send", send("second")))
    ]
    expect(parked.map((task) => task.status.state)).toEqual(["input-required", "input-required"])
    // Blocking by default (A2A); the bound is far away (20 s), so the answer is the task's own.
    const third = resultOf(await rpc(url, "message/send", send("/complete third")))
    expect([third.status.state, textOf(third.status.message.parts)]).toEqual(["completed", "third"])
    // Input for a parked task takes a slot again and the conversation goes on where it was.
    const resumed = resultOf(await rpc(url, "message/send", send("/done", { taskId: parked[0].id })))
    expect([resumed.id, resumed.status.state]).toEqual([parked[0].id, "completed"])
    expect(await door!.run(registry.stats())).toMatchObject({ active: 0, parked: 1, queued: 0 })
  })

  it("Q-3: parked tasks that gave their slots back count against --queue-depth: past it a send is rejected at once", async () => {
    const { url } = await open({ tasks: { queueDepth: 2, maxActive: 2 } })
    for (const text of ["one", "two"]) expect(resultOf(await rpc(url, "message/send", send(text))).status.state).toBe("input-required")
    const refused = resultOf(await rpc(url, "message/send", send("three")))
    expect([refused.status.state, textOf(refused.status.message.parts)]).toEqual(["rejected", "task rejected: capsule is busy"])
  })

  it("Q-3: the blocking wait is bounded: a queued or long task is answered as it stands with a status message saying why", async () => {
    // max-active 1 (a script or agent capsule): a parked task keeps its slot, so the next one queues.
    const { url } = await open({ tasks: { queueDepth: 8, maxActive: 1 }, door: { blockingTimeoutMs: 300 } })
    const holder = resultOf(await rpc(url, "message/send", send("/ask name?")))
    expect(holder.status.state).toBe("input-required")
    const queued = resultOf(await rpc(url, "message/send", send("/complete later")))
    expect(queued.status.state).toBe("submitted")
    expect(textOf(queued.status.message.parts)).toBe(
      "not started after 0.3s (serve --blocking-timeout): 1 of 1 active slots are busy, 1 of them by tasks waiting for input; " +
        "it stays queued and starts when one frees: follow it with tasks/get or tasks/resubscribe"
    )
    // The task was left queued, not dropped: answering the holder lets it run.
    resultOf(await rpc(url, "message/send", send("Ada", { taskId: holder.id })))
    expect((await waitForState(url, queued.id, ["completed"])).status.state).toBe("completed")
    const long = resultOf(await rpc(url, "message/send", send("/forever")))
    expect(long.status.state).toBe("working")
    expect(textOf(long.status.message.parts)).toBe("still working after 0.3s (serve --blocking-timeout); it runs on: follow it with tasks/get or tasks/resubscribe")
  })

  it("Q-3 through `serve --max-active 2 --blocking-timeout 1` (the TCK's setup): parked tasks do not starve a blocking send; the bound answers a long one", async () => {
    const cleanups: Array<() => Promise<void> | void> = []
    try {
      const served = await listeningCli(["serve", "--max-active", "2", "--blocking-timeout", "1", "--json"], {}, cleanups)
      const url = served.listening.url
      for (const text of ["first", "second"]) expect(resultOf(await rpc(url, "message/send", send(text))).status.state).toBe("input-required")
      expect(resultOf(await rpc(url, "message/send", send("third"))).status.state).toBe("input-required")
      const long = resultOf(await rpc(url, "message/send", send("/forever")))
      expect([long.status.state, textOf(long.status.message.parts)]).toEqual([
        "working",
        "still working after 1s (serve --blocking-timeout); it runs on: follow it with tasks/get or tasks/resubscribe"
      ])
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup()
    }
  })

  it("Q-2: SSE frames end with a blank line; heartbeat comments are well-formed blocks", async () => {
    const { url } = await open({ door: { heartbeatMs: 20 } })
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "message/stream", params: send("/sleep 150") })
    })
    const body = await response.text()
    expect(body.endsWith("\n\n")).toBe(true)
    const blocks = body.slice(0, -2).split("\n\n")
    let heartbeats = 0
    for (const block of blocks) {
      if (block === ":heartbeat") {
        heartbeats++
        continue
      }
      const lines = block.split("\n")
      for (const line of lines) expect(line).toMatch(/^(id: \d+|event: \S+|data: .+)$/)
      const data = lines.filter((line) => line.startsWith("data: "))
      expect(data.length).toBe(1)
      expect(JSON.parse(data[0]!.slice(6)).id).toBe(5)
    }
    expect(heartbeats).toBeGreaterThanOrEqual(2)
    const last = JSON.parse(blocks.filter((b) => b !== ":heartbeat").at(-1)!.split("\n").find((l) => l.startsWith("data: "))!.slice(6))
    expect(last.result).toMatchObject({ kind: "status-update", final: true, status: { state: "completed" } })
  })
})
