/**
 * Params of the JSON-RPC methods, decoded synchronously with `effect/Schema`
 * (`decodeUnknownEither`: no fiber per request) and then checked for what a schema cannot say
 * (text-only parts, id charset). Unknown fields are ignored, as A2A asks for forward compatibility.
 */
import { Either, ParseResult, Schema } from "effect"
import { mintId } from "../services/Ids.js"
import type { Message, Part } from "../services/Task.js"
import { decodeDataPart, decodeFilePart } from "./Attachments.js"
import { ContentTypeNotSupported, InvalidParams } from "./DoorErrors.js"
import { decodePushSpec, type PushSpec } from "./PushParams.js"

const OptionalString = Schema.optional(Schema.NullOr(Schema.String))

const WirePart = Schema.Struct({
  kind: Schema.optional(Schema.String),
  text: Schema.optional(Schema.String),
  data: Schema.optional(Schema.Unknown),
  file: Schema.optional(Schema.Unknown),
  mediaType: Schema.optional(Schema.Unknown)
})

const WireMessage = Schema.Struct({
  kind: Schema.optional(Schema.String),
  messageId: Schema.String,
  role: Schema.String,
  parts: Schema.Array(WirePart),
  contextId: OptionalString,
  taskId: OptionalString
})

const Configuration = Schema.Struct({
  blocking: Schema.optional(Schema.NullOr(Schema.Boolean)),
  pushNotificationConfig: Schema.optional(Schema.Unknown),
  historyLength: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative())))
})

const SendParams = Schema.Struct({
  message: WireMessage,
  configuration: Schema.optional(Schema.NullOr(Configuration))
})

const TaskQuery = Schema.Struct({
  id: Schema.optional(Schema.Unknown),
  historyLength: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative())))
})

const describe = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  return issues.slice(0, 3).map((issue) => `${issue.path.length > 0 ? issue.path.join(".") + ": " : ""}${issue.message}`).join("; ")
}

const decode = <A, I>(schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore" })
  return (value: unknown): Either.Either<A, InvalidParams> =>
    Either.mapLeft(run(value), (error) => new InvalidParams({ detail: describe(error) }))
}

/** Ids that reach logs, keys and (later) file names: bounded, printable, no path characters. */
const safeId = /^[A-Za-z0-9._:@+=-]{1,256}$/

export interface SendRequest {
  readonly message: Message
  readonly taskId: string | undefined
  readonly contextId: string | undefined
  readonly blocking: boolean
  readonly historyLength: number | undefined
  /** A push config given with the message (0.3 `pushNotificationConfig`, 1.0 `taskPushNotificationConfig`). */
  readonly push: PushSpec | undefined
}

const decodeSend = decode(SendParams)

/**
 * `message/send` and `message/stream` params. The reference also accepts the message itself as
 * `params`; A2A shapes are stricter: role `user`/`agent` and at least one part.
 */
export const decodeSendParams = (
  params: unknown,
  strict: boolean,
  /** 1.0's data parts hold any JSON value; 0.3's an object. */
  anyJsonData = false
): Either.Either<SendRequest, InvalidParams | ContentTypeNotSupported> => {
  const shaped = typeof params === "object" && params !== null && !Array.isArray(params) && !("message" in params) && !strict
    ? { message: params }
    : params
  return Either.flatMap(decodeSend(shaped), (decoded): Either.Either<SendRequest, InvalidParams | ContentTypeNotSupported> => {
    const wire = decoded.message
    if (strict && wire.role !== "user" && wire.role !== "agent") {
      return Either.left(new InvalidParams({ detail: `message.role must be "user" or "agent"` }))
    }
    if (strict && wire.parts.length === 0) return Either.left(new InvalidParams({ detail: "message.parts must not be empty" }))
    // A message in A2A shapes (`kind` on it or on a part) names every part's kind; one with no
    // `kind` anywhere is read as the reference's, which infers text from a `text` field.
    const kindRequired = strict && (wire.kind === "message" || wire.parts.some((part) => part.kind !== undefined))
    const parts: Array<Part> = []
    for (const part of wire.parts) {
      const kind = kindRequired ? part.kind : part.kind ?? (part.text === undefined ? undefined : "text")
      if (kind === "file" || kind === "data") {
        const decoded: Either.Either<Part, InvalidParams> = kind === "file" ? decodeFilePart(part.file) : decodeDataPart(part, anyJsonData)
        if (Either.isLeft(decoded)) return Either.left(decoded.left)
        parts.push(decoded.right)
      } else if (kind === "text") {
        if (part.text === undefined) return Either.left(new InvalidParams({ detail: "a text part needs a string text" }))
        parts.push({ kind: "text", text: part.text })
      } else if (kind !== undefined || strict) {
        return Either.left(new InvalidParams({ detail: `unknown part kind ${JSON.stringify(kind ?? null)}` }))
      }
    }
    for (const [name, value] of [["messageId", wire.messageId], ["contextId", wire.contextId], ["taskId", wire.taskId]] as const) {
      if (value !== undefined && value !== null && !safeId.test(value)) {
        return Either.left(new InvalidParams({ detail: `message.${name} must be 1 to 256 characters of [A-Za-z0-9._:@+=-]` }))
      }
    }
    const taskId = wire.taskId ?? undefined
    const contextId = wire.contextId ?? undefined
    const pushConfig = decoded.configuration?.pushNotificationConfig
    let push: PushSpec | undefined
    if (strict && pushConfig !== undefined && pushConfig !== null) {
      const spec = decodePushSpec(pushConfig, "0.3")
      if (Either.isLeft(spec)) return Either.left(spec.left)
      push = spec.right
    }
    return Either.right({
      push,
      message: {
        role: wire.role === "agent" ? "agent" : "user",
        messageId: wire.messageId || mintId("msg"),
        parts,
        ...(taskId === undefined ? {} : { taskId }),
        ...(contextId === undefined ? {} : { contextId })
      },
      taskId,
      contextId,
      // A2A servers (the SDK's, a2a-python's) block unless told not to; the reference never blocks unasked.
      blocking: strict ? decoded.configuration?.blocking !== false : decoded.configuration?.blocking === true,
      historyLength: decoded.configuration?.historyLength ?? undefined
    })
  })
}

const decodeQuery = decode(TaskQuery)

export interface TaskQueryRequest {
  /** Absent when the params carry no string id (the reference then means the active task). */
  readonly id: string | undefined
  readonly historyLength: number | undefined
}

export const decodeTaskQuery = (params: unknown): Either.Either<TaskQueryRequest, InvalidParams> =>
  Either.map(decodeQuery(Array.isArray(params) ? {} : params), (query) => ({
    id: typeof query.id === "string" ? query.id : undefined,
    historyLength: query.historyLength ?? undefined
  }))
