/**
 * The door's JSON-RPC surface over real HTTP: envelope validation, the agent card, every method
 * in both dialects, their errors, and the headers of spec §3.
 */
import { describe, expect, it } from "vitest"
import {
  a2aMessage,
  post,
  referenceMessage,
  rpc,
  sleep,
  waitForState
} from "../lib/Door.js"
import { echoInfo } from "../../src/services/EchoCapsule.js"
import { A2A_HEADERS, dataOf, nodeStream, readUntil } from "../lib/DoorKit.js"
import { doorPerTest } from "../lib/DoorPerTest.js"

const A2A = A2A_HEADERS

const doors = doorPerTest()
const { open } = doors

/** Posts a reference `message/send` and returns its result. */
const sendRef = async (url: string, text: string, headers: Record<string, string> = {}) => {
  const reply = await rpc(url, "message/send", { message: referenceMessage(text) }, { headers })
  expect(reply.body.error).toBeUndefined()
  return reply.body.result
}

/** Posts an A2A `message/send` and returns its result. */
/** An A2A `message/send`, non-blocking unless asked (A2A's own default, blocking, is in Conformance SEND-6). */
const sendA2a = async (url: string, text: string, options: { blocking?: boolean; extra?: Record<string, unknown>; headers?: Record<string, string> } = {}) => {
  const reply = await rpc(url, "message/send", {
    message: a2aMessage(text, options.extra),
    configuration: { blocking: options.blocking ?? false }
  }, { headers: options.headers ?? {} })
  expect(reply.body.error).toBeUndefined()
  return reply.body.result
}

