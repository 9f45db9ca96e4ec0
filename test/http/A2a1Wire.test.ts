/**
 * A2A 1.0 on the wire, byte-level, over real HTTP: version negotiation, 1.0's ProtoJSON shapes,
 * errors with `ErrorInfo` (JSON-RPC) and `google.rpc.Status` (HTTP+JSON) and their statuses, the
 * HTTP+JSON routes, the card by version, and one task seen through both versions.
 */
import { afterEach, describe, expect, it } from "vitest"
import { a2aMessage, type OpenDoor, openDoor, post, rpc, sseEvents, waitForState } from "../lib/Door.js"

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const open = async () => (door = await openDoor())

let counter = 0
const message1 = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: `w1-${counter++}`,
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra
})

const v1 = { "a2a-version": "1.0" }

const errorInfo = (reason: string, metadata?: Record<string, string>) => ({
  "@type": "type.googleapis.com/google.rpc.ErrorInfo",
  reason,
  domain: "a2a-protocol.org",
  ...(metadata === undefined ? {} : { metadata })
})

const rest = async (url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...v1, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text.length === 0 ? undefined : JSON.parse(text) }
}

const collectSse = async (response: Response) => {
  const out: Array<{ id?: number; event?: string; data?: string; comment?: string }> = []
  for await (const event of sseEvents(response)) out.push(event)
  return out
}

describe("version negotiation", () => {
  it("refuses a version it does not speak with -32009 and ErrorInfo, in each binding; ignores a patch number", async () => {
    const { url } = await open()
    const refused = await rpc(url, "SendMessage", { message: message1("/complete x") }, { id: 7, headers: { "a2a-version": "2.0" } })
    expect(refused.status).toBe(200)
    expect(refused.body).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32009,
        message: "The requested A2A protocol version '2.0' is not supported. Supported versions: 1.0, 0.3",
        data: [errorInfo("VERSION_NOT_SUPPORTED", { requested: "2.0" })]
      }
    })
    // The same for a 0.3 method: the version is checked before the method.
    expect((await rpc(url, "tasks/get", { id: "x" }, { headers: { "a2a-version": "0.4" } })).body.error.code).toBe(-32009)
    const restRefused = await rest(url, "GET", "tasks", undefined, { "a2a-version": "2.0" })
    expect(restRefused.status).toBe(400)
    expect(restRefused.headers.get("content-type")).toBe("application/a2a+json")
    expect(restRefused.body.error).toMatchObject({ code: 400, status: "FAILED_PRECONDITION", details: [errorInfo("VERSION_NOT_SUPPORTED", { requested: "2.0" })] })
    const cardRefused = await fetch(`${url}.well-known/agent-card.json`, { headers: { "a2a-version": "9.9" } })
    expect(cardRefused.status).toBe(400)

    const patch = await rpc(url, "SendMessage", { message: message1("/complete patch") }, { headers: { "a2a-version": "1.0.0" } })
    expect(patch.body.result.task.status.state).toBe("TASK_STATE_COMPLETED")
    const query = await post(`${url}?A2A-Version=1.0`, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: patch.body.result.task.id } }))
    expect(query.body.result.id).toBe(patch.body.result.task.id)
  })

  it("routes by the method's name: 1.0 methods without the header, 0.3 methods with A2A-Version 1.0", async () => {
    const { url } = await open()
    const bare = await rpc(url, "SendMessage", { message: message1("/complete bare") })
    expect(bare.body.result.task.status.state).toBe("TASK_STATE_COMPLETED")
    const old = await rpc(url, "message/send", { message: a2aMessage("/complete old") }, { headers: v1 })
    expect(old.body.result.kind).toBe("task")
    expect(old.body.result.status.state).toBe("completed")
    // An unknown PascalCase name is a 1.0 caller's: -32601 with 1.0's details.
    const unknown = await rpc(url, "FrobnicateTask", {}, { headers: v1 })
    expect(unknown.body.error.code).toBe(-32601)
    expect(unknown.body.error.data[0].reason).toBe("METHOD_NOT_FOUND")
  })
})

