/**
 * Interop: the official `@a2a-js/sdk` 0.3.14 client (the `ClientFactory`/`Client` API and the
 * deprecated `A2AClient`) drives a real door on loopback, against the scripted capsule.
 */
import type { Message, MessageSendParams, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import {
  A2AClient,
  type AuthenticationHandler,
  type Client,
  ClientFactory,
  createAuthenticatingFetchWithRetry,
  JsonRpcTransportFactory,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError
} from "@a2a-js/sdk/client"
import { Redacted } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { followUpPrompt } from "../../src/services/EchoCapsule.js"
import { type OpenDoor, openDoor, sleep, waitForState } from "../lib/Door.js"

type StreamEvent = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

let counter = 0

const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  kind: "message",
  messageId: `interop-${Date.now()}-${counter++}`,
  role: "user",
  parts: [{ kind: "text", text }],
  ...extra
})

const params = (text: string, extra: Partial<Message> = {}, configuration?: MessageSendParams["configuration"]): MessageSendParams => ({
  message: userMessage(text, extra),
  ...(configuration === undefined ? {} : { configuration })
})

const asTask = (result: Message | Task): Task => {
  expect(result.kind).toBe("task")
  return result as Task
}

const textsOf = (parts: ReadonlyArray<{ kind: string; text?: string }> | undefined) =>
  (parts ?? []).map((part) => (part.kind === "text" ? part.text : "")).join("")

const artifactText = (task: Task) => (task.artifacts ?? []).map((artifact) => textsOf(artifact.parts as any)).join("")

const statusText = (task: Task | TaskStatusUpdateEvent) => textsOf(task.status.message?.parts as any)

const drain = async (events: AsyncGenerator<StreamEvent>, limit = 500): Promise<Array<StreamEvent>> => {
  const out: Array<StreamEvent> = []
  for await (const event of events) {
    out.push(event)
    if (out.length >= limit) break
  }
  return out
}

/** Checks the shape every task stream must have: Task first, its id on every event, one final event last. */
const expectTaskStream = (events: ReadonlyArray<StreamEvent>, taskId?: string) => {
  expect(events.length).toBeGreaterThanOrEqual(2)
  const first = events[0]!
  expect(first.kind).toBe("task")
  const id = taskId ?? (first as Task).id
  if (taskId !== undefined) expect((first as Task).id).toBe(taskId)
  for (const event of events.slice(1)) {
    expect(["status-update", "artifact-update"]).toContain(event.kind)
    expect((event as TaskStatusUpdateEvent | TaskArtifactUpdateEvent).taskId).toBe(id)
  }
  const last = events.at(-1)! as TaskStatusUpdateEvent
  expect(last.kind).toBe("status-update")
  expect(last.final).toBe(true)
  expect(events.slice(1, -1).filter((event) => event.kind === "status-update" && (event as TaskStatusUpdateEvent).final)).toEqual([])
  return last
}

