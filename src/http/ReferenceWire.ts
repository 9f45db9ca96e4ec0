/**
 * The reference door's wire shapes (capsule-runtime 0.3): the task snapshot of its §5.4 and its
 * named SSE events (`status`, `text`, `thinking`, `artifact`, `gap`, `lagged`, `connection-ack`,
 * `capsule-closed`, `error`) with snake_case `context_id`. JSON is built with `JSON.stringify`,
 * never by interpolation (the reference's `error` frame was not escaped).
 */
import type { ResidueItem } from "../services/Residue.js"
import type { Task } from "../services/Task.js"
import type { Frame } from "../services/TaskEvent.js"
import { sseFrame } from "./Sse.js"

export const referenceTask = (task: Task, residue?: ReadonlyArray<ResidueItem>) => {
  const artifacts = task.state === "input-required" && task.prompt !== undefined
    ? [{ name: "prompt", parts: [{ text: task.prompt }] }]
    : residue !== undefined && residue.length > 0
    ? [{ name: "residue", parts: residue.map((item) => ({ text: JSON.stringify(item) })) }]
    : undefined
  return {
    id: task.id,
    contextId: task.contextId,
    status: { state: task.state },
    ...(artifacts === undefined ? {} : { artifacts })
  }
}

const frameData = (frame: Frame): { event: string; data: unknown } => {
  const event = frame.event
  switch (event._tag) {
    case "Status":
      return {
        event: "status",
        data: {
          id: frame.taskId,
          context_id: frame.contextId,
          status: {
            state: event.state,
            ...(event.message === undefined ? {} : { message: event.message }),
            ...(event.response === undefined ? {} : { response: event.response })
          },
          final: event.final
        }
      }
    case "Text":
      return { event: "text", data: { id: frame.taskId, text: event.text, final: event.final } }
    case "Thinking":
      return { event: "thinking", data: { id: frame.taskId, text: event.text, final: false } }
    case "Artifact":
      return { event: "artifact", data: { id: frame.taskId, artifact: { tool_name: event.name, content: event.content } } }
  }
}

/** A frame's SSE bytes: encoded once, on the frame, however many streams carry it. */
export const referenceFrame = (frame: Frame): Uint8Array => {
  const wire = frame.wire ??= {}
  if (wire.reference === undefined) {
    const { data, event } = frameData(frame)
    wire.reference = Buffer.from(sseFrame({ id: frame.id, event, data: JSON.stringify(data) }))
  }
  return wire.reference
}

export const referenceGap = (firstAvailableId: number) =>
  sseFrame({ event: "gap", data: JSON.stringify({ first_available_id: firstAvailableId }) })

export const referenceLagged = (missed: number) => sseFrame({ event: "lagged", data: JSON.stringify({ missed }) })

export const referenceAck = (conversationMode: string) =>
  sseFrame({ event: "connection-ack", data: JSON.stringify({ role: "observer", conversation_mode: conversationMode }) })

export const referenceClosed = sseFrame({ event: "capsule-closed", data: "{}" })

export const referenceError = (message: string) => sseFrame({ event: "error", data: JSON.stringify({ error: message }) })

/** The busy refusal written to the requesting `message/stream` connection only (never numbered). */
export const referenceRejected = (task: Task) => referenceSettled(task, "task rejected: capsule is busy")

/** A finished task as one final status frame (a rejected one, or a message sent again after its task ended). */
export const referenceSettled = (task: Task, fallback = "") =>
  sseFrame({
    event: "status",
    data: JSON.stringify({
      id: task.id,
      context_id: task.contextId,
      status: { state: task.state, message: task.statusMessage ?? fallback },
      final: true
    })
  })