describe("JSON-RPC envelope", () => {
  it("answers malformed JSON with -32700 and id null, as HTTP 200 application/json", async () => {
    const { url } = await open()
    const reply = await post(url, `{"jsonrpc":"2.0","id":5,"method":`)
    expect(reply.status).toBe(200)
    expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
    expect(reply.body.jsonrpc).toBe("2.0")
    expect(reply.body.id).toBeNull()
    expect(reply.body.error.code).toBe(-32700)
    expect(reply.body.error.message).toBe("Parse error")
    expect(reply.body.result).toBeUndefined()
  })

  it("answers an empty body with -32700", async () => {
    const { url } = await open()
    const reply = await post(url, "")
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
  })

  it("refuses jsonrpc \"1.0\" with -32600, echoing the id", async () => {
    const { url } = await open()
    const reply = await post(url, JSON.stringify({ jsonrpc: "1.0", id: 7, method: "tasks/get", params: {} }))
    expect(reply.status).toBe(200)
    expect(reply.body.id).toBe(7)
    expect(reply.body.error.code).toBe(-32600)
    expect(reply.body.error.message).toMatch(/^Invalid Request/)
  })

  it("refuses a missing jsonrpc member with -32600", async () => {
    const { url } = await open()
    const reply = await post(url, JSON.stringify({ id: "j", method: "tasks/get", params: {} }))
    expect(reply.body).toMatchObject({ id: "j", error: { code: -32600 } })
  })

  it("refuses a missing or empty method with -32600, echoing the id", async () => {
    const { url } = await open()
    const missing = await post(url, JSON.stringify({ jsonrpc: "2.0", id: "m", params: {} }))
    expect(missing.body).toMatchObject({ jsonrpc: "2.0", id: "m", error: { code: -32600 } })
    const empty = await post(url, JSON.stringify({ jsonrpc: "2.0", id: 3, method: "", params: {} }))
    expect(empty.body).toMatchObject({ id: 3, error: { code: -32600 } })
    const notString = await post(url, JSON.stringify({ jsonrpc: "2.0", id: 4, method: 12, params: {} }))
    expect(notString.body).toMatchObject({ id: 4, error: { code: -32600 } })
  })

  it("refuses an object id with -32600 and answers with id null", async () => {
    const { url } = await open()
    const reply = await post(url, JSON.stringify({ jsonrpc: "2.0", id: { a: 1 }, method: "tasks/get", params: {} }))
    expect(reply.body.id).toBeNull()
    expect(reply.body.error.code).toBe(-32600)
  })

  it("refuses a batch array with -32600 and id null", async () => {
    const { url } = await open()
    const reply = await post(url, JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tasks/get", params: {} }]))
    expect(reply.status).toBe(200)
    expect(reply.body.id).toBeNull()
    expect(reply.body.error.code).toBe(-32600)
    expect(reply.body.error.message).toMatch(/batch/)
  })

  it("refuses non-object params with -32600", async () => {
    const { url } = await open()
    const reply = await post(url, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tasks/get", params: "x" }))
    expect(reply.body).toMatchObject({ id: 9, error: { code: -32600 } })
  })

  it("refuses a JSON scalar body with -32600", async () => {
    const { url } = await open()
    const reply = await post(url, "42")
    expect(reply.body).toMatchObject({ id: null, error: { code: -32600 } })
  })

  it("answers an unknown method with -32601, echoing string and number ids", async () => {
    const { url } = await open()
    const byString = await rpc(url, "tasks/frobnicate", {}, { id: "req-α" })
    expect(byString.status).toBe(200)
    expect(byString.body).toEqual({
      jsonrpc: "2.0",
      id: "req-α",
      error: { code: -32601, message: "Method not found", data: { method: "tasks/frobnicate" } }
    })
    const byNumber = await rpc(url, "nope", {}, { id: 42 })
    expect(byNumber.body.id).toBe(42)
    expect(byNumber.body.error.code).toBe(-32601)
    const byNull = await rpc(url, "nope", {}, { id: null })
    expect(byNull.body.id).toBeNull()
    expect(byNull.body.error.code).toBe(-32601)
    // Method names are matched exactly.
    const cased = await rpc(url, "Tasks/Get", { id: "x" }, { id: 43 })
    expect(cased.body.error.code).toBe(-32601)
  })

  it("keeps the response keys in order jsonrpc, id, result|error", async () => {
    const { url } = await open()
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 11, method: "session/stop", params: {} })
    })
    const text = await response.text()
    expect(text.startsWith(`{"jsonrpc":"2.0","id":11,"result":`)).toBe(true)
  })

  it("accepts a request without params and a notification without id (answered with id null)", async () => {
    const { url, sessionId } = await open()
    const noParams = await post(url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/stop" }))
    expect(noParams.body.result.session_id).toBe(sessionId)
    const noId = await post(url, JSON.stringify({ jsonrpc: "2.0", method: "session/stop", params: {} }))
    expect(noId.body.id).toBeNull()
    expect(noId.body.result.session_id).toBe(sessionId)
  })

  it("answers bad params with -32602, echoing the id", async () => {
    const { url } = await open()
    const emptyKey = await rpc(url, "message/send", { "": "x" }, { id: "p1" })
    expect(emptyKey.body.id).toBe("p1")
    expect(emptyKey.body.error.code).toBe(-32602)
    expect(emptyKey.body.error.message).toMatch(/^Invalid params: /)

    const badParts = await rpc(url, "message/send", { message: { messageId: "m1", role: "user", parts: "invalid" } }, { id: 2 })
    expect(badParts.body).toMatchObject({ id: 2, error: { code: -32602 } })

    const noMessageA2a = await rpc(url, "message/send", {}, { id: 3, headers: A2A })
    expect(noMessageA2a.body).toMatchObject({ id: 3, error: { code: -32602 } })

    const noMessageRef = await rpc(url, "message/send", {}, { id: 4 })
    expect(noMessageRef.body).toMatchObject({ id: 4, error: { code: -32602 } })

    const badRole = await rpc(url, "message/send", { message: a2aMessage("x", { role: "robot" }) }, { id: 5 })
    expect(badRole.body).toMatchObject({ id: 5, error: { code: -32602 } })

    const noParts = await rpc(url, "message/send", { message: a2aMessage("x", { parts: [] }) }, { id: 6 })
    expect(noParts.body).toMatchObject({ id: 6, error: { code: -32602 } })

    const badHistory = await rpc(url, "tasks/get", { id: "tsk_x", historyLength: -1 }, { id: 7 })
    expect(badHistory.body).toMatchObject({ id: 7, error: { code: -32602 } })

    const pathyId = await rpc(url, "message/send", { message: referenceMessage("x", { contextId: "../../etc/passwd" }) }, { id: 8 })
    expect(pathyId.body).toMatchObject({ id: 8, error: { code: -32602 } })
  })
})

describe("agent card", () => {
  it("serves identical cards at agent-card.json and agent.json, with or without a query string", async () => {
    const { url, sessionId } = await open()
    const paths = [
      ".well-known/agent-card.json",
      ".well-known/agent.json",
      ".well-known/agent-card.json?A2A-Version=0.3",
      ".well-known/agent.json?x=1&y=2"
    ]
    const bodies: Array<string> = []
    for (const path of paths) {
      const response = await fetch(`${url}${path}`)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^application\/json/)
      bodies.push(await response.text())
    }
    expect(new Set(bodies).size).toBe(1)
    const card = JSON.parse(bodies[0]!)
    expect(card.url).toBe(url)
    expect(card.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    expect(new URL(card.url).href).toBe(card.url)
    expect(card.session_id).toBe(sessionId)
    expect(card.protocolVersion).toBe("0.3.0")
    for (const field of ["name", "description", "version", "defaultInputModes", "defaultOutputModes", "skills", "capabilities", "preferredTransport"]) {
      expect(card).toHaveProperty(field)
    }
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true, tools: [], shell: false, network: false })
  })

  it("advertises streaming false under acceptance none", async () => {
    const { url } = await open({ door: { acceptance: "none" } })
    const card: any = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card.capabilities.streaming).toBe(false)
  })
})

