/**
 * Property: a task is the same task through every binding and version. Random sequences of
 * send, cancel and get, each through a random binding (JSON-RPC 0.3, JSON-RPC 1.0, HTTP+JSON
 * 1.0, gRPC 1.0 through the generated client), against one real door; after every step, every binding reads every task made so far, and
 * all readings agree on id, context, state, history and artifacts (once each is spelled in the
 * model's terms).
 */
import { credentials as grpcCredentials, type ServiceError } from "@grpc/grpc-js"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  A2AServiceClient,
  CancelTaskRequest,
  GetTaskRequest,
  SendMessageRequest,
  SendMessageResponse,
  Task as TaskMessage
} from "../../src/grpc/generated/a2a.js"
import { ErrorInfo } from "../../src/grpc/generated/google/rpc/error_details.js"
import { Status } from "../../src/grpc/generated/google/rpc/status.js"
import { a2aMessage, type OpenDoor, openDoor, rpc } from "../lib/Door.js"

type Binding = "jsonrpc-0.3" | "jsonrpc-1.0" | "rest-1.0" | "grpc-1.0"
const bindings: ReadonlyArray<Binding> = ["jsonrpc-0.3", "jsonrpc-1.0", "rest-1.0", "grpc-1.0"]

interface Seen {
  readonly id: string
  readonly contextId: string
  readonly state: string
  readonly history: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<string>
}

const textOf = (parts: ReadonlyArray<{ text?: string }> | undefined) => (parts ?? []).map((part) => part.text ?? "").join("")

/** A task in any version's shape, in the model's terms (0.3's state names). */
const seen = (task: any): Seen => ({
  id: task.id,
  contextId: task.contextId,
  state: String(task.status.state).replace(/^TASK_STATE_/, "").toLowerCase().replace("_", "-"),
  history: (task.history ?? []).map((message: any) => `${String(message.role).replace(/^ROLE_/, "").toLowerCase()}:${textOf(message.parts)}`),
  artifacts: (task.artifacts ?? []).map((artifact: any) => textOf(artifact.parts))
})

let door: OpenDoor
let grpc: A2AServiceClient
beforeAll(async () => {
  door = await openDoor({ tasks: { queueDepth: 64, maxActive: 8 }, grpc: true })
  grpc = new A2AServiceClient(door.grpc!, grpcCredentials.createInsecure())
})
afterAll(async () => {
  grpc.close()
  await door.close()
})

/** A unary gRPC call as a promise of the answer's ProtoJSON, or the A2A reason of its error. */
const unary = <Req, Res>(
  call: (request: Req, callback: (error: ServiceError | null, value?: Res) => void) => unknown,
  request: Req,
  toJSON: (value: Res) => unknown
) =>
  new Promise<{ readonly value?: any; readonly reason?: string }>((resolve) =>
    call.call(grpc, request, (error, value) => {
      if (error === null) return resolve({ value: toJSON(value!) })
      const details = Status.decode(error.metadata.get("grpc-status-details-bin")[0] as Buffer).details[0]
      resolve({ reason: details === undefined ? String(error.code) : ErrorInfo.decode(details.value).reason })
    }))

const v1 = { "a2a-version": "1.0" }
let counter = 0

const send = async (binding: Binding, text: string): Promise<any> => {
  const message1 = { messageId: `prop-${counter++}`, role: "ROLE_USER", parts: [{ text }] }
  switch (binding) {
    case "jsonrpc-0.3":
      return (await rpc(door.url, "message/send", { message: a2aMessage(text), configuration: { blocking: false } })).body.result
    case "jsonrpc-1.0":
      return (await rpc(door.url, "SendMessage", { message: message1, configuration: { returnImmediately: true } }, { headers: v1 })).body.result.task
    case "grpc-1.0":
      return (await unary(grpc.sendMessage, SendMessageRequest.fromJSON({ message: message1, configuration: { returnImmediately: true } }), SendMessageResponse.toJSON))
        .value.task
    case "rest-1.0": {
      const response = await fetch(`${door.url}message:send`, {
        method: "POST",
        headers: { ...v1, "content-type": "application/json" },
        body: JSON.stringify({ message: message1, configuration: { returnImmediately: true } })
      })
      return (await response.json()).task
    }
  }
}