describe("1.0 shapes over JSON-RPC", () => {
  it("SendMessage answers a SendMessageResponse: ProtoJSON enums, parts without kind, no kind anywhere", async () => {
    const { url } = await open()
    const reply = await rpc(url, "SendMessage", { message: message1("/complete shaped") }, { headers: v1 })
    const task = reply.body.result.task
    expect(Object.keys(reply.body.result)).toEqual(["task"])
    expect(JSON.stringify(reply.body)).not.toContain(`"kind"`)
    expect(task.status.state).toBe("TASK_STATE_COMPLETED")
    expect(task.status.message).toMatchObject({ role: "ROLE_AGENT", parts: [{ text: "shaped" }], taskId: task.id, contextId: task.contextId })
    expect(task.history[0]).toMatchObject({ role: "ROLE_USER", parts: [{ text: "/complete shaped" }] })
    expect(task.artifacts[0].parts).toEqual([{ text: "shaped" }])
    expect(Date.parse(task.status.timestamp)).not.toBeNaN()
  })

  it("returnImmediately: the task as soon as it exists; by default the call blocks until input-required", async () => {
    const { url } = await open()
    const quick = await rpc(url, "SendMessage", { message: message1("/sleep 300"), configuration: { returnImmediately: true } }, { headers: v1 })
    expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]).toContain(quick.body.result.task.status.state)
    const blocked = await rpc(url, "SendMessage", { message: message1("talk to me") }, { headers: v1 })
    expect(blocked.body.result.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED")
    const trimmed = await rpc(url, "GetTask", { id: blocked.body.result.task.id, historyLength: 0 }, { headers: v1 })
    expect(trimmed.body.result.history).toBeUndefined()
  })

  it("SendStreamingMessage: JSON-RPC responses with the request's id, StreamResponse members, no final, closed after the end", async () => {
    const { url } = await open()
    const response = await fetch(url, {
      method: "POST",
      headers: { ...v1, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: "s-1", method: "SendStreamingMessage", params: { message: message1("/stream 2 20") } })
    })
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const data = (await collectSse(response)).filter((event) => event.data !== undefined).map((event) => JSON.parse(event.data!))
    for (const event of data) expect(event).toMatchObject({ jsonrpc: "2.0", id: "s-1" })
    const results = data.map((event) => event.result)
    expect(Object.keys(results[0])).toEqual(["task"])
    for (const result of results.slice(1)) expect(["statusUpdate", "artifactUpdate"]).toContain(Object.keys(result)[0])
    expect(JSON.stringify(results)).not.toMatch(/"final"|"kind"/)
    expect(results.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED")
  })

  it("errors carry ErrorInfo with the 0.3 data as string metadata", async () => {
    const { url } = await open()
    const missing = await rpc(url, "GetTask", { id: "tsk_nope" }, { id: 3, headers: v1 })
    expect(missing.body.error).toEqual({ code: -32001, message: "Task not found", data: [errorInfo("TASK_NOT_FOUND", { taskId: "tsk_nope" })] })
    const done = (await rpc(url, "SendMessage", { message: message1("/complete x") })).body.result.task
    const notCancelable = await rpc(url, "CancelTask", { id: done.id })
    expect(notCancelable.body.error.code).toBe(-32002)
    expect(notCancelable.body.error.data[0]).toEqual(errorInfo("TASK_NOT_CANCELABLE", { taskId: done.id, state: "completed" }))
    const badParams = await rpc(url, "SendMessage", { message: { role: "ROLE_USER", parts: [{ text: "no id" }] } })
    expect(badParams.body.error.code).toBe(-32602)
    expect(badParams.body.error.data[0].reason).toBe("INVALID_PARAMS")
    const badRole = await rpc(url, "SendMessage", { message: message1("x", { role: "ROLE_ROBOT" }) })
    expect(badRole.body.error.code).toBe(-32602)
    const parse = await post(url, "{not json", v1)
    expect(parse.body.error.code).toBe(-32700)
    expect(parse.body.error.data[0].reason).toBe("PARSE_ERROR")
    const push = await rpc(url, "CreateTaskPushNotificationConfig", { taskId: done.id, url: "http://127.0.0.1:9/hook" })
    expect(push.body.error.data[0].reason).toBe("UNSUPPORTED_OPERATION")
    const open1 = await rpc(url, "GetExtendedAgentCard", {})
    expect(open1.body.error.code).toBe(-32004)
  })

  it("ListTasks: newest first, filters, pages, and refuses what it cannot read", async () => {
    const { url } = await open()
    const ids: Array<string> = []
    for (const text of ["/complete a", "/complete b", "/fail c"]) ids.push((await rpc(url, "SendMessage", { message: message1(text) })).body.result.task.id)
    const all = (await rpc(url, "ListTasks", {})).body.result
    expect(all).toMatchObject({ pageSize: 50, totalSize: 3, nextPageToken: "" })
    expect(all.tasks.map((task: { id: string }) => task.id)).toEqual([...ids].reverse())
    const failed = (await rpc(url, "ListTasks", { status: "TASK_STATE_FAILED" })).body.result
    expect(failed.tasks.map((task: { id: string }) => task.id)).toEqual([ids[2]])
    expect((await rpc(url, "ListTasks", { status: 4 })).body.result.totalSize).toBe(1)
    const future = (await rpc(url, "ListTasks", { statusTimestampAfter: new Date(Date.now() + 60_000).toISOString() })).body.result
    expect(future).toMatchObject({ tasks: [], totalSize: 0, nextPageToken: "" })
    for (const params of [{ pageSize: 0 }, { status: "TASK_STATE_BORED" }, { pageToken: "garbage" }, { statusTimestampAfter: "yesterday" }]) {
      expect((await rpc(url, "ListTasks", params)).body.error.code).toBe(-32602)
    }
  })
})

