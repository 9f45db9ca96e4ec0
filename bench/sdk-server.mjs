// Baseline for bench/door.mjs: the official A2A server, `@a2a-js/sdk` 0.3.14, built as its README
// shows (express + `jsonRpcHandler` + `DefaultRequestHandler` + `InMemoryTaskStore`), with an
// executor that does what the door's `/complete` task does on the wire: it publishes the task, a
// `working` status, an artifact and the final `completed` status. JSON-RPC is served at `/`.
// Prints {"event":"listening","url":...,"known_task":...} like bench/raw-server.mjs; the known task
// (for `tasks/get`) is one completed task sent through the handler before listening.
import { randomUUID } from "node:crypto"
import { AGENT_CARD_PATH } from "@a2a-js/sdk"
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server"
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express"
import express from "express"

const card = {
  name: "bench-complete",
  description: "completes every task at once, like the door's /complete",
  protocolVersion: "0.3.0",
  version: "0.0.0",
  url: "http://127.0.0.1/",
  skills: [{ id: "complete", name: "Complete", description: "completes at once", tags: ["bench"] }],
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ["text"],
  defaultOutputModes: ["text"]
}

class CompleteExecutor {
  async execute(context, bus) {
    const { contextId, taskId, task, userMessage } = context
    if (!task) {
      bus.publish({ kind: "task", id: taskId, contextId, status: { state: "submitted", timestamp: new Date().toISOString() }, history: [userMessage] })
    }
    bus.publish({ kind: "status-update", taskId, contextId, status: { state: "working", timestamp: new Date().toISOString() }, final: false })
    const text = userMessage.parts.map((part) => (part.kind === "text" ? part.text : "")).join("")
    bus.publish({
      kind: "artifact-update",
      taskId,
      contextId,
      artifact: { artifactId: `${taskId}-response`, name: "response", parts: [{ kind: "text", text }] }
    })
    bus.publish({
      kind: "status-update",
      taskId,
      contextId,
      status: {
        state: "completed",
        timestamp: new Date().toISOString(),
        message: { kind: "message", role: "agent", messageId: randomUUID(), parts: [{ kind: "text", text }], taskId, contextId }
      },
      final: true
    })
    bus.finished()
  }
  cancelTask = async () => {}
}

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new CompleteExecutor())
const app = express()
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }))
app.use("/", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }))

const known = await requestHandler.sendMessage({
  message: { kind: "message", messageId: "seed", role: "user", parts: [{ kind: "text", text: "hi" }] },
  configuration: { blocking: true }
})
const server = app.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  const { port } = server.address()
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}/`, known_task: known.id })}\n`)
})
const stop = () => server.close(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