describe("message/send", () => {
  it("answers a reference message with a submitted task snapshot without kind", async () => {
    const { url } = await open()
    const result = await sendRef(url, "hello")
    expect(Object.keys(result)).toEqual(["id", "contextId", "status"])
    expect(result.id).toMatch(/^tsk_[0-9a-f]{32}$/)
    expect(result.contextId).toMatch(/^ctx_[0-9a-f]{32}$/)
    expect(result.status).toEqual({ state: "submitted" })
    expect(result.kind).toBeUndefined()
  })

  it("takes the message itself as params in the reference dialect", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/send", referenceMessage("/complete bare"))
    expect(reply.body.result.status.state).toBe("submitted")
    const done = await waitForState(url, reply.body.result.id, ["completed"])
    expect(done.status).toEqual({ state: "completed" })
  })

  it("answers an A2A message with kind task", async () => {
    const { url } = await open()
    const result = await sendA2a(url, "hello")
    expect(result.kind).toBe("task")
    expect(result.status.state).toBe("submitted")
    expect(typeof result.status.timestamp).toBe("string")
    expect(result.history[0]).toMatchObject({ kind: "message", role: "user", parts: [{ kind: "text", text: "hello" }] })
  })

  it("keeps the given contextId", async () => {
    const { url } = await open()
    const result = await sendA2a(url, "hello", { extra: { contextId: "ctx-mine" } })
    expect(result.contextId).toBe("ctx-mine")
  })

  it("with configuration.blocking waits for input-required, or for a terminal state", async () => {
    const { url } = await open()
    const waiting = await sendA2a(url, "hello there", { blocking: true })
    expect(waiting.status.state).toBe("input-required")
    expect(waiting.status.message.parts[0].text).toBe("Say more, or /done to finish.")
    expect(waiting.artifacts[0].parts[0].text).toBe("echo: hello there")

    const done = await sendA2a(url, "/complete all done", { blocking: true })
    expect(done.status.state).toBe("completed")
    expect(done.status.message.parts[0].text).toBe("all done")
    expect(done.artifacts.some((artifact: any) => artifact.parts[0].text === "all done")).toBe(true)

    const failed = await sendA2a(url, "/fail nope", { blocking: true })
    expect(failed.status.state).toBe("failed")
    expect(failed.status.message.parts[0].text).toBe("nope")

    const nonBlocking = await sendA2a(url, "/sleep 200", { blocking: false })
    expect(nonBlocking.status.state).toBe("submitted")
  })

  it("resumes an input-required task by taskId (A2A)", async () => {
    const { url } = await open()
    const first = await sendA2a(url, "turn one", { blocking: true })
    expect(first.status.state).toBe("input-required")
    const resumed = await sendA2a(url, "turn two", { extra: { taskId: first.id, contextId: first.contextId } })
    expect(resumed.id).toBe(first.id)
    expect(resumed.kind).toBe("task")
    expect(resumed.status.state).toBe("working")
    const again = await waitForState(url, first.id, ["input-required"])
    expect(again.artifacts.map((artifact: any) => artifact.parts[0].text)).toEqual(["echo: turn one", "echo: turn two"])
    const finished = await sendA2a(url, "/done", { blocking: true, extra: { taskId: first.id } })
    expect(finished.id).toBe(first.id)
    expect(finished.status.state).toBe("completed")
  })

  it("an A2A message without taskId starts a new task instead of answering the waiting one", async () => {
    const { url } = await open()
    const first = await sendA2a(url, "waiting", { blocking: true })
    expect(first.status.state).toBe("input-required")
    const other = await sendA2a(url, "another")
    expect(other.id).not.toBe(first.id)
    expect(other.status.state).toBe("submitted")
    const still = await rpc(url, "tasks/get", { id: first.id })
    expect(still.body.result.status.state).toBe("input-required")
  })

  it("routes a reference follow-up without taskId to the active input-required task", async () => {
    const { url } = await open()
    const first = await sendRef(url, "/ask what now?")
    const waiting = await waitForState(url, first.id, ["input-required"])
    expect(waiting.artifacts).toEqual([{ name: "prompt", parts: [{ text: "what now?" }] }])
    const answer = await sendRef(url, "this")
    expect(answer.id).toBe(first.id)
    expect(answer.status.state).toBe("working")
    const done = await waitForState(url, first.id, ["completed"])
    expect(done.id).toBe(first.id)
    const a2aView = await rpc(url, "tasks/get", { id: first.id }, { headers: A2A })
    expect(a2aView.body.result.status.message.parts[0].text).toBe("you said: this")
  })

  it("answers an unknown taskId with -32001", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/send", { message: a2aMessage("x", { taskId: "tsk_unknown" }) }, { id: "u" })
    expect(reply.body).toMatchObject({ id: "u", error: { code: -32001, message: "Task not found", data: { taskId: "tsk_unknown" } } })
  })

  it("refuses a follow-up to a terminal task with -32004", async () => {
    const { url } = await open()
    const done = await sendA2a(url, "/complete", { blocking: true })
    expect(done.status.state).toBe("completed")
    const reply = await rpc(url, "message/send", { message: a2aMessage("more", { taskId: done.id }) }, { id: 8 })
    expect(reply.body.id).toBe(8)
    expect(reply.body.error.code).toBe(-32004)
  })

  it("refuses a contextId that does not match the task's with -32602", async () => {
    const { url } = await open()
    const first = await sendA2a(url, "hi", { blocking: true })
    const reply = await rpc(url, "message/send", {
      message: a2aMessage("more", { taskId: first.id, contextId: "ctx-someone-else" })
    })
    expect(reply.body.error.code).toBe(-32602)
    const still = await rpc(url, "tasks/get", { id: first.id })
    expect(still.body.result.status.state).toBe("input-required")
  })

  it("refuses file and data parts with -32005 for a capsule that takes text only", async () => {
    const { url } = await open({ scripted: { info: { ...echoInfo, attachments: false } } })
    const file = await rpc(url, "message/send", {
      message: a2aMessage("x", { parts: [{ kind: "text", text: "see" }, { kind: "file", file: { uri: "https://example.com/a.png" } }] })
    }, { id: "f" })
    expect(file.body).toMatchObject({ id: "f", error: { code: -32005, message: "Incompatible content types" } })
    const data = await rpc(url, "message/send", { message: a2aMessage("x", { parts: [{ kind: "data", data: { a: 1 } }] }) })
    expect(data.body.error.code).toBe(-32005)
  })

  it("answers -32601 under acceptance none (message/send and message/stream)", async () => {
    const { url } = await open({ door: { acceptance: "none" } })
    const send = await rpc(url, "message/send", { message: referenceMessage("hi") }, { id: 1 })
    expect(send.body).toMatchObject({ id: 1, error: { code: -32601, message: "Method not found" } })
    const stream = await rpc(url, "message/stream", { message: referenceMessage("hi") }, { id: 2 })
    expect(stream.headers.get("content-type")).toMatch(/^application\/json/)
    expect(stream.body).toMatchObject({ id: 2, error: { code: -32601 } })
    // Other methods are still served.
    const get = await rpc(url, "tasks/get", { id: "tsk_x" })
    expect(get.body.error.code).toBe(-32001)
  })

  it("under acceptance single answers a second task as a rejected result", async () => {
    const { url } = await open({ door: { acceptance: "single" } })
    const first = await sendRef(url, "/sleep 300")
    expect(first.status.state).toBe("submitted")
    const second = await sendRef(url, "/complete")
    expect(second.id).not.toBe(first.id)
    expect(second.status.state).toBe("rejected")
    const a2a = await sendA2a(url, "/complete")
    expect(a2a.kind).toBe("task")
    expect(a2a.status.state).toBe("rejected")
    expect(a2a.status.message.parts[0].text).toBe("task rejected: capsule is busy")
    const recorded = await rpc(url, "tasks/get", { id: second.id })
    expect(recorded.body.result.status.state).toBe("rejected")
    // … also after the first one finished.
    await waitForState(url, first.id, ["completed"])
    const third = await sendRef(url, "/complete")
    expect(third.status.state).toBe("rejected")
  })

  it("under queue answers rejected once the queue is full", async () => {
    const { url } = await open({ tasks: { queueDepth: 1, maxActive: 1 } })
    const running = await sendRef(url, "/forever")
    await waitForState(url, running.id, ["working"])
    const queued = await sendRef(url, "/complete queued")
    expect(queued.status.state).toBe("submitted")
    const refused = await sendRef(url, "/complete refused")
    expect(refused.status.state).toBe("rejected")
    expect((await rpc(url, "tasks/get", { id: queued.id })).body.result.status.state).toBe("submitted")
    // Room again once the queue drains.
    await rpc(url, "tasks/cancel", { id: running.id })
    await waitForState(url, queued.id, ["completed"])
    const later = await sendRef(url, "/complete later")
    expect(later.status.state).toBe("submitted")
  })
})