describe("@a2a-js/sdk 0.3.14 ClientFactory / Client", () => {
  let door: OpenDoor | undefined
  afterEach(async () => {
    await door?.close()
    door = undefined
  })

  const connect = async (): Promise<Client> => {
    door = await openDoor({ door: { pushAllow: ["127.0.0.1"] } })
    return new ClientFactory().createFromUrl(door.url)
  }

  it("builds a client from the door's URL (agent card) and reads the card", async () => {
    const client = await connect()
    const card = await client.getAgentCard()
    expect(card.url).toBe(door!.url)
    expect(card.protocolVersion).toBe("0.3.0")
    expect(card.preferredTransport).toBe("JSONRPC")
    expect(card.capabilities.streaming).toBe(true)
    expect(card.capabilities.pushNotifications).toBe(true)
  })

  it("sendMessage (blocking by default): a plain echo settles in input-required", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(params("hello there")))
    expect(task.id).toMatch(/\S/)
    expect(task.contextId).toMatch(/\S/)
    expect(task.status.state).toBe("input-required")
    expect(statusText(task)).toBe(followUpPrompt)
    expect(artifactText(task)).toBe("echo: hello there")
    expect(task.history?.[0]?.role).toBe("user")
    expect(textsOf(task.history?.[0]?.parts as any)).toBe("hello there")
  })

  it("sendMessage \"/complete hi\" completes with the answer; getTask returns it", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(params("/complete hi")))
    expect(task.status.state).toBe("completed")
    expect(statusText(task)).toBe("hi")
    expect(artifactText(task)).toBe("hi")

    const fetched = await client.getTask({ id: task.id })
    expect(fetched.kind).toBe("task")
    expect(fetched.id).toBe(task.id)
    expect(fetched.contextId).toBe(task.contextId)
    expect(fetched.status.state).toBe("completed")
    expect(typeof fetched.status.timestamp).toBe("string")

    const short = await client.getTask({ id: task.id, historyLength: 1 })
    expect(short.history?.length).toBe(1)
  })

  it("getTask on an unknown id throws TaskNotFoundError (-32001)", async () => {
    const client = await connect()
    const error: any = await client.getTask({ id: "tsk_does_not_exist" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TaskNotFoundError)
    expect(error.errorResponse.error.code).toBe(-32001)
  })

  it("sendMessageStream yields the Task first, then updates, and a final status last", async () => {
    const client = await connect()
    const events = await drain(client.sendMessageStream(params("/stream 3 20")))
    const last = expectTaskStream(events)
    expect((events[0] as Task).status.state).toBe("submitted")
    expect(last.status.state).toBe("completed")
    expect(statusText(last)).toBe("streamed 3 chunks")
    const artifacts = events.filter((event): event is TaskArtifactUpdateEvent => event.kind === "artifact-update")
    expect(artifacts.map((event) => textsOf(event.artifact.parts as any)).join("")).toBe("chunk 1 chunk 2 chunk 3 ")
    expect(new Set(artifacts.map((event) => event.artifact.artifactId)).size).toBe(1)
    expect(events.some((event) => event.kind === "status-update" && (event as TaskStatusUpdateEvent).status.state === "working")).toBe(true)
  })

  it("sendMessageStream of a plain echo ends (final) in input-required", async () => {
    const client = await connect()
    const events = await drain(client.sendMessageStream(params("ping")))
    const last = expectTaskStream(events)
    expect(last.status.state).toBe("input-required")
    expect(statusText(last)).toBe(followUpPrompt)
  })


  it("cancelTask of a running task (/forever) answers canceled", async () => {
    const client = await connect()
    // Non-blocking (explicit blocking:false survives the client's default), else /forever never returns.
    const started = asTask(await client.sendMessage(params("/forever", {}, { blocking: false })))
    expect(["submitted", "working"]).toContain(started.status.state)
    await waitForState(door!.url, started.id, ["working"])
    const canceled = await client.cancelTask({ id: started.id })
    expect(canceled.kind).toBe("task")
    expect(canceled.id).toBe(started.id)
    expect(canceled.status.state).toBe("canceled")
    expect(statusText(canceled)).toBe("task canceled")
    expect((await client.getTask({ id: started.id })).status.state).toBe("canceled")
    // Idempotent: canceling a canceled task answers the same task.
    const again = await client.cancelTask({ id: started.id })
    expect(again.id).toBe(started.id)
    expect(again.status.state).toBe("canceled")
  })

  it("a polling client (blocking:false) gets the task at once and can poll it", async () => {
    door = await openDoor()
    const client = await new ClientFactory({ ...new ClientFactory().options, clientConfig: { polling: true } }).createFromUrl(door.url)
    const started = asTask(await client.sendMessage(params("/sleep 300")))
    expect(["submitted", "working"]).toContain(started.status.state)
    const done = await waitForState(door.url, started.id, ["completed"])
    expect(done.status.message.parts[0].text).toBe("slept 300 ms")
    expect((await client.getTask({ id: started.id })).status.state).toBe("completed")
  })

  it("cancelTask on a completed task throws TaskNotCancelableError (-32002)", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(params("/complete hi")))
    expect(task.status.state).toBe("completed")
    const error: any = await client.cancelTask({ id: task.id }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TaskNotCancelableError)
    expect(error.errorResponse.error.code).toBe(-32002)
    expect(error.errorResponse.error.message).toBe("Task cannot be canceled")
    expect((await client.getTask({ id: task.id })).status.state).toBe("completed")
  })

  it("cancelTask on an unknown id throws TaskNotFoundError (-32001)", async () => {
    const client = await connect()
    const error: any = await client.cancelTask({ id: "tsk_unknown" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TaskNotFoundError)
    expect(error.errorResponse.error.code).toBe(-32001)
  })

  it("cancel while streaming: the stream ends with a final canceled status", async () => {
    const client = await connect()
    const stream = client.sendMessageStream(params("/stream 200 20"))
    const events: Array<StreamEvent> = []
    let canceled: Task | undefined
    for await (const event of stream) {
      events.push(event)
      if (canceled === undefined && events.filter((e) => e.kind === "artifact-update").length === 2) {
        canceled = await client.cancelTask({ id: (events[0] as Task).id })
      }
    }
    expect(canceled?.status.state).toBe("canceled")
    const last = expectTaskStream(events)
    expect(last.status.state).toBe("canceled")
    expect(events.filter((e) => e.kind === "artifact-update").length).toBeLessThan(200)
  })

  it("resubscribeTask on a live task: Task snapshot first, then live events, ends at the terminal state", async () => {
    const client = await connect()
    const started = asTask(await client.sendMessage(params("/stream 6 80", {}, { blocking: false })))
    await waitForState(door!.url, started.id, ["working"])
    await sleep(100)
    const events = await drain(client.resubscribeTask({ id: started.id }))
    const last = expectTaskStream(events, started.id)
    expect((events[0] as Task).status.state).toBe("working")
    expect(last.status.state).toBe("completed")
    const chunks = events.filter((e): e is TaskArtifactUpdateEvent => e.kind === "artifact-update").map((e) => textsOf(e.artifact.parts as any))
    expect(chunks.length).toBeGreaterThan(0)
    expect(chunks.length).toBeLessThan(7)
    expect(chunks.at(-1)).toBe("")
  })

  it("resubscribeTask on the long-running TCK task (test-resubscribe-message-id…)", async () => {
    const client = await connect()
    const started = asTask(await client.sendMessage(params("anything", { messageId: "test-resubscribe-message-id-1" }, { blocking: false })))
    await waitForState(door!.url, started.id, ["working"])
    const events: Array<StreamEvent> = []
    for await (const event of client.resubscribeTask({ id: started.id })) {
      events.push(event)
      if (events.length === 3) break
    }
    expect(events[0]!.kind).toBe("task")
    expect((events[0] as Task).id).toBe(started.id)
    expect(events.slice(1).every((e) => e.kind === "artifact-update" && (e as TaskArtifactUpdateEvent).taskId === started.id)).toBe(true)
    expect((await client.cancelTask({ id: started.id })).status.state).toBe("canceled")
  })

  it("a follow-up message with taskId resumes an input-required task", async () => {
    const client = await connect()
    const first = asTask(await client.sendMessage(params("first turn")))
    expect(first.status.state).toBe("input-required")
    const second = asTask(await client.sendMessage(params("second turn", { taskId: first.id, contextId: first.contextId })))
    expect(second.id).toBe(first.id)
    expect(second.contextId).toBe(first.contextId)
    expect(second.status.state).toBe("input-required")
    expect(second.history?.map((m) => `${m.role}:${textsOf(m.parts as any)}`)).toEqual([
      "user:first turn",
      "agent:echo: first turn",
      "user:second turn",
      "agent:echo: second turn"
    ])
    const third = asTask(await client.sendMessage(params("/done", { taskId: first.id })))
    expect(third.id).toBe(first.id)
    expect(third.status.state).toBe("completed")
  })

  it("a streamed follow-up with taskId resumes the task and ends final", async () => {
    const client = await connect()
    const first = asTask(await client.sendMessage(params("turn one")))
    expect(first.status.state).toBe("input-required")
    const events = await drain(client.sendMessageStream(params("/complete bye", { taskId: first.id, contextId: first.contextId })))
    const last = expectTaskStream(events, first.id)
    expect(last.status.state).toBe("completed")
    expect(statusText(last)).toBe("bye")
  })

  it("a message to a terminal task throws UnsupportedOperationError (-32004)", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(params("/complete x")))
    const error: any = await client.sendMessage(params("more", { taskId: task.id })).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnsupportedOperationError)
    expect(error.errorResponse.error.code).toBe(-32004)
  })

  it("push notification config: set, get, list and delete round trip; an unknown config is TaskNotFoundError", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(params("/forever", {}, { blocking: false })))
    const config = { taskId: task.id, pushNotificationConfig: { id: "cfg-a", url: "http://127.0.0.1:9/hook", token: "tk" } }
    expect(await client.setTaskPushNotificationConfig(config)).toEqual(config)
    // (0.3.14's client types these params as TaskIdParams; the spec's carry the config id too.)
    expect(await client.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: "cfg-a" } as never)).toEqual(config)
    expect(await client.listTaskPushNotificationConfig({ id: task.id })).toEqual([config])
    await client.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: "cfg-a" })
    const gone: any = await client.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: "cfg-a" } as never).catch((e: unknown) => e)
    expect(gone).toBeInstanceOf(TaskNotFoundError)
    await client.cancelTask({ id: task.id })
  })

  it("the extended card method is refused with UnsupportedOperationError (-32004)", async () => {
    const client = await connect()
    const error: any = await client.transport.getExtendedAgentCard().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnsupportedOperationError)
    expect(error.errorResponse.error.code).toBe(-32004)
  })

  it("streams through heartbeat comments", async () => {
    door = await openDoor({ door: { heartbeatMs: 25 } })
    const client = await new ClientFactory().createFromUrl(door.url)
    const events = await drain(client.sendMessageStream(params("/sleep 200")))
    const last = expectTaskStream(events)
    expect(last.status.state).toBe("completed")
  })
})

