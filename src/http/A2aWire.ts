/**
 * A2A wire shapes, in 0.3's spelling or 1.0's (the data is the same; names differ). 0.3:
 * `Task` with `kind`, lower-case states and roles, `{kind:"text"}` parts, events `status-update`
 * / `artifact-update` with `final`, each SSE `data` a JSON-RPC response carrying the request's
 * id. 1.0 (ProtoJSON of `a2a.proto`): no `kind`, `TASK_STATE_*` / `ROLE_*`, `{text}` parts,
 * events wrapped as `{statusUpdate}` / `{artifactUpdate}` (a `StreamResponse`), a stream ended by
 * closing it; over HTTP+JSON the SSE `data` is the bare `StreamResponse`.
 *
 * Text chunks of a turn are one artifact (`append` after the first chunk, `lastChunk` at the
 * end); thinking is a `working` status whose message is marked `murmur/kind: thinking`; the final
 * answer is an artifact plus the final status message.
 */
import type { ResidueItem } from "../services/Residue.js"
import type { Message, Part, Task, TaskState } from "../services/Task.js"
import type { Frame } from "../services/TaskEvent.js"
import { encodeResult, type RpcId } from "./JsonRpc.js"
import { sseComment, sseFrame } from "./Sse.js"

export type A2aVersion = "0.3" | "1.0"

/** How a call reached the door: JSON-RPC on `POST /`, the 1.0 HTTP+JSON routes, or gRPC (streams framed as HTTP+JSON's). */
export type Binding = "JSONRPC" | "HTTP+JSON" | "GRPC"

/** What differs between the versions' spellings of the same data. */
interface Spelling {
  readonly kinds: boolean
  readonly state: (state: TaskState) => string
  readonly role: (role: "user" | "agent") => string
  readonly text: (text: string) => object
  readonly part: (part: Part) => object
}

const v03: Spelling = {
  kinds: true,
  state: (state) => state,
  role: (role) => role,
  text: (text) => ({ kind: "text", text }),
  part: (part) => {
    switch (part.kind) {
      case "text":
        return { kind: "text", text: part.text }
      case "data":
        return { kind: "data", data: part.data }
      case "file":
        return {
          kind: "file",
          file: {
            ...(part.bytes === undefined ? {} : { bytes: part.bytes }),
            ...(part.uri === undefined ? {} : { uri: part.uri }),
            ...(part.name === undefined ? {} : { name: part.name }),
            ...(part.mediaType === undefined ? {} : { mimeType: part.mediaType })
          }
        }
    }
  }
}

/** ProtoJSON enum names (`a2a.proto`): `input-required` is `TASK_STATE_INPUT_REQUIRED`. */
export const v1State = (state: TaskState): string => `TASK_STATE_${state.toUpperCase().replace("-", "_")}`

const v10: Spelling = {
  kinds: false,
  state: v1State,
  role: (role) => (role === "user" ? "ROLE_USER" : "ROLE_AGENT"),
  text: (text) => ({ text }),
  part: (part) => {
    const mediaType = part.kind === "text" || part.mediaType === undefined ? {} : { mediaType: part.mediaType }
    switch (part.kind) {
      case "text":
        return { text: part.text }
      case "data":
        return { data: part.data, ...mediaType }
      case "file":
        return {
          ...(part.bytes === undefined ? { url: part.uri } : { raw: part.bytes }),
          ...(part.name === undefined ? {} : { filename: part.name }),
          ...mediaType
        }
    }
  }
}

const spellingOf = (version: A2aVersion) => (version === "1.0" ? v10 : v03)

const kindOf = (spelling: Spelling, kind: string) => (spelling.kinds ? { kind } : {})

const messageOf = (message: Message, spelling: Spelling) => ({
  ...kindOf(spelling, "message"),
  role: spelling.role(message.role),
  messageId: message.messageId,
  parts: message.parts.map(spelling.part),
  ...(message.taskId === undefined ? {} : { taskId: message.taskId }),
  ...(message.contextId === undefined ? {} : { contextId: message.contextId })
})

export const a2aMessage = (message: Message, version: A2aVersion = "0.3") => messageOf(message, spellingOf(version))

/** A status line as an agent message; `messageId` is unique per status (`tag` tells which). */
const statusMessage = (spelling: Spelling, taskId: string, contextId: string, tag: string, text: string, metadata?: Record<string, string>) => ({
  ...kindOf(spelling, "message"),
  role: spelling.role("agent"),
  messageId: `${taskId}-status-${tag}`,
  parts: [spelling.text(text)],
  taskId,
  contextId,
  ...(metadata === undefined ? {} : { metadata })
})

const statusText = (task: Task): string | undefined =>
  task.state === "completed" ? task.response : task.state === "input-required" ? task.prompt : task.statusMessage

export interface TaskShape {
  readonly historyLength?: number | undefined
  readonly residue?: ReadonlyArray<ResidueItem>
  /** Leave the artifacts out (1.0 `ListTasks` without `includeArtifacts`). */
  readonly withoutArtifacts?: boolean
}

export const a2aTask = (task: Task, options: TaskShape = {}, version: A2aVersion = "0.3") => {
  const spelling = spellingOf(version)
  const text = statusText(task)
  const history = options.historyLength === undefined ? task.history : options.historyLength <= 0 ? [] : task.history.slice(-options.historyLength)
  const artifacts = options.withoutArtifacts === true ? [] : task.artifacts.map((artifact) => ({
    artifactId: artifact.artifactId,
    name: artifact.name,
    parts: artifact.parts.map(spelling.part)
  }))
  if (options.residue !== undefined && options.residue.length > 0) {
    artifacts.push({
      artifactId: `${task.id}-residue`,
      name: "residue",
      parts: options.residue.map((item) => spelling.text(JSON.stringify(item)))
    })
  }
  return {
    ...kindOf(spelling, "task"),
    id: task.id,
    contextId: task.contextId,
    status: {
      state: spelling.state(task.state),
      timestamp: task.timestamp,
      ...(text === undefined || text.length === 0 ? {} : { message: statusMessage(spelling, task.id, task.contextId, `r${task.revision}`, text) })
    },
    ...(history.length === 0 ? {} : { history: history.map((message) => messageOf(message, spelling)) }),
    ...(artifacts.length === 0 ? {} : { artifacts }),
    metadata: { murmur: { origin: task.provenance.origin, trust: task.provenance.trust } }
  }
}