describe("tasks/get", () => {
  it("gets a task by id, in the dialect it was created with", async () => {
    const { url } = await open()
    const ref = await sendRef(url, "/complete r")
    const refDone = await waitForState(url, ref.id, ["completed"])
    expect(refDone).toEqual({ id: ref.id, contextId: ref.contextId, status: { state: "completed" } })
    const a2a = await sendA2a(url, "/complete a", { blocking: true })
    const got = await rpc(url, "tasks/get", { id: a2a.id })
    expect(got.body.result.kind).toBe("task")
    expect(got.body.result.status.state).toBe("completed")
    // An explicit A2A request gets A2A shapes for a reference task too.
    const asA2a = await rpc(url, "tasks/get", { id: ref.id }, { headers: A2A })
    expect(asA2a.body.result.kind).toBe("task")
  })

  it("honours historyLength 0 and N", async () => {
    const { url } = await open()
    const task = await sendA2a(url, "one", { blocking: true })
    await sendA2a(url, "two", { extra: { taskId: task.id } })
    await sleep(10)
    await waitForState(url, task.id, ["input-required"])
    const full = await rpc(url, "tasks/get", { id: task.id })
    const texts = full.body.result.history.map((message: any) => message.parts[0].text)
    expect(texts).toEqual(["one", "echo: one", "two", "echo: two"])
    const none = await rpc(url, "tasks/get", { id: task.id, historyLength: 0 })
    expect(none.body.result.history ?? []).toEqual([])
    const last2 = await rpc(url, "tasks/get", { id: task.id, historyLength: 2 })
    expect(last2.body.result.history.map((message: any) => message.parts[0].text)).toEqual(["two", "echo: two"])
    const many = await rpc(url, "tasks/get", { id: task.id, historyLength: 100 })
    expect(many.body.result.history).toHaveLength(4)
  })

  it("without id returns the active task in the reference dialect", async () => {
    const { url } = await open()
    const empty = await rpc(url, "tasks/get", {})
    expect(empty.body.error.code).toBe(-32001)
    const task = await sendRef(url, "/forever")
    await waitForState(url, task.id, ["working"])
    const active = await rpc(url, "tasks/get", {})
    expect(active.body.result).toEqual({ id: task.id, contextId: task.contextId, status: { state: "working" } })
    const nonString = await rpc(url, "tasks/get", { id: 5 })
    expect(nonString.body.result.id).toBe(task.id)
  })

  it("without id answers -32602 to an A2A request", async () => {
    const { url } = await open()
    const task = await sendRef(url, "/forever")
    await waitForState(url, task.id, ["working"])
    const reply = await rpc(url, "tasks/get", {}, { id: "g", headers: A2A })
    expect(reply.body).toMatchObject({ id: "g", error: { code: -32602 } })
  })

  it("answers an unknown id with -32001", async () => {
    const { url } = await open()
    const reply = await rpc(url, "tasks/get", { id: "tsk_0000" }, { id: 77 })
    expect(reply.body).toEqual({ jsonrpc: "2.0", id: 77, error: { code: -32001, message: "Task not found", data: { taskId: "tsk_0000" } } })
  })
})