describe("HTTP+JSON routes", () => {
  it("serve every method with 1.0's statuses and application/a2a+json", async () => {
    const { url } = await open()
    const sent = await rest(url, "POST", "message:send", { message: message1("/complete over rest") })
    expect(sent.status).toBe(200)
    expect(sent.headers.get("content-type")).toBe("application/a2a+json")
    const task = sent.body.task
    expect(task.status.state).toBe("TASK_STATE_COMPLETED")
    const got = await rest(url, "GET", `tasks/${task.id}?historyLength=1`)
    expect(got.body.id).toBe(task.id)
    expect(got.body.history.length).toBe(1)
    expect((await rest(url, "GET", `tasks?contextId=${task.contextId}&includeArtifacts=true`)).body.tasks[0].artifacts[0].parts).toEqual([{ text: "over rest" }])
    const missing = await rest(url, "GET", "tasks/tsk_nope")
    expect(missing.status).toBe(404)
    expect(missing.body.error).toEqual({ code: 404, status: "NOT_FOUND", message: "Task not found", details: [errorInfo("TASK_NOT_FOUND", { taskId: "tsk_nope" })] })
    const notCancelable = await rest(url, "POST", `tasks/${task.id}:cancel`)
    expect(notCancelable.status).toBe(400)
    expect(notCancelable.body.error.details[0].reason).toBe("TASK_NOT_CANCELABLE")
    expect((await rest(url, "GET", `tasks/${task.id}?historyLength=-1`)).status).toBe(400)
    expect((await rest(url, "GET", "extendedAgentCard")).body.error.details[0].reason).toBe("UNSUPPORTED_OPERATION")
    // A task that ended sends no more updates: no config for it.
    const push = await rest(url, "POST", `tasks/${task.id}/pushNotificationConfigs`, { url: "https://example.com/hook" })
    expect(push.status).toBe(400)
    expect(push.body.error.details[0].reason).toBe("UNSUPPORTED_OPERATION")
    for (const [method, path] of [["GET", `tasks/${task.id}/other`], ["PUT", `tasks/${task.id}`], ["GET", "message:send"], ["DELETE", "tasks"]] as const) {
      const wrong = await rest(url, method, path)
      expect(wrong.status).toBe(404)
      expect(wrong.body.error.status).toBe("UNIMPLEMENTED")
    }
  })

  it("cancel without a body, subscribe by GET or POST, and refuse bad bodies with 400", async () => {
    const { url } = await open()
    const started = (await rest(url, "POST", "message:send", { message: message1("/forever"), configuration: { returnImmediately: true } })).body.task
    await waitForState(url, started.id, ["working"])
    for (const method of ["GET", "POST"]) {
      const controller = new AbortController()
      const response = await fetch(`${url}tasks/${started.id}:subscribe`, { method, headers: v1, signal: controller.signal })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      const first = new TextDecoder().decode((await reader.read()).value)
      // Over HTTP+JSON each data line is the bare StreamResponse.
      expect(JSON.parse(first.split("\n").find((line) => line.startsWith("data: "))!.slice(6)).task.id).toBe(started.id)
      controller.abort()
    }
    const canceled = await fetch(`${url}tasks/${started.id}:cancel`, { method: "POST", headers: v1 })
    expect(canceled.status).toBe(200)
    expect((await canceled.json()).status.state).toBe("TASK_STATE_CANCELED")
    const text = await rest(url, "POST", "message:send", "hello", { "content-type": "text/plain" })
    expect(text.status).toBe(400)
    expect(text.body.error.details[0].reason).toBe("CONTENT_TYPE_NOT_SUPPORTED")
    expect((await rest(url, "POST", "message:send", "{broken")).status).toBe(400)
    expect((await rest(url, "POST", "message:send", "[1,2]")).status).toBe(400)
  })

  it("message:stream is SSE of bare StreamResponses that ends with the task", async () => {
    const { url } = await open()
    const response = await fetch(`${url}message:stream`, {
      method: "POST",
      headers: { ...v1, "content-type": "application/a2a+json" },
      body: JSON.stringify({ message: message1("/stream 2 10") })
    })
    const data = (await collectSse(response)).filter((event) => event.data !== undefined).map((event) => JSON.parse(event.data!))
    expect(Object.keys(data[0])).toEqual(["task"])
    expect(data.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED")
  })
})

describe("one task, both versions", () => {
  it("a task started over 0.3 is read and canceled over 1.0, and one started over 1.0 is read over 0.3", async () => {
    const { url } = await open()
    const old = (await rpc(url, "message/send", { message: a2aMessage("/forever"), configuration: { blocking: false } })).body.result
    await waitForState(url, old.id, ["working"])
    const seen = (await rpc(url, "GetTask", { id: old.id })).body.result
    expect(seen).toMatchObject({ id: old.id, contextId: old.contextId, status: { state: "TASK_STATE_WORKING" } })
    expect((await rest(url, "POST", `tasks/${old.id}:cancel`)).body.status.state).toBe("TASK_STATE_CANCELED")
    expect((await rpc(url, "tasks/get", { id: old.id })).body.result.status.state).toBe("canceled")

    const fresh = (await rest(url, "POST", "message:send", { message: message1("/complete new") })).body.task
    const asOld = (await rpc(url, "tasks/get", { id: fresh.id })).body.result
    expect(asOld).toMatchObject({ kind: "task", id: fresh.id, status: { state: "completed" } })
    expect(asOld.history[0].parts).toEqual([{ kind: "text", text: "/complete new" }])
  })
})

describe("the card by version", () => {
  it("serves 1.0's card to A2A-Version 1.0 and 0.3's (with supportedInterfaces) to everyone else, varying on the header", async () => {
    const { url } = await open()
    const card1 = await fetch(`${url}.well-known/agent-card.json`, { headers: v1 })
    expect(card1.headers.get("vary")).toBe("A2A-Version")
    const body1 = await card1.json()
    expect(body1.url).toBeUndefined()
    expect(body1.protocolVersion).toBeUndefined()
    expect(body1.capabilities).toMatchObject({ streaming: true, pushNotifications: true, extendedAgentCard: false })
    expect(body1.capabilities.stateTransitionHistory).toBeUndefined()
    expect(body1.supportedInterfaces[0]).toEqual({ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" })
    const card03 = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card03).toMatchObject({ url, protocolVersion: "0.3.0", preferredTransport: "JSONRPC" })
    expect(card03.supportedInterfaces).toEqual(body1.supportedInterfaces)
  })

  it("a door with a token: securitySchemes in each version's form, the extended card over 1.0 only to callers it let in", async () => {
    door = await openDoor({ door: { authToken: (await import("effect")).Redacted.make("wire1-token") } })
    const { url } = door
    const card1 = await (await fetch(`${url}.well-known/agent-card.json`, { headers: v1 })).json()
    expect(card1.securitySchemes).toEqual({ bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: expect.any(String) } } })
    expect(card1.securityRequirements).toEqual([{ schemes: { bearer: {} } }])
    expect(card1.capabilities.extendedAgentCard).toBe(true)
    expect(JSON.stringify(card1)).not.toContain(door.sessionId)
    const card03 = await (await fetch(`${url}.well-known/agent-card.json`)).json()
    expect(card03.securitySchemes.bearer.type).toBe("http")
    const auth = { authorization: "Bearer wire1-token" }
    const extended = (await rpc(url, "GetExtendedAgentCard", {}, { headers: auth })).body.result
    expect(JSON.stringify(extended)).toContain(door.sessionId)
    expect(extended.supportedInterfaces).toBeDefined()
    expect((await rest(url, "GET", "extendedAgentCard", undefined, auth)).body.name).toBe(extended.name)
    expect((await rest(url, "GET", "extendedAgentCard")).status).toBe(401)
  })
})
