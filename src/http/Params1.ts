/**
 * Params of A2A 1.0's methods (ProtoJSON of `a2a.proto`), read leniently as 1.0 asks: enums by
 * name or number, camelCase or snake_case keys, unknown fields ignored. A 1.0 message is turned
 * into 0.3's shape and checked by the same decoder (./Params.ts), so both versions accept and
 * refuse the same messages.
 */
import { Either } from "effect"
import type { TaskState } from "../services/Task.js"
import type { ContentTypeNotSupported, InvalidParams } from "./DoorErrors.js"
import { bad, isObject, type JsonObject } from "./ParamChecks.js"
import { decodeSendParams, type SendRequest } from "./Params.js"
import { decodePushSpec } from "./PushParams.js"

/** snake_case names of the camelCase ones asked for, made once each (the decoder's hot path). */
const snakeNames = new Map<string, string>()

/** A field by its ProtoJSON (camelCase) name or its proto (snake_case) name. */
const field = (record: JsonObject, camel: string): unknown => {
  if (camel in record) return record[camel]
  let snake = snakeNames.get(camel)
  if (snake === undefined) snakeNames.set(camel, snake = camel.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`))
  return snake === camel ? undefined : record[snake]
}

const roles: ReadonlyMap<unknown, string> = new Map<unknown, string>([["ROLE_USER", "user"], [1, "user"], ["ROLE_AGENT", "agent"], [2, "agent"]])

/** A 1.0 part (oneof `text` | `raw` | `url` | `data`, with `filename`, `mediaType`) as the 0.3 part it is. */
const partOf = (part: unknown): unknown => {
  if (!isObject(part)) return part
  const mediaType = field(part, "mediaType")
  if ("text" in part) return { kind: "text", text: part.text }
  if ("raw" in part || "url" in part) {
    return { kind: "file", file: { bytes: part.raw, uri: part.url, name: part.filename, mimeType: mediaType } }
  }
  if ("data" in part) return { kind: "data", data: part.data, mediaType }
  return { kind: "none" }
}

const messageOf = (message: unknown): unknown => {
  if (!isObject(message)) return message
  const role = field(message, "role")
  return {
    kind: "message",
    messageId: field(message, "messageId"),
    role: roles.get(role) ?? (typeof role === "string" ? role : String(role)),
    parts: Array.isArray(message.parts) ? message.parts.map(partOf) : message.parts,
    contextId: field(message, "contextId"),
    taskId: field(message, "taskId")
  }
}

/**
 * `SendMessage` / `SendStreamingMessage` params. `returnImmediately` is 0.3's `blocking`
 * inverted; `taskPushNotificationConfig` is a push config for the task the message makes.
 */
export const decodeSendRequest1 = (params: unknown): Either.Either<SendRequest, InvalidParams | ContentTypeNotSupported> => {
  if (!isObject(params)) return bad("params must be a SendMessageRequest object")
  const configuration = field(params, "configuration")
  const config = isObject(configuration) ? configuration : {}
  const inline = field(config, "taskPushNotificationConfig")
  const push = inline === undefined || inline === null ? undefined : decodePushSpec(inline, "1.0")
  if (push !== undefined && Either.isLeft(push)) return Either.left(push.left)
  const historyLength = field(config, "historyLength")
  const decoded = decodeSendParams({
    message: messageOf(params.message),
    configuration: {
      blocking: field(config, "returnImmediately") !== true,
      ...(historyLength === undefined || historyLength === null ? {} : { historyLength })
    }
  }, true, true)
  return Either.map(decoded, (request) => ({ ...request, push: push?.right }))
}

const states: ReadonlyArray<TaskState | undefined> = [
  undefined,
  "submitted",
  "working",
  "completed",
  "failed",
  "canceled",
  "input-required",
  "rejected",
  // TASK_STATE_AUTH_REQUIRED: no task here ever asks for it, so the filter matches none.
  undefined
]
const stateNames = ["TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"]

export interface ListRequest {
  readonly contextId: string | undefined
  /** `null`: a state no task here can be in (auth-required); `undefined`: no filter. */
  readonly state: TaskState | null | undefined
  readonly pageSize: number
  readonly pageToken: string | undefined
  readonly historyLength: number | undefined
  /** Milliseconds since the epoch: tasks whose status changed at or after it. */
  readonly after: number | undefined
  readonly includeArtifacts: boolean
}

/** Query strings carry every value as text: numbers and booleans are read from it too. */
const integer = (value: unknown): number | undefined | "bad" => {
  if (value === undefined || value === null || value === "") return undefined
  const number = typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value
  return typeof number === "number" && Number.isInteger(number) ? number : "bad"
}

const flag = (value: unknown): boolean | "bad" =>
  value === undefined || value === null || value === false || value === "false" ? false : value === true || value === "true" ? true : "bad"

/** `ListTasks` params (A2A 1.0 §3.1.4): filters, page size 1–100 (50 by default) and an opaque page token. */
export const decodeListRequest = (params: unknown): Either.Either<ListRequest, InvalidParams> => {
  const record = isObject(params) ? params : {}
  const contextId = field(record, "contextId")
  if (contextId !== undefined && contextId !== null && typeof contextId !== "string") return bad("contextId must be a string")
  const status = field(record, "status")
  let state: TaskState | null | undefined
  if (status !== undefined && status !== null && status !== "" && status !== 0 && status !== "TASK_STATE_UNSPECIFIED") {
    const at = typeof status === "number" ? status : typeof status === "string" && /^\d+$/.test(status) ? Number(status) : stateNames.indexOf(String(status))
    if (!Number.isInteger(at) || at <= 0 || at >= stateNames.length) return bad(`status must be a TaskState name, not ${JSON.stringify(status)}`)
    state = states[at] ?? null
  }
  const pageSize = integer(field(record, "pageSize"))
  if (pageSize === "bad" || (pageSize !== undefined && (pageSize < 1 || pageSize > 100))) return bad("pageSize must be an integer from 1 to 100")
  const historyLength = integer(field(record, "historyLength"))
  if (historyLength === "bad" || (historyLength !== undefined && historyLength < 0)) return bad("historyLength must be a non-negative integer")
  const pageToken = field(record, "pageToken")
  if (pageToken !== undefined && pageToken !== null && typeof pageToken !== "string") return bad("pageToken must be a string")
  const timestamp = field(record, "statusTimestampAfter")
  let after: number | undefined
  if (timestamp !== undefined && timestamp !== null && timestamp !== "") {
    after = typeof timestamp === "string" ? Date.parse(timestamp) : Number.NaN
    if (Number.isNaN(after)) return bad("statusTimestampAfter must be an RFC 3339 timestamp")
  }
  const includeArtifacts = flag(field(record, "includeArtifacts"))
  if (includeArtifacts === "bad") return bad("includeArtifacts must be true or false")
  return Either.right({
    contextId: typeof contextId === "string" && contextId.length > 0 ? contextId : undefined,
    state,
    pageSize: pageSize ?? 50,
    pageToken: typeof pageToken === "string" && pageToken.length > 0 ? pageToken : undefined,
    historyLength,
    after,
    includeArtifacts
  })
}