describe("@a2a-js/sdk 0.3.14 A2AClient (deprecated)", () => {
  let door: OpenDoor | undefined
  afterEach(async () => {
    await door?.close()
    door = undefined
  })

  const connect = async () => {
    door = await openDoor({ door: { pushAllow: ["127.0.0.1"] } })
    return A2AClient.fromCardUrl(`${door.url}.well-known/agent-card.json`)
  }

  const resultOf = (response: any) => {
    expect(response.jsonrpc).toBe("2.0")
    expect(response.error).toBeUndefined()
    return response.result
  }

  it("fromCardUrl: the agent card resolves to the door", async () => {
    const client = await connect()
    const card = await client.getAgentCard()
    expect(card.url).toBe(door!.url)
    expect(card.name).toBe("scripted-echo")
  })

  it("also resolves the legacy card path /.well-known/agent.json", async () => {
    door = await openDoor()
    const client = await A2AClient.fromCardUrl(`${door.url}.well-known/agent.json`)
    const task = resultOf(await client.sendMessage(params("/complete legacy", {}, { blocking: true })))
    expect(task.status.state).toBe("completed")
  })

  it("sendMessage with blocking:false returns at once; without configuration (A2A's default) or with blocking:true it settles", async () => {
    const client = await connect()
    const quick = resultOf(await client.sendMessage(params("/sleep 300", {}, { blocking: false })))
    expect(quick.kind).toBe("task")
    expect(["submitted", "working"]).toContain(quick.status.state)
    const settled = resultOf(await client.sendMessage(params("/sleep 100")))
    expect(settled.status.state).toBe("completed")
    const blocking = resultOf(await client.sendMessage(params("hello", {}, { blocking: true })))
    expect(blocking.status.state).toBe("input-required")
    const fetched = resultOf(await client.getTask({ id: blocking.id }))
    expect(fetched.id).toBe(blocking.id)
    expect(fetched.status.state).toBe("input-required")
    const follow = resultOf(await client.sendMessage(params("/done", { taskId: blocking.id }, { blocking: true })))
    expect(follow.status.state).toBe("completed")
  })

  it("getTask on an unknown id answers an error response -32001", async () => {
    const client = await connect()
    const response: any = await client.getTask({ id: "tsk_nope" })
    expect(response.error.code).toBe(-32001)
    expect(response.error.message).toBe("Task not found")
  })

  it("sendMessageStream: Task, updates, final", async () => {
    const client = await connect()
    const events = await drain(client.sendMessageStream(params("/artifact report the body")))
    const last = expectTaskStream(events)
    expect(last.status.state).toBe("completed")
    const artifact = events.find((e): e is TaskArtifactUpdateEvent => e.kind === "artifact-update" && e.artifact.name === "report")
    expect(textsOf(artifact?.artifact.parts as any)).toBe("the body")
  })

  it("cancelTask: running → canceled; completed → error -32002", async () => {
    const client = await connect()
    const running = resultOf(await client.sendMessage(params("/forever", {}, { blocking: false })))
    await waitForState(door!.url, running.id, ["working"])
    const canceled = resultOf(await client.cancelTask({ id: running.id }))
    expect(canceled.status.state).toBe("canceled")
    const completed = resultOf(await client.sendMessage(params("/complete ok", {}, { blocking: true })))
    const refused: any = await client.cancelTask({ id: completed.id })
    expect(refused.error.code).toBe(-32002)
  })

  it("resubscribeTask on a live task", async () => {
    const client = await connect()
    const started = resultOf(await client.sendMessage(params("/stream 5 60", {}, { blocking: false })))
    await waitForState(door!.url, started.id, ["working"])
    const events = await drain(client.resubscribeTask({ id: started.id }))
    const last = expectTaskStream(events, started.id)
    expect(last.status.state).toBe("completed")
  })

  it("push notification config methods: set, get, list and delete; an unknown task is -32001", async () => {
    const client = await connect()
    const started = resultOf(await client.sendMessage(params("/forever", {}, { blocking: false })))
    const config = { taskId: started.id, pushNotificationConfig: { id: "cfg-b", url: "http://127.0.0.1:9/" } }
    expect(resultOf(await client.setTaskPushNotificationConfig(config))).toEqual(config)
    expect(resultOf(await client.getTaskPushNotificationConfig({ id: started.id }))).toEqual(config)
    expect(resultOf(await client.listTaskPushNotificationConfig({ id: started.id }))).toEqual([config])
    expect(resultOf(await client.deleteTaskPushNotificationConfig({ id: started.id, pushNotificationConfigId: "cfg-b" }))).toBeNull()
    const unknown: any = await client.getTaskPushNotificationConfig({ id: "tsk_none" })
    expect(unknown.error.code).toBe(-32001)
    await client.cancelTask({ id: started.id })
  })
})