describe("tasks/cancel", () => {
  it("cancels a running task with the residue of detached work and delegations", async () => {
    const { url } = await open()
    const detach = await sendRef(url, "/detach sleep 900")
    await waitForState(url, detach.id, ["completed"])
    const delegate = await sendRef(url, "/delegate helper 1.2.3")
    await waitForState(url, delegate.id, ["completed"])
    const forever = await sendRef(url, "/forever")
    await waitForState(url, forever.id, ["working"])

    const reply = await rpc(url, "tasks/cancel", { id: forever.id }, { id: "c" })
    expect(reply.body.id).toBe("c")
    const result = reply.body.result
    expect(result.id).toBe(forever.id)
    expect(result.status).toEqual({ state: "canceled" })
    expect(result.artifacts).toHaveLength(1)
    expect(result.artifacts[0].name).toBe("residue")
    const items = result.artifacts[0].parts.map((part: any) => JSON.parse(part.text))
    expect(items).toHaveLength(2)
    expect(items[0]).toMatchObject({ kind: "detached_shell", binary: "sleep", command: "900" })
    expect(items[0].work_id).toMatch(/^wrk_/)
    expect(Object.keys(items[0])).toEqual(["binary", "command", "kind", "started_at_ms", "work_id"])
    expect(items[1]).toMatchObject({ kind: "delegation", capsule: "helper", version: "1.2.3", child_workdir: "delegations/helper" })
    expect(items[1].delegation_id).toMatch(/^dlg_/)
    expect(items[1].child_session_id).toMatch(/^ses_/)

    // Finalizers ran before the answer: the state is recorded and no fiber is left.
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)
    expect((await rpc(url, "tasks/get", { id: forever.id })).body.result.status.state).toBe("canceled")
  })

  it("cancels without residue artifacts when nothing keeps running (A2A)", async () => {
    const { url } = await open()
    const task = await sendA2a(url, "/forever")
    await waitForState(url, task.id, ["working"])
    const reply = await rpc(url, "tasks/cancel", { id: task.id }, { headers: A2A })
    const result = reply.body.result
    expect(result.kind).toBe("task")
    expect(result.status.state).toBe("canceled")
    expect(result.status.message.parts[0].text).toBe("task canceled")
    expect(result.artifacts ?? []).toEqual([])
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)
  })

  it("sends a final canceled frame to the task's stream, which then closes", async () => {
    const { url } = await open()
    const { events, headers } = await nodeStream(url, "message/stream", { message: referenceMessage("/forever") })
    expect(headers["content-type"]).toMatch(/^text\/event-stream/)
    const head = await readUntil(events, (event) => event.event === "status" && JSON.parse(event.data!).status.message === "running until canceled")
    const taskId = JSON.parse(head[0]!.data!).id
    const cancel = await rpc(url, "tasks/cancel", { id: taskId })
    expect(cancel.body.result.status.state).toBe("canceled")
    const rest = await readUntil(events)
    const statuses = rest.filter((event) => event.event === "status").map((event) => JSON.parse(event.data!))
    expect(statuses.at(-1)).toMatchObject({ id: taskId, status: { state: "canceled", message: "task canceled" }, final: true })
    expect(rest.at(-1)!.event).toBe("status")
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)
  })

  it("a task canceled while queued never starts", async () => {
    const { url } = await open({ tasks: { maxActive: 1 } })
    const watch = await nodeStream(url, "stream/watch", {})
    const first = await sendRef(url, "/forever")
    await waitForState(url, first.id, ["working"])
    const queued = await sendRef(url, "/complete never")
    expect((await rpc(url, "tasks/get", { id: queued.id })).body.result.status.state).toBe("submitted")
    const canceled = await rpc(url, "tasks/cancel", { id: queued.id })
    expect(canceled.body.result.status.state).toBe("canceled")
    await rpc(url, "tasks/cancel", { id: first.id })
    // A later task runs, so the dispatcher has passed the canceled one.
    const later = await sendRef(url, "/complete later")
    await waitForState(url, later.id, ["completed"])
    const frames = await readUntil(watch.events, (event) =>
      event.event === "status" && dataOf(event).id === later.id && dataOf(event).final === true)
    watch.destroy()
    const ofQueued = frames.filter((event) => event.id !== undefined && dataOf(event).id === queued.id).map(dataOf)
    expect(ofQueued).toEqual([{ id: queued.id, context_id: queued.contextId, status: { state: "canceled", message: "task canceled" }, final: true }])
    expect((await rpc(url, "tasks/get", { id: queued.id })).body.result.status.state).toBe("canceled")
  })

  it("answers the same canceled task to a second cancel", async () => {
    const { url } = await open()
    const task = await sendRef(url, "/forever")
    await waitForState(url, task.id, ["working"])
    const first = await rpc(url, "tasks/cancel", { id: task.id })
    const second = await rpc(url, "tasks/cancel", { id: task.id })
    expect(second.body.result).toEqual({ id: task.id, contextId: task.contextId, status: { state: "canceled" } })
    expect(first.body.result.status.state).toBe("canceled")
    const a2a = await rpc(url, "tasks/cancel", { id: task.id }, { headers: A2A })
    expect(a2a.body.result).toMatchObject({ kind: "task", id: task.id, status: { state: "canceled" } })
  })

  it("leaves a completed task unchanged in the reference dialect, -32002 in the A2A dialect", async () => {
    const { url } = await open()
    const ref = await sendRef(url, "/complete")
    await waitForState(url, ref.id, ["completed"])
    const unchanged = await rpc(url, "tasks/cancel", { id: ref.id })
    expect(unchanged.body.result).toEqual({ id: ref.id, contextId: ref.contextId, status: { state: "completed" } })
    const refused = await rpc(url, "tasks/cancel", { id: ref.id }, { id: "x", headers: A2A })
    expect(refused.body).toMatchObject({ id: "x", error: { code: -32002, message: "Task cannot be canceled" } })
    const a2aTask = await sendA2a(url, "/fail boom", { blocking: true })
    const refusedFailed = await rpc(url, "tasks/cancel", { id: a2aTask.id })
    expect(refusedFailed.body.error.code).toBe(-32002)
    expect((await rpc(url, "tasks/get", { id: ref.id })).body.result.status.state).toBe("completed")
  })

  it("answers a missing id with -32602 and an unknown id with -32001", async () => {
    const { url } = await open()
    const missing = await rpc(url, "tasks/cancel", {}, { id: 1 })
    expect(missing.body).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message: "Invalid params: tasks/cancel requires an id" } })
    const nonString = await rpc(url, "tasks/cancel", { id: 12 }, { id: 2 })
    expect(nonString.body.error).toEqual({ code: -32602, message: "Invalid params: tasks/cancel requires an id" })
    const unknown = await rpc(url, "tasks/cancel", { id: "tsk_nope" }, { id: 3 })
    expect(unknown.body).toMatchObject({ id: 3, error: { code: -32001, message: "Task not found" } })
  })

  it("cancels an input-required task", async () => {
    const { url } = await open()
    const task = await sendA2a(url, "hi", { blocking: true })
    expect(task.status.state).toBe("input-required")
    const reply = await rpc(url, "tasks/cancel", { id: task.id })
    expect(reply.body.result.status.state).toBe("canceled")
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)
  })
})

