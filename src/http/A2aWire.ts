/**
 * A2A 0.3 wire shapes: `Task` (with `kind`, `timestamp`, `history`, `artifactId`s) and the
 * streaming events `status-update` / `artifact-update`, each SSE `data` a JSON-RPC response
 * carrying the request's id. Text chunks of a turn are one artifact (`append` after the first
 * chunk, `lastChunk` at the end); thinking is a `working` status whose message is marked
 * `murmur/kind: thinking`; the final answer is an artifact plus the final status message.
 */
import type { ResidueItem } from "../services/Residue.js"
import type { Message, Task, TaskState } from "../services/Task.js"
import type { Frame } from "../services/TaskEvent.js"
import { encodeResult, type RpcId } from "./JsonRpc.js"
import { sseComment, sseFrame } from "./Sse.js"

export const a2aMessage = (message: Message) => ({
  kind: "message",
  role: message.role,
  messageId: message.messageId,
  parts: message.parts.map((part) => ({ kind: "text", text: part.text })),
  ...(message.taskId === undefined ? {} : { taskId: message.taskId }),
  ...(message.contextId === undefined ? {} : { contextId: message.contextId })
})

/** A status line as an agent message; `messageId` is unique per status (`tag` tells which). */
const statusMessage = (taskId: string, contextId: string, tag: string, text: string, metadata?: Record<string, string>) => ({
  kind: "message",
  role: "agent",
  messageId: `${taskId}-status-${tag}`,
  parts: [{ kind: "text", text }],
  taskId,
  contextId,
  ...(metadata === undefined ? {} : { metadata })
})

const statusText = (task: Task): string | undefined =>
  task.state === "completed" ? task.response : task.state === "input-required" ? task.prompt : task.statusMessage

export const a2aTask = (
  task: Task,
  options: { readonly historyLength?: number | undefined; readonly residue?: ReadonlyArray<ResidueItem> } = {}
) => {
  const text = statusText(task)
  const history = options.historyLength === undefined ? task.history : options.historyLength <= 0 ? [] : task.history.slice(-options.historyLength)
  const artifacts = task.artifacts.map((artifact) => ({
    artifactId: artifact.artifactId,
    name: artifact.name,
    parts: artifact.parts.map((part) => ({ kind: "text", text: part.text }))
  }))
  if (options.residue !== undefined && options.residue.length > 0) {
    artifacts.push({
      artifactId: `${task.id}-residue`,
      name: "residue",
      parts: options.residue.map((item) => ({ kind: "text", text: JSON.stringify(item) }))
    })
  }
  return {
    kind: "task",
    id: task.id,
    contextId: task.contextId,
    status: {
      state: task.state,
      timestamp: task.timestamp,
      ...(text === undefined || text.length === 0 ? {} : { message: statusMessage(task.id, task.contextId, `r${task.revision}`, text) })
    },
    ...(history.length === 0 ? {} : { history: history.map(a2aMessage) }),
    ...(artifacts.length === 0 ? {} : { artifacts }),
    metadata: { murmur: { origin: task.provenance.origin, trust: task.provenance.trust } }
  }
}

/** In A2A shapes a stream ends at a terminal state or when the task waits for input. */
export const endsA2aStream = (state: TaskState, final: boolean) => final || state === "input-required"

/** A frame's A2A event (the JSON-RPC `result`); `append` is the only per-stream part. */
const a2aEvent = (frame: Frame, append: boolean) => {
  const { contextId, event, taskId } = frame
  const timestamp = new Date().toISOString()
  switch (event._tag) {
    case "Status": {
      const text = event.state === "completed" ? event.response : event.message
      return {
        kind: "status-update",
        taskId,
        contextId,
        status: {
          state: event.state,
          timestamp,
          ...(text === undefined || text.length === 0 ? {} : { message: statusMessage(taskId, contextId, `${frame.id}`, text) })
        },
        final: endsA2aStream(event.state, event.final)
      }
    }
    case "Text":
      return {
        kind: "artifact-update",
        taskId,
        contextId,
        artifact: { artifactId: `${taskId}-turn-${event.turn}`, name: "response", parts: [{ kind: "text", text: event.text }] },
        append,
        lastChunk: event.final
      }
    case "Thinking":
      return {
        kind: "status-update",
        taskId,
        contextId,
        status: {
          state: "working",
          timestamp,
          message: statusMessage(taskId, contextId, `${frame.id}`, event.text, { "murmur/kind": "thinking" })
        },
        final: false
      }
    case "Artifact":
      return {
        kind: "artifact-update",
        taskId,
        contextId,
        artifact: { artifactId: event.artifactId, name: event.name, parts: [{ kind: "text", text: event.content }] },
        append: false,
        lastChunk: true
      }
  }
}

/**
 * A frame's A2A event as JSON, encoded once on the frame (per `append` variant) and shared by
 * every A2A stream that carries it; its timestamp is the time of that first encoding.
 */
const a2aEventJson = (frame: Frame, append: boolean): string => {
  const wire = frame.wire ??= {}
  return append
    ? wire.a2aAppendResult ??= JSON.stringify(a2aEvent(frame, true))
    : wire.a2aResult ??= JSON.stringify(a2aEvent(frame, false))
}

/** Per-stream encoder: the request's id, and which turn artifacts were opened (for `append`). */
export const a2aEncoder = (requestId: RpcId) => {
  const opened = new Set<string>()
  const id = JSON.stringify(requestId)
  const appends = (frame: Frame) => {
    const event = frame.event
    if (event._tag !== "Text") return false
    const artifactId = `${frame.taskId}-turn-${event.turn}`
    if (opened.has(artifactId)) return true
    opened.add(artifactId)
    return false
  }
  return {
    // The same bytes as `sseFrame` of `encodeResult`: the data is one line of JSON.
    frame: (frame: Frame) => `id: ${frame.id}\ndata: {"jsonrpc":"2.0","id":${id},"result":${a2aEventJson(frame, appends(frame))}}\n\n`,
    task: (task: Task) => sseFrame({ data: encodeResult(requestId, a2aTask(task)) }),
    // A2A clients parse every `data:` as a JSON-RPC response, so out-of-band notices are comments.
    gap: (firstAvailableId: number) => sseComment(`gap ${JSON.stringify({ first_available_id: firstAvailableId })}`),
    lagged: (missed: number) => sseComment(`lagged ${JSON.stringify({ missed })}`)
  }
}