describe("@a2a-js/sdk 0.3.14 against a door with a bearer token", () => {
  const token = "interop-token"
  let door: OpenDoor | undefined
  afterEach(async () => {
    await door?.close()
    door = undefined
  })

  /** The SDK's own auth flow: no header at first, the 401's `WWW-Authenticate: Bearer` answered with the token. */
  const handler = (): AuthenticationHandler & { readonly challenges: Array<string> } => {
    let headers: Record<string, string> = {}
    const challenges: Array<string> = []
    return {
      challenges,
      headers: async () => headers,
      shouldRetryWithHeaders: async (_request, response) => {
        if (response.status !== 401) return undefined
        challenges.push(response.headers.get("www-authenticate") ?? "")
        return { authorization: `Bearer ${token}` }
      },
      onSuccessfulRetry: async (retried) => {
        headers = retried
      }
    }
  }

  it("ClientFactory: reads the public card (bearer scheme), is challenged once, then sends and streams with the token", async () => {
    door = await openDoor({ door: { authToken: Redacted.make(token) } })
    const auth = handler()
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, auth)
    const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(door.url)
    const card = await client.getAgentCard()
    expect(card.securitySchemes).toEqual({ bearer: expect.objectContaining({ type: "http", scheme: "bearer" }) })
    expect(card.security).toEqual([{ bearer: [] }])
    const task = asTask(await client.sendMessage(params("/complete locked", {}, { blocking: true })))
    expect(task.status.state).toBe("completed")
    expect(auth.challenges).toHaveLength(1)
    expect(auth.challenges[0]).toMatch(/^Bearer\b/)
    const events = await drain(client.sendMessageStream(params("/complete streamed")))
    expect(expectTaskStream(events).status.state).toBe("completed")
    expect(auth.challenges).toHaveLength(1)
  })

  it("A2AClient: a fetch that sends the token works; one that does not is refused", async () => {
    door = await openDoor({ door: { authToken: Redacted.make(token) } })
    const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` } })
    const client = await A2AClient.fromCardUrl(`${door.url}.well-known/agent-card.json`, { fetchImpl: authed })
    const reply = await client.sendMessage(params("/complete old client", {}, { blocking: true }))
    expect("result" in reply && (reply.result as Task).status.state).toBe("completed")
    const bare = await A2AClient.fromCardUrl(`${door.url}.well-known/agent-card.json`)
    await expect(bare.sendMessage(params("/complete nope"))).rejects.toThrow(/401/)
  })
})