describe("session/stop", () => {
  it("cancels every live task and answers canceled, residue and session_id", async () => {
    const { url, sessionId } = await open({ tasks: { maxActive: 2 } })
    const detach = await sendRef(url, "/detach tail -f log")
    await waitForState(url, detach.id, ["completed"])
    const a = await sendRef(url, "/forever")
    const b = await sendRef(url, "/forever")
    await waitForState(url, a.id, ["working"])
    await waitForState(url, b.id, ["working"])
    const c = await sendRef(url, "/forever") // queued behind maxActive 2
    const reply = await rpc(url, "session/stop", {})
    const result = reply.body.result
    expect(Object.keys(result)).toEqual(["canceled", "residue", "session_id"])
    expect(result.session_id).toBe(sessionId)
    expect(result.canceled).toEqual([a.id, b.id, c.id].sort())
    expect(result.residue).toHaveLength(1)
    expect(result.residue[0]).toMatchObject({ kind: "detached_shell", binary: "tail", command: "-f log" })
    for (const task of [a, b, c]) expect((await rpc(url, "tasks/get", { id: task.id })).body.result.status.state).toBe("canceled")
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)

    const again = await rpc(url, "session/stop", {})
    expect(again.body.result).toEqual({ canceled: [], residue: result.residue, session_id: sessionId })
    // The door still serves after a stop.
    const next = await sendRef(url, "/complete")
    expect(next.status.state).toBe("submitted")
  })

  it("answers with all keys present on an idle session (and as murmur.capsule/stop)", async () => {
    const { url, sessionId } = await open()
    const reply = await rpc(url, "session/stop", {})
    expect(reply.body.result).toEqual({ canceled: [], residue: [], session_id: sessionId })
    const vendor = await rpc(url, "murmur.capsule/stop", {})
    expect(vendor.body.result).toEqual({ canceled: [], residue: [], session_id: sessionId })
  })
})