/** In A2A shapes a stream ends at a terminal state or when the task waits for input. */
export const endsA2aStream = (state: TaskState, final: boolean) => final || state === "input-required"

/**
 * A frame's A2A event: 0.3's event object (with `kind` and `final`), or 1.0's `StreamResponse`
 * (the event under its oneof name, no `final`: the stream's end says it). `append` is the only
 * per-stream part.
 */
const a2aEvent = (frame: Frame, append: boolean, spelling: Spelling) => {
  const { contextId, event, taskId } = frame
  const timestamp = new Date().toISOString()
  const status = (state: TaskState, final: boolean, message: object | undefined) => {
    const update = {
      ...kindOf(spelling, "status-update"),
      taskId,
      contextId,
      status: { state: spelling.state(state), timestamp, ...(message === undefined ? {} : { message }) },
      ...(spelling.kinds ? { final } : {})
    }
    return spelling.kinds ? update : { statusUpdate: update }
  }
  const artifact = (artifactId: string, name: string, parts: ReadonlyArray<object>, appended: boolean, lastChunk: boolean) => {
    const update = {
      ...kindOf(spelling, "artifact-update"),
      taskId,
      contextId,
      artifact: { artifactId, name, parts },
      // ProtoJSON leaves a false bool out.
      ...(spelling.kinds || appended ? { append: appended } : {}),
      ...(spelling.kinds || lastChunk ? { lastChunk } : {})
    }
    return spelling.kinds ? update : { artifactUpdate: update }
  }
  switch (event._tag) {
    case "Status": {
      const text = event.state === "completed" ? event.response : event.message
      const message = text === undefined || text.length === 0 ? undefined : statusMessage(spelling, taskId, contextId, `${frame.id}`, text)
      return status(event.state, endsA2aStream(event.state, event.final), message)
    }
    case "Text":
      return artifact(`${taskId}-turn-${event.turn}`, "response", [spelling.text(event.text)], append, event.final)
    case "Thinking":
      return status("working", false, statusMessage(spelling, taskId, contextId, `${frame.id}`, event.text, { "murmur/kind": "thinking" }))
    case "Artifact":
      return artifact(event.artifactId, event.name, event.files === undefined ? [spelling.text(event.content)] : event.files.map(spelling.part), false, true)
  }
}

/**
 * A frame's A2A event as JSON, encoded once on the frame (per version and `append` variant) and
 * shared by every A2A stream that carries it; its timestamp is the time of that first encoding.
 */
const a2aEventJson = (frame: Frame, append: boolean, version: A2aVersion): string => {
  const wire = frame.wire ??= {}
  if (version === "1.0") {
    return append
      ? wire.a2a1AppendResult ??= JSON.stringify(a2aEvent(frame, true, v10))
      : wire.a2a1Result ??= JSON.stringify(a2aEvent(frame, false, v10))
  }
  return append
    ? wire.a2aAppendResult ??= JSON.stringify(a2aEvent(frame, true, v03))
    : wire.a2aResult ??= JSON.stringify(a2aEvent(frame, false, v03))
}

/**
 * One reader's events (a stream, a push config): each frame's event JSON, with `append` set for
 * every text chunk after the first of its turn this reader saw.
 */
export const a2aEvents = (version: A2aVersion) => {
  const opened = new Set<string>()
  const appends = (frame: Frame) => {
    const event = frame.event
    if (event._tag !== "Text") return false
    const artifactId = `${frame.taskId}-turn-${event.turn}`
    if (opened.has(artifactId)) return true
    opened.add(artifactId)
    return false
  }
  return (frame: Frame): string => a2aEventJson(frame, appends(frame), version)
}

/**
 * Per-stream encoder: the request's id, the version and binding, and which turn artifacts were
 * opened (for `append`). Over JSON-RPC each `data:` is a JSON-RPC response with the request's
 * id; over HTTP+JSON it is the bare `StreamResponse`.
 */
export const a2aEncoder = (call: { readonly id: RpcId; readonly version: A2aVersion; readonly binding: Binding }) => {
  const { version } = call
  const enveloped = call.binding === "JSONRPC"
  const prefix = enveloped ? `data: {"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":` : "data: "
  const suffix = enveloped ? "}\n\n" : "\n\n"
  const event = a2aEvents(version)
  const result = (value: unknown) => (enveloped ? encodeResult(call.id, value) : JSON.stringify(value))
  return {
    // The same bytes as `sseFrame` of the result: the data is one line of JSON.
    frame: (frame: Frame) => `id: ${frame.id}\n${prefix}${event(frame)}${suffix}`,
    task: (task: Task) => {
      const shaped = a2aTask(task, {}, version)
      return sseFrame({ data: result(version === "1.0" ? { task: shaped } : shaped) })
    },
    // A2A clients parse every `data:` as an event, so out-of-band notices are comments.
    gap: (firstAvailableId: number) => sseComment(`gap ${JSON.stringify({ first_available_id: firstAvailableId })}`),
    lagged: (missed: number) => sseComment(`lagged ${JSON.stringify({ missed })}`)
  }
}
