/**
 * Interop: the official `@a2a-js/sdk` 1.3 client, created the documented way
 * (`new ClientFactory().createFromUrl(url)`, no compatibility options), drives a real door on
 * loopback over A2A 1.0, through JSON-RPC, HTTP+JSON and gRPC (its `GrpcTransportFactory`, the
 * door serving `grpc: true`), against the scripted capsule. What only gRPC has (statuses and
 * trailers, metadata, its server's life) is in ../grpc/GrpcDoor.test.ts.
 */
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTasksRequest,
  Role,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState
} from "@a2a-js/sdk-1"
import {
  type AuthenticationHandler,
  type CallInterceptor,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  createAuthenticatingFetchWithRetry,
  JsonRpcTransportFactory,
  RestTransportFactory
} from "@a2a-js/sdk-1/client"
import { GrpcTransportFactory } from "@a2a-js/sdk-1/client/grpc"
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError
} from "@a2a-js/sdk-1/errors"
import { Redacted } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { followUpPrompt } from "../../src/services/EchoCapsule.js"
import { type DoorOptions, type OpenDoor, openDoor, waitForState } from "../lib/Door.js"
import { artifactText, asTask, drain, expectTaskStream, send, statusText, textOf } from "../lib/Sdk1.js"


const bindings = ["JSONRPC", "HTTP+JSON", "GRPC"] as const
type Binding = (typeof bindings)[number]

const factoryFor = (binding: Binding) =>
  binding === "JSONRPC"
    // The documented default: JSON-RPC is the card's first interface.
    ? new ClientFactory()
    : binding === "HTTP+JSON"
    ? new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ["HTTP+JSON"] }))
    : new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new GrpcTransportFactory()], preferredTransports: ["GRPC"] }))

/** A door for `binding`: gRPC is served only when asked for. */
const doorFor = (binding: Binding, options: DoorOptions = {}) => openDoor(binding === "GRPC" ? { ...options, grpc: true } : options)