/** The task as one binding answers it, or its error code. */
const get = async (binding: Binding, id: string): Promise<any> => {
  switch (binding) {
    case "jsonrpc-0.3":
      return (await rpc(door.url, "tasks/get", { id })).body.result
    case "jsonrpc-1.0":
      return (await rpc(door.url, "GetTask", { id }, { headers: v1 })).body.result
    case "rest-1.0":
      return await (await fetch(`${door.url}tasks/${encodeURIComponent(id)}`, { headers: v1 })).json()
    case "grpc-1.0":
      return (await unary(grpc.getTask, GetTaskRequest.fromJSON({ id }), TaskMessage.toJSON)).value
  }
}

const cancel = async (binding: Binding, id: string): Promise<{ readonly task?: any; readonly code?: number }> => {
  switch (binding) {
    case "jsonrpc-0.3": {
      const body = (await rpc(door.url, "tasks/cancel", { id })).body
      return body.error === undefined ? { task: body.result } : { code: body.error.code }
    }
    case "jsonrpc-1.0": {
      const body = (await rpc(door.url, "CancelTask", { id }, { headers: v1 })).body
      return body.error === undefined ? { task: body.result } : { code: body.error.code }
    }
    case "rest-1.0": {
      const response = await fetch(`${door.url}tasks/${encodeURIComponent(id)}:cancel`, { method: "POST", headers: v1 })
      const body = await response.json()
      // REST says "not cancelable" with HTTP 400 and the reason; the same error as -32002.
      return response.ok ? { task: body } : { code: body.error.details[0].reason === "TASK_NOT_CANCELABLE" ? -32002 : -1 }
    }
    case "grpc-1.0": {
      const answer = await unary(grpc.cancelTask, CancelTaskRequest.fromJSON({ id }), TaskMessage.toJSON)
      return answer.value !== undefined ? { task: answer.value } : { code: answer.reason === "TASK_NOT_CANCELABLE" ? -32002 : -1 }
    }
  }
}

const step = fc.oneof(
  fc.record({ op: fc.constant("send" as const), binding: fc.constantFrom(...bindings), text: fc.constantFrom("/complete done", "/forever", "hello", "/fail no") }),
  fc.record({ op: fc.constant("cancel" as const), binding: fc.constantFrom(...bindings), task: fc.nat(8) }),
  fc.record({ op: fc.constant("get" as const), binding: fc.constantFrom(...bindings), task: fc.nat(8) })
)

describe("one task through every binding", () => {
  it("send, cancel and get through random bindings: every binding reads the same task", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        const ids: Array<string> = []
        for (const command of steps) {
          if (command.op === "send") {
            const task = await send(command.binding, command.text)
            expect(task?.id, JSON.stringify(command)).toMatch(/^tsk_/)
            ids.push(task.id)
          } else if (ids.length > 0) {
            const id = ids[command.task % ids.length]!
            if (command.op === "cancel") {
              const before = seen(await get("jsonrpc-1.0", id))
              const outcome = await cancel(command.binding, id)
              // Cancel is honest in every binding: a live task ends canceled, a canceled one
              // answers the same, any other ended task is not cancelable.
              if (before.state === "completed" || before.state === "failed") expect(outcome.code).toBe(-32002)
              else if (outcome.task !== undefined) expect(seen(outcome.task).state).toBe("canceled")
              else expect(outcome.code).toBe(-32002)
            } else {
              expect(seen(await get(command.binding, id)).id).toBe(id)
            }
          }
          for (const id of ids) {
            const readings = await Promise.all(bindings.map((binding) => get(binding, id)))
            const [first, ...rest] = readings.map(seen)
            // A task may move between two readings; one more read through each settles it.
            if (rest.some((reading) => JSON.stringify(reading) !== JSON.stringify(first))) {
              const again = (await Promise.all(bindings.map((binding) => get(binding, id)))).map(seen)
              const settled = again.every((reading) => JSON.stringify(reading) === JSON.stringify(again[0]))
              if (!settled) expect(again).toEqual(bindings.map(() => again[0]))
            }
          }
        }
        for (const id of ids) await cancel("jsonrpc-1.0", id)
      }),
      { numRuns: 25 }
    )
  }, 120_000)
})
