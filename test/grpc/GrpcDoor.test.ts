/**
 * The gRPC binding (A2A 1.0 §10): the official `@a2a-js/sdk` 1.3 client's gRPC transport, chosen
 * from the card as a client picks it (`preferredTransports: ["GRPC"]`), drives a real door on
 * loopback (`openDoor({ grpc: true })`, the scripted capsule); the checks every binding shares
 * (send, stream, get, list, cancel, resubscribe, push configs) run over gRPC in
 * test/http/Interop1.test.ts. Here is what is gRPC's own: the
 * bearer token in metadata, `a2a-version` metadata, the `ErrorInfo` in `grpc-status-details-bin`,
 * a client's cancel giving its stream slot back, and the server ending with the session; and
 * `serve --grpc-port` through the built CLI (`npm test` builds first; run `npm run build` before
 * running this file alone).
 */
import { spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { credentials as grpcCredentials, Metadata, type ServiceError, status } from "@grpc/grpc-js"
import { CancelTaskRequest, GetTaskRequest, type Task, TaskState } from "@a2a-js/sdk-1"
import { type CallInterceptor, type Client, ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk-1/client"
import { GrpcTransportFactory } from "@a2a-js/sdk-1/client/grpc"
import { TaskNotFoundError } from "@a2a-js/sdk-1/errors"
import { Either, Redacted } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import {
  A2AServiceClient,
  GetTaskRequest as RawGetTaskRequest,
  SendMessageRequest as RawSendMessageRequest,
  type SendMessageResponse
} from "../../src/grpc/generated/a2a.js"
import { ErrorInfo } from "../../src/grpc/generated/google/rpc/error_details.js"
import { Status } from "../../src/grpc/generated/google/rpc/status.js"
import { makeDoorCredentials } from "../../src/http/DoorCredentials.js"
import { type DoorOptions, type OpenDoor, openDoor, sleep } from "../lib/Door.js"
import { artifactText, asTask, drain, expectTaskStream, send } from "../lib/Sdk1.js"


/** Every call carries `authorization` metadata (the SDK passes service parameters as metadata). */
const bearer = (token: string): CallInterceptor => ({
  before: async (args) => {
    args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${token}` } }
  },
  after: async () => {}
})

const grpcClient = (url: string, interceptors: Array<CallInterceptor> = []) =>
  new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory()],
      preferredTransports: ["GRPC"],
      clientConfig: { interceptors }
    })
  ).createFromUrl(url)

/** The status a rejected SDK call carried (`status` on the SDK's gRPC errors). */
const statusOf = (error: unknown) => (error as { status?: number }).status

/** A raw unary call on the generated client, with the metadata given: the error or the answer. */
const raw = <Req, Res>(
  invoke: (request: Req, metadata: Metadata, callback: (error: ServiceError | null, value?: Res) => void) => unknown,
  request: Req,
  metadata: Record<string, string> = {}
) =>
  new Promise<{ readonly error: ServiceError | null; readonly value: Res | undefined }>((resolve) => {
    const sent = new Metadata()
    for (const [key, value] of Object.entries(metadata)) sent.set(key, value)
    invoke(request, sent, (error, value) => resolve({ error, value }))
  })

/** The `ErrorInfo` in a status's `grpc-status-details-bin` trailer. */
const errorInfoOf = (error: ServiceError) => {
  const bin = error.metadata.get("grpc-status-details-bin")[0] as Buffer
  const decoded = Status.decode(bin)
  expect(decoded.code).toBe(error.code)
  expect(decoded.details[0]?.typeUrl).toBe("type.googleapis.com/google.rpc.ErrorInfo")
  return ErrorInfo.decode(decoded.details[0]!.value)
}

const refusesConnections = (address: string) =>
  new Promise<boolean>((resolve) => {
    const at = address.lastIndexOf(":")
    const socket = connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) })
    socket.once("connect", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", () => resolve(true))
  })

describe("@a2a-js/sdk 1.3 over gRPC", () => {
  let door: OpenDoor | undefined
  const rawClients: Array<{ close: () => void }> = []
  afterEach(async () => {
    for (const client of rawClients.splice(0)) client.close()
    await door?.close()
    door = undefined
  })

  const open = async (options: DoorOptions = {}) => {
    door = await openDoor({ ...options, grpc: true })
    return door
  }
  const connectSdk = async (options: DoorOptions = {}): Promise<Client> => grpcClient((await open(options)).url)
  const rawClient = (address: string) => {
    const client = new A2AServiceClient(address, grpcCredentials.createInsecure())
    rawClients.push(client)
    return client
  }

  it("the card lists the gRPC binding after HTTP+JSON, at the bound host:port", async () => {
    const client = await connectSdk()
    const card = await client.getAgentCard()
    expect(door!.grpc).toMatch(/^127\.0\.0\.1:\d+$/)
    expect(card.supportedInterfaces.map((entry) => [entry.protocolBinding, entry.protocolVersion, entry.url])).toEqual([
      ["JSONRPC", "1.0", door!.url],
      ["HTTP+JSON", "1.0", door!.url],
      ["GRPC", "1.0", door!.grpc],
      ["JSONRPC", "0.3", door!.url]
    ])
    expect(client.transport.protocolName).toBe("GRPC")
  })

  it("unknown ids are TaskNotFoundError (NOT_FOUND, reason TASK_NOT_FOUND in the details trailer)", async () => {
    const client = await connectSdk()
    const missing = await client.getTask(GetTaskRequest.fromJSON({ id: "tsk_nope" })).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(TaskNotFoundError)
    expect(statusOf(missing)).toBe(status.NOT_FOUND)
    expect(await client.cancelTask(CancelTaskRequest.fromJSON({ id: "tsk_nope" })).catch((e: unknown) => e)).toBeInstanceOf(TaskNotFoundError)
    const direct = rawClient(door!.grpc!)
    const { error } = await raw(direct.getTask.bind(direct), RawGetTaskRequest.fromJSON({ id: "tsk_nope" }))
    expect(error?.code).toBe(status.NOT_FOUND)
    expect(error?.details).toBe("Task not found")
    expect(errorInfoOf(error!)).toEqual({ reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org", metadata: { taskId: "tsk_nope" } })
  })

  it("a2a-version metadata: absent is 1.0, a version the door does not speak is FAILED_PRECONDITION VERSION_NOT_SUPPORTED", async () => {
    await open()
    const client = rawClient(door!.grpc!)
    const request = RawSendMessageRequest.fromJSON({ message: { messageId: "grpc-raw-1", role: "ROLE_USER", parts: [{ text: "/complete raw" }] } })
    const served = await raw(client.sendMessage.bind(client), request)
    expect(served.error).toBeNull()
    expect((served.value as SendMessageResponse | undefined)?.task?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    const refused = await raw(client.sendMessage.bind(client), request, { "a2a-version": "2.0" })
    expect(refused.error?.code).toBe(status.FAILED_PRECONDITION)
    expect(refused.error?.details).toMatch(/version '2\.0' is not supported/)
    expect(errorInfoOf(refused.error!).reason).toBe("VERSION_NOT_SUPPORTED")
  })

  it("with a door token: an authenticated call works, a missing or wrong token is UNAUTHENTICATED", async () => {
    const token = "grpc-secret-token-0123"
    await open({ door: { authToken: Redacted.make(token) } })
    const client = await grpcClient(door!.url, [bearer(token)])
    const task = asTask(await client.sendMessage(send("/complete authed")))
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    // The extended card needs a token and shows the session's grants.
    const card = await client.getAgentCard()
    expect(card.capabilities?.extendedAgentCard).toBe(true)
    expect(card.capabilities?.extensions.find((entry) => entry.uri === "urn:murmur:a2a:capsule:v1")?.params?.["session_id"]).toBe(door!.sessionId)

    const anonymous = await grpcClient(door!.url)
    const refused = await anonymous.sendMessage(send("/complete nope")).catch((e: unknown) => e)
    expect(statusOf(refused)).toBe(status.UNAUTHENTICATED)
    const wrong = await grpcClient(door!.url, [bearer("not-the-token-0000")])
    expect(statusOf(await wrong.getTask(GetTaskRequest.fromJSON({ id: task.id })).catch((e: unknown) => e))).toBe(status.UNAUTHENTICATED)
  })

  it("a token without the method's scope is PERMISSION_DENIED; a message over --max-body-bytes is RESOURCE_EXHAUSTED", async () => {
    const dir = mkdtempSync(join(tmpdir(), "grpc-door-"))
    try {
      const path = join(dir, "tokens.yaml")
      writeFileSync(path, "tokens:\n  reader:\n    token: grpc-reader-token-0123\n    scopes: [read]\n")
      chmodSync(path, 0o600)
      const credentials = Either.getOrThrow(makeDoorCredentials({ tokensFile: path }))
      await open({ door: { credentials, maxBodyBytes: 64 * 1024 } })
      const client = rawClient(door!.grpc!)
      const message = (text: string) => RawSendMessageRequest.fromJSON({ message: { messageId: `grpc-raw-${text.length}-${Date.now()}`, role: "ROLE_USER", parts: [{ text }] } })
      const denied = await raw(client.sendMessage.bind(client), message("/complete no"), { authorization: "Bearer grpc-reader-token-0123" })
      expect(denied.error?.code).toBe(status.PERMISSION_DENIED)
      expect(denied.error?.details).toBe("Forbidden: principal 'reader' does not hold the scope 'send'")
      expect(errorInfoOf(denied.error!)).toMatchObject({ reason: "INSUFFICIENT_SCOPE", domain: "capsule-runtime", metadata: { scope: "send" } })
      // The reader may read: a task it cannot see is simply not found.
      const read = await raw(client.getTask.bind(client), RawGetTaskRequest.fromJSON({ id: "tsk_nope" }), { authorization: "Bearer grpc-reader-token-0123" })
      expect(read.error?.code).toBe(status.NOT_FOUND)
      const large = await raw(client.sendMessage.bind(client), message("x".repeat(100 * 1024)), { authorization: "Bearer grpc-reader-token-0123" })
      expect(large.error?.code).toBe(status.RESOURCE_EXHAUSTED)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a client's cancel ends its stream on the door and gives its stream slot back", async () => {
    const client = await connectSdk({ door: { maxWatchers: 1 } })
    const first = new AbortController()
    const events = client.sendMessageStream(send("/forever"), { signal: first.signal })
    const opened = await events.next()
    expect(opened.value?.payload?.$case).toBe("task")
    // The one slot is taken: another stream is refused while this one is open.
    const refused = await drain(client.sendMessageStream(send("/forever"))).catch((e: unknown) => e)
    expect(statusOf(refused)).toBe(status.RESOURCE_EXHAUSTED)
    first.abort()
    await events.return(undefined).catch(() => undefined)
    // The door sees the cancel, interrupts the call's fiber and releases the slot.
    const deadline = Date.now() + 5_000
    for (;;) {
      const second = client.sendMessageStream(send("/complete again"))
      const outcome = await drain(second).catch((e: unknown) => e)
      if (Array.isArray(outcome)) {
        expect(expectTaskStream(outcome).last.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
        break
      }
      expect(statusOf(outcome)).toBe(status.RESOURCE_EXHAUSTED)
      if (Date.now() > deadline) throw new Error("the canceled stream's slot was not given back")
      await sleep(20)
    }
  })

  it("closing the session ends its open streams, then stops the gRPC server: no call connects afterwards", async () => {
    const client = await connectSdk()
    const task = asTask(await client.sendMessage(send("/complete bye")))
    const address = door!.grpc!
    expect(await refusesConnections(address)).toBe(false)
    const open = client.sendMessageStream(send("/forever"))
    expect((await open.next()).value?.payload?.$case).toBe("task")
    const rest = drain(open)
    const started = Date.now()
    await door!.close()
    door = undefined
    // The session cancels the task: the stream carries that and ends, as over HTTP.
    const ended = await rest
    expect(ended.at(-1)?.payload?.$case).toBe("statusUpdate")
    expect((ended.at(-1)?.payload?.value as { status: Task["status"] }).status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(await refusesConnections(address)).toBe(true)
    const after = await client.getTask(GetTaskRequest.fromJSON({ id: task.id })).catch((e: unknown) => e)
    expect(statusOf(after)).toBe(status.UNAVAILABLE)
  })
})

describe("serve --grpc-port (CLI)", () => {
  it("serves gRPC beside HTTP, says where, lists it on the card, and stops with the process", async () => {
    const child = spawn(process.execPath, ["dist/main.js", "serve", "--json", "--grpc-port", "0"], { stdio: ["ignore", "pipe", "pipe"] })
    try {
      const listening = await new Promise<{ url: string; grpc: string }>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line)))
        child.once("exit", (code) => reject(new Error(`serve exited ${code}`)))
      })
      expect(listening.grpc).toMatch(/^127\.0\.0\.1:\d+$/)
      const client = await grpcClient(listening.url)
      const card = await client.getAgentCard()
      expect(card.supportedInterfaces.find((entry) => entry.protocolBinding === "GRPC")?.url).toBe(listening.grpc)
      const task = asTask(await client.sendMessage(send("hello over grpc")))
      expect(artifactText(task)).toContain("hello over grpc")
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      expect(await exited).toBe(0)
      expect(await refusesConnections(listening.grpc)).toBe(true)
    } finally {
      child.kill("SIGKILL")
    }
  })
})