describe.each(bindings)("@a2a-js/sdk 1.3 over %s", (binding) => {
  let door: OpenDoor | undefined
  afterEach(async () => {
    await door?.close()
    door = undefined
  })

  const connect = async (): Promise<Client> => {
    door = await doorFor(binding)
    return factoryFor(binding).createFromUrl(door.url)
  }

  it("reads the 1.0 card: every binding the door serves, honest capabilities", async () => {
    const client = await connect()
    const card = await client.getAgentCard()
    expect(card.supportedInterfaces.map((entry) => [entry.protocolBinding, entry.protocolVersion, entry.url])).toEqual([
      ["JSONRPC", "1.0", door!.url],
      ["HTTP+JSON", "1.0", door!.url],
      ...(binding === "GRPC" ? [["GRPC", "1.0", door!.grpc]] : []),
      ["JSONRPC", "0.3", door!.url]
    ])
    expect(card.capabilities?.streaming).toBe(true)
    expect(card.capabilities?.pushNotifications).toBe(true)
    expect(card.capabilities?.extendedAgentCard).toBe(false)
  })

  it("sendMessage blocks until the task settles; getTask reads it, historyLength trims it", async () => {
    const client = await connect()
    const task = asTask(await client.sendMessage(send("/complete hi")))
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(statusText(task)).toBe("hi")
    expect(artifactText(task)).toBe("hi")
    expect(task.history[0]?.role).toBe(Role.ROLE_USER)
    expect(textOf(task.history[0]?.parts)).toBe("/complete hi")

    const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }))
    expect(fetched.id).toBe(task.id)
    expect(fetched.contextId).toBe(task.contextId)
    expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(fetched.status?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/)
    const none = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }))
    expect(none.history).toEqual([])
  })

  it("a multi-turn task: input-required, then the answer by taskId completes it", async () => {
    const client = await connect()
    const first = asTask(await client.sendMessage(send("hello there")))
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(statusText(first)).toBe(followUpPrompt)
    expect(artifactText(first)).toBe("echo: hello there")
    const done = asTask(await client.sendMessage(send("/done", { taskId: first.id })))
    expect(done.id).toBe(first.id)
    expect(done.contextId).toBe(first.contextId)
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    const refused = await client.sendMessage(send("more", { taskId: first.id })).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(UnsupportedOperationError)
  })

  it("returnImmediately answers at once; the task runs on", async () => {
    const client = await connect()
    const started = asTask(await client.sendMessage(send("/sleep 300", {}, { returnImmediately: true })))
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state)
    await waitForState(door!.url, started.id, ["completed"])
    expect((await client.getTask(GetTaskRequest.fromJSON({ id: started.id }))).status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })

  it("sendMessageStream: the Task, a working status, one appended artifact, the completed status, then the end", async () => {
    const client = await connect()
    const events = await drain(client.sendMessageStream(send("/stream 3 20")))
    const { last } = expectTaskStream(events)
    expect(last.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(textOf(last.status?.message?.parts)).toBe("streamed 3 chunks")
    const chunks = events.flatMap((event) => (event.payload?.$case === "artifactUpdate" ? [event.payload.value] : []))
    expect(chunks.map((chunk) => textOf(chunk.artifact?.parts)).join("")).toBe("chunk 1 chunk 2 chunk 3 ")
    expect(new Set(chunks.map((chunk) => chunk.artifact?.artifactId)).size).toBe(1)
    // The first chunk opens the artifact, every later one appends, the last says so.
    expect(chunks.map((chunk) => chunk.append)).toEqual([false, ...chunks.slice(1).map(() => true)])
    expect(chunks.at(-1)?.lastChunk).toBe(true)
    expect(events.some((event) => event.payload?.$case === "statusUpdate" && event.payload.value.status?.state === TaskState.TASK_STATE_WORKING))
      .toBe(true)
  })

  it("listTasks filters by context and state and pages through every task exactly once", async () => {
    const client = await connect()
    const first = asTask(await client.sendMessage(send("/complete one")))
    const contextId = first.contextId
    for (const text of ["/complete two", "/complete three"]) await client.sendMessage(send(text, { contextId }))
    await client.sendMessage(send("/complete elsewhere"))
    const seen: Array<string> = []
    let pageToken = ""
    for (let page = 0; page < 5; page++) {
      const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId, status: "TASK_STATE_COMPLETED", pageSize: 2, pageToken }))
      expect(listed.totalSize).toBe(3)
      expect(listed.pageSize).toBe(2)
      for (const task of listed.tasks) {
        expect(task.contextId).toBe(contextId)
        // Artifacts only when asked for.
        expect(task.artifacts).toEqual([])
        seen.push(task.id)
      }
      pageToken = listed.nextPageToken
      if (pageToken === "") break
    }
    expect(seen.length).toBe(3)
    expect(new Set(seen).size).toBe(3)
    const withArtifacts = await client.listTasks(ListTasksRequest.fromJSON({ contextId, includeArtifacts: true, historyLength: 0 }))
    expect(withArtifacts.tasks.map(artifactText).sort()).toEqual(["one", "three", "two"])
    const tooBig = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 101 })).catch((e: unknown) => e)
    expect(tooBig).toBeInstanceOf(RequestMalformedError)
  })

  it("cancelTask cancels a running task, answers a canceled one again, refuses a completed one", async () => {
    const client = await connect()
    const started = asTask(await client.sendMessage(send("/forever", {}, { returnImmediately: true })))
    await waitForState(door!.url, started.id, ["working"])
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }))
    expect(canceled.id).toBe(started.id)
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(statusText(canceled)).toBe("task canceled")
    expect((await client.cancelTask(CancelTaskRequest.fromJSON({ id: started.id }))).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    const done = asTask(await client.sendMessage(send("/complete hi")))
    expect(await client.cancelTask(CancelTaskRequest.fromJSON({ id: done.id })).catch((e: unknown) => e)).toBeInstanceOf(TaskNotCancelableError)
  })

  it("resubscribeTask: the current Task first, then the rest of the run", async () => {
    const client = await connect()
    const started = asTask(await client.sendMessage(send("/stream 6 60", {}, { returnImmediately: true })))
    await waitForState(door!.url, started.id, ["working"])
    const events = await drain(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id })))
    const { last, taskId } = expectTaskStream(events)
    expect(taskId).toBe(started.id)
    expect(last.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    // A finished task has nothing to subscribe to.
    const again = await drain(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: started.id }))).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(UnsupportedOperationError)
  })

  it("unknown ids are TaskNotFoundError; a push config round trip (create, get, list, delete)", async () => {
    door = await doorFor(binding, { door: { pushAllow: ["127.0.0.1"] } })
    const client = await factoryFor(binding).createFromUrl(door.url)
    expect(await client.getTask(GetTaskRequest.fromJSON({ id: "tsk_nope" })).catch((e: unknown) => e)).toBeInstanceOf(TaskNotFoundError)
    expect(await client.cancelTask(CancelTaskRequest.fromJSON({ id: "tsk_nope" })).catch((e: unknown) => e)).toBeInstanceOf(TaskNotFoundError)
    const task = asTask(await client.sendMessage(send("/forever", {}, { returnImmediately: true })))
    const made = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId: task.id, url: "http://127.0.0.1:9/hook", token: "tk", authentication: { scheme: "Bearer", credentials: "cr" } })
    )
    expect(made).toMatchObject({ taskId: task.id, url: "http://127.0.0.1:9/hook", token: "tk", authentication: { scheme: "Bearer", credentials: "cr" } })
    expect(made.id).toMatch(/\S/)
    const got = await client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: made.id }))
    expect(got).toEqual(made)
    const listed = await client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }))
    expect(listed.configs).toEqual([made])
    await client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: made.id }))
    const gone = await client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: made.id }))
      .catch((e: unknown) => e)
    expect(gone).toBeInstanceOf(TaskNotFoundError)
    await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }))
  })

  it("with a door token: the client authenticates, and getAgentCard returns the extended card", async () => {
    const token = "interop1-secret-token"
    door = await doorFor(binding, { door: { authToken: Redacted.make(token) } })
    const auth: AuthenticationHandler = {
      headers: async () => ({ authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined
    }
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, auth)
    // Over gRPC the token is call metadata, set by an interceptor; over HTTP a header, set by the fetch.
    const bearer: CallInterceptor = {
      before: async (args) => {
        args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${token}` } }
      },
      after: async () => {}
    }
    const client = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl }), new GrpcTransportFactory()],
      preferredTransports: [binding],
      ...(binding === "GRPC" ? { clientConfig: { interceptors: [bearer] } } : {})
    }).createFromUrl(door.url)
    const card = await client.getAgentCard()
    expect(card.capabilities?.extendedAgentCard).toBe(true)
    expect(card.securitySchemes["bearer"]?.scheme?.$case).toBe("httpAuthSecurityScheme")
    const extension = card.capabilities?.extensions.find((entry) => entry.uri === "urn:murmur:a2a:capsule:v1")
    // Only the extended card carries the session and the grants.
    expect(extension?.params?.["session_id"]).toBe(door.sessionId)
    const task = asTask(await client.sendMessage(send("/complete authed")))
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    // Without the token, the door refuses.
    const anonymous = await factoryFor(binding).createFromUrl(door.url)
    expect(await anonymous.sendMessage(send("/complete nope")).catch((e: unknown) => e)).toBeInstanceOf(Error)
  })
})