describe("headers", () => {
  const provenanceOf = async (url: string, headers: Record<string, string>) => {
    const task = await sendA2a(url, "/complete", { headers })
    return task.metadata.murmur
  }

  it("records origin and trust claims", async () => {
    const { url, sessionId } = await open()
    expect(await provenanceOf(url, {})).toEqual({ origin: "event", trust: "untrusted" })
    expect(await provenanceOf(url, { "x-murmur-task-trust": "trusted" })).toEqual({ origin: "event", trust: "untrusted" })
    expect(await provenanceOf(url, { "x-murmur-task-origin": "peer" })).toEqual({ origin: "peer", trust: "untrusted" })
    expect(await provenanceOf(url, { "x-murmur-task-origin": "peer", "x-murmur-task-trust": "trusted" })).toEqual({ origin: "peer", trust: "trusted" })
    expect(await provenanceOf(url, { "x-murmur-task-origin": "user", "x-murmur-task-trust": "trusted" })).toEqual({ origin: "event", trust: "untrusted" })
    await doors.door!.run(doors.door!.delegations.expect("dlg_claims", "claims-secret-0123456789"))
    expect(await provenanceOf(url, {
      "x-murmur-task-origin": "completion",
      "x-murmur-task-trust": "trusted",
      "x-murmur-completion-session": sessionId,
      "x-murmur-delegation-id": "dlg_claims",
      "x-murmur-completion-secret": "claims-secret-0123456789"
    })).toEqual({ origin: "completion", trust: "trusted" })
  })

  it("refuses a completion without x-murmur-completion-session", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/send", { message: referenceMessage("done") }, {
      id: "c1",
      headers: { "x-murmur-task-origin": "completion" }
    })
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      jsonrpc: "2.0",
      id: "c1",
      error: { code: -32004, message: "completion is addressed to session <unaddressed>, which is not the session running here" }
    })
  })

  it("refuses a completion addressed to another session, naming that session, for every method", async () => {
    const { url } = await open()
    const headers = { "x-murmur-task-origin": "completion", "x-murmur-completion-session": "ses_Other" }
    const message = "completion is addressed to session ses_Other, which is not the session running here"
    const send = await rpc(url, "message/send", { message: referenceMessage("done") }, { id: 5, headers })
    expect(send.body.error).toEqual({ code: -32004, message })
    expect(send.body.id).toBe(5)
    const get = await rpc(url, "tasks/get", { id: "tsk_x" }, { id: 6, headers })
    expect(get.body).toMatchObject({ id: 6, error: { code: -32004, message } })
    // Even when the body is not JSON, with id null.
    const garbage = await post(url, "{nope", headers)
    expect(garbage.body).toMatchObject({ id: null, error: { code: -32004, message } })
  })

  it("compares the completion session verbatim (no lowercasing)", async () => {
    const { url, sessionId } = await open()
    const upper = sessionId.toUpperCase()
    const reply = await rpc(url, "message/send", { message: referenceMessage("done") }, {
      headers: { "x-murmur-task-origin": "completion", "x-murmur-completion-session": upper }
    })
    expect(reply.body.error).toEqual({ code: -32004, message: `completion is addressed to session ${upper}, which is not the session running here` })
  })

  it("accepts a correctly addressed completion and keeps its delegation id and traceparent verbatim", async () => {
    const { url, sessionId } = await open()
    const traceparent = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"
    await doors.door!.run(doors.door!.delegations.expect("dlg_MixedCase", "mixed-case-secret-0123"))
    const reply = await rpc(url, "message/send", { message: referenceMessage("/complete child result") }, {
      headers: {
        "x-murmur-task-origin": "completion",
        "x-murmur-completion-session": sessionId,
        "x-murmur-delegation-id": "dlg_MixedCase",
        "x-murmur-completion-secret": "mixed-case-secret-0123",
        traceparent
      }
    })
    const result = reply.body.result
    expect(result.status.state).toBe("submitted")
    const task = await doors.door!.run(doors.door!.registry.get(result.id))
    expect(task.provenance).toEqual({ origin: "completion", trust: "untrusted", delegationId: "dlg_MixedCase", traceparent, principal: "anonymous" })
    expect(task.lane).toBe("bg")
  })

  it("keeps a mixed-case traceparent verbatim and drops a delegation id outside completions", async () => {
    const { url } = await open()
    const traceparent = "00-AbCdEf0123456789aBcDeF0123456789-0123456789AbCdEf-01"
    const result = await sendRef(url, "/complete", { traceparent, "x-murmur-delegation-id": "dlg_x", "x-murmur-task-origin": "peer" })
    const task = await doors.door!.run(doors.door!.registry.get(result.id))
    expect(task.provenance).toEqual({ origin: "peer", trust: "untrusted", traceparent, principal: "anonymous" })
    expect(task.lane).toBe("peer")
  })

  it("answers the push-notification config methods of an unknown task with -32001 and the extended card with -32004", async () => {
    const { url } = await open()
    for (const method of ["tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"]) {
      const reply = await rpc(url, method, { id: "tsk_x", pushNotificationConfigId: "c" }, { id: method })
      expect(reply.body.id).toBe(method)
      expect(reply.body.error.code).toBe(-32001)
    }
    const set = await rpc(url, "tasks/pushNotificationConfig/set", { taskId: "tsk_x", pushNotificationConfig: { url: "https://example.com/x" } })
    expect(set.body.error.code).toBe(-32001)
    const card = await rpc(url, "agent/getAuthenticatedExtendedCard", {}, { id: "e" })
    expect(card.body).toMatchObject({ id: "e", error: { code: -32004, message: "This operation is not supported" } })
  })
})
