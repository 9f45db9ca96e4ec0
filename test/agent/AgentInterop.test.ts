/**
 * The official `@a2a-js/sdk` 0.3.14 client against an agent capsule: `serve examples/hello`
 * (the shipped scripted driver, the greet WASM tool, `echo`) through the CLI (`npm run build`
 * first). What a real A2A client sees of a turn: per-turn `response` artifacts streamed with
 * `append`/`lastChunk`, one artifact per tool result, a final `completed` status.
 */
import type { Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { listeningCli } from "../lib/CapsuleDirs.js"

type StreamEvent = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

const hello = resolve(new URL("../../examples/hello", import.meta.url).pathname)
const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const message = (text: string): Message => ({ kind: "message", messageId: `agent-interop-${Date.now()}`, role: "user", parts: [{ kind: "text", text }] })
const textOf = (parts: ReadonlyArray<{ kind: string; text?: string }>) => parts.map((part) => part.text ?? "").join("")

describe("@a2a-js/sdk client against examples/hello", () => {
  it("streams a full agent turn the client can reassemble, and gets the same task back", async () => {
    // The example stays as shipped; its session lives in a temporary workdir.
    const workdir = mkdtempSync(join(tmpdir(), "agent-interop-"))
    cleanups.push(() => rmSync(workdir, { recursive: true, force: true }))
    const { listening } = await listeningCli(["serve", hello, "--json", "--workdir", workdir], {}, cleanups)
    const client = await new ClientFactory().createFromUrl(listening.url)
    const events: Array<StreamEvent> = []
    for await (const event of client.sendMessageStream({ message: message("Ada") })) events.push(event)

    expect(events[0]!.kind).toBe("task")
    const taskId = (events[0] as Task).id
    const last = events.at(-1) as TaskStatusUpdateEvent
    expect(last).toMatchObject({ kind: "status-update", taskId, final: true, status: { state: "completed" } })
    expect(events.filter((event) => event.kind === "status-update" && event.final)).toHaveLength(1)

    // Reassemble artifacts as a client does: `append` extends, otherwise replaces.
    const artifacts = new Map<string, { name: string | undefined; text: string; closed: boolean }>()
    for (const event of events) {
      if (event.kind !== "artifact-update") continue
      expect(event.taskId).toBe(taskId)
      const id = event.artifact.artifactId
      const before = artifacts.get(id)
      const text = textOf(event.artifact.parts as any)
      artifacts.set(id, { name: event.artifact.name, text: event.append === true && before !== undefined ? before.text + text : text, closed: event.lastChunk === true })
    }
    const responses = [...artifacts.values()].filter((artifact) => artifact.name === "response")
    expect(responses.map((artifact) => artifact.text)).toEqual([
      "Let me greet you with the greet tool and check the shell.",
      "Done: the greet tool greeted \"Ada\" from its sandbox and the shell echoed back. Both results are the artifacts of this task."
    ])
    expect(responses.every((artifact) => artifact.closed)).toBe(true)
    expect([...artifacts.values()].find((artifact) => artifact.name === "greet")?.text).toBe("Hello, Ada! (from the greet tool, a WebAssembly component)")
    expect([...artifacts.values()].find((artifact) => artifact.name === "echo")?.text).toContain("hello from the shell")

    const task = await client.getTask({ id: taskId })
    expect(task.status.state).toBe("completed")
    expect((task.artifacts ?? []).map((artifact) => artifact.name)).toEqual(["response", "greet", "echo", "response"])
  })
})
