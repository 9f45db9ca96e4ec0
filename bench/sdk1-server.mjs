// Baseline for bench/door.mjs's A2A 1.0 rows: the official A2A server, `@a2a-js/sdk` 1.x (installed
// as the npm alias `@a2a-js/sdk-1`), built as its README shows: express + `jsonRpcHandler` +
// `restHandler` + `agentCardHandler` around one `DefaultRequestHandler` with an `InMemoryTaskStore`.
// The card declares JSONRPC and HTTP+JSON at protocol version 1.0 only (no v0.3 compat), so every
// request must carry `A2A-Version: 1.0`. JSON-RPC is served at `/`, HTTP+JSON beside it at the root
// (`POST /message:send`, `GET /tasks/{id}`), the door's layout: one small path switch in front picks
// the SDK's handler, so neither binding walks the other's middleware.
// The executor does what the door's `/complete` task does on the wire (and what bench/sdk-server.mjs's
// does for 0.3): it publishes the task, a working status, an artifact and the final completed status.
// A message whose text is `/forever` gets the task and a working status only, and stays working.
// Prints {"event":"listening","url":...,"known_task":...} like bench/sdk-server.mjs; the known task
// (for `GetTask`) is such a working `/forever` task sent through the handler before listening, as the
// door's known task is a running `/forever` task: both answer a task of the same shape and about the
// same size (status without message, one history entry, no artifact).
import { randomUUID } from "node:crypto"
import { AgentEvent, DefaultRequestHandler, defaultServerCallContextBuilder, InMemoryTaskStore } from "@a2a-js/sdk-1/server"
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk-1/server/express"
import express from "express"

// The SDK's enums (ProtoJSON names on the wire).
const TASK_STATE_SUBMITTED = 1
const TASK_STATE_WORKING = 2
const TASK_STATE_COMPLETED = 3
const ROLE_AGENT = 2

const port = Number(process.argv[2] ?? 0)
const card = {
  name: "bench-complete",
  description: "completes every task at once, like the door's /complete",
  // Filled in with the real port once listening; the handlers read only protocolBinding/protocolVersion.
  supportedInterfaces: [
    { url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" },
    { url: "http://127.0.0.1/", protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" }
  ],
  provider: undefined,
  version: "0.0.0",
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["text"],
  defaultOutputModes: ["text"],
  skills: [{ id: "complete", name: "Complete", description: "completes at once", tags: ["bench"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: []
}

const textPart = (text) => ({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" })
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() })

class CompleteExecutor {
  async execute(context, bus) {
    const { contextId, taskId, task, userMessage } = context
    if (!task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TASK_STATE_SUBMITTED, undefined), artifacts: [], history: [userMessage], metadata: undefined }))
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TASK_STATE_WORKING, undefined), metadata: undefined }))
    const text = userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("")
    if (text === "/forever") return
    bus.publish(AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: { artifactId: `${taskId}-response`, name: "response", description: "", parts: [textPart(text)], metadata: undefined, extensions: [] },
      append: false,
      lastChunk: true,
      metadata: undefined
    }))
    bus.publish(AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: status(TASK_STATE_COMPLETED, {
        messageId: randomUUID(),
        contextId,
        taskId,
        role: ROLE_AGENT,
        parts: [textPart(text)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: []
      }),
      metadata: undefined
    }))
    bus.finished()
  }
  cancelTask = async () => {}
}

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new CompleteExecutor())
const rpc = jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication })
const rest = restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication })
const app = express()
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: requestHandler }))
app.use((req, res, next) => (req.path === "/" ? rpc(req, res, next) : rest(req, res, next)))

// The known task: a `/forever` task, sent through the handler in the context an unauthenticated HTTP
// caller gets (the store scopes tasks by tenant and owner), read back until it is working.
const seedContext = defaultServerCallContextBuilder({ extensions: undefined, user: await UserBuilder.noAuthentication(), headers: {}, requestedVersion: "1.0" })
const known = await requestHandler.sendMessage({
  tenant: "",
  message: { messageId: "seed", contextId: "", taskId: "", role: 1, parts: [textPart("/forever")], metadata: undefined, extensions: [], referenceTaskIds: [] },
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true },
  metadata: undefined
}, seedContext)
for (let tries = 0; ; tries++) {
  const task = await requestHandler.getTask({ tenant: "", id: known.id, historyLength: undefined }, seedContext)
  if (task.status?.state === TASK_STATE_WORKING) break
  if (tries > 200) throw new Error(`seed task not working: ${JSON.stringify(task)}`)
  await new Promise((resolve) => setTimeout(resolve, 5))
}

const server = app.listen(port, "127.0.0.1", () => {
  const { port } = server.address()
  const url = `http://127.0.0.1:${port}/`
  for (const i of card.supportedInterfaces) i.url = url
  process.stdout.write(`${JSON.stringify({ event: "listening", url, known_task: known.id, sdk: "@a2a-js/sdk 1.x" })}\n`)
})
const stop = () => server.close(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
