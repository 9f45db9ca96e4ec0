/**
 * Helpers for tests that drive a door with the official `@a2a-js/sdk` 1.x client: its request
 * messages from ProtoJSON, and checks of what it hands back (tasks, parts, streams).
 */
import { type Message, SendMessageRequest, type StreamResponse, type Task } from "@a2a-js/sdk-1"
import { expect } from "vitest"

let counter = 0

export const send = (text: string, message: Record<string, unknown> = {}, configuration: Record<string, unknown> = {}): SendMessageRequest =>
  SendMessageRequest.fromJSON({
    message: { messageId: `sdk1-${Date.now()}-${counter++}`, role: "ROLE_USER", parts: [{ text }], ...message },
    configuration
  })

export const asTask = (result: Task | Message): Task => {
  expect("status" in result).toBe(true)
  return result as Task
}

export const textOf = (parts: ReadonlyArray<{ content?: { $case: string; value: unknown } | undefined }> | undefined) =>
  (parts ?? []).map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("")

export const statusText = (task: Task) => textOf(task.status?.message?.parts)
export const artifactText = (task: Task) => task.artifacts.map((artifact) => textOf(artifact.parts)).join("")

export const drain = async (events: AsyncGenerator<StreamResponse>): Promise<Array<StreamResponse>> => {
  const out: Array<StreamResponse> = []
  for await (const event of events) out.push(event)
  return out
}

/** A task stream: the Task first, then updates of that task only, the stream closed after the last. */
export const expectTaskStream = (events: ReadonlyArray<StreamResponse>) => {
  expect(events.length).toBeGreaterThanOrEqual(2)
  const first = events[0]!.payload
  expect(first?.$case).toBe("task")
  const taskId = (first!.value as Task).id
  for (const event of events.slice(1)) {
    expect(["statusUpdate", "artifactUpdate"]).toContain(event.payload?.$case)
    expect((event.payload!.value as { taskId: string }).taskId).toBe(taskId)
  }
  const last = events.at(-1)!.payload
  expect(last?.$case).toBe("statusUpdate")
  return { taskId, last: last!.value as { status: Task["status"] } }
}
