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
// `--store sqlite:<path>` (bench/door.mjs's `store` part): the SDK's own SQLite task store instead,
// `DatabaseTaskStore` from `@a2a-js/sdk/server/database` on Kysely's `SqliteDialect`, set up as the
// SDK's docs/persistent-stores.md shows, its table made by the SDK's own migrations (the `a2a-db`
// CLI's offline rendering, `upgrade --sql --dialect sqlite`, the route those docs give for D1;
// online `a2a-db` would need better-sqlite3). The driver is `libsql`, the door's: better-sqlite3's
// API (all Kysely's dialect uses), its binaries in npm packages, where better-sqlite3 downloads
// them from GitHub or compiles. The file is opened as the door opens its own (WAL,
// `synchronous = NORMAL`), so both pay the same durability; `--sqlite-pragmas default` leaves
// SQLite's defaults (rollback journal, `synchronous = FULL`), what the SDK's docs set up.
// `--count-sql <file>`: counts what reaches SQLite (bench/sql-count.mjs; bench/store-count.mjs reads it).
// usage: node bench/sdk1-server.mjs [port] [--store memory|sqlite:<path>] [--sqlite-pragmas wal|default] [--count-sql <file>]
import { spawnSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { AgentEvent, DefaultRequestHandler, defaultServerCallContextBuilder, InMemoryTaskStore } from "@a2a-js/sdk-1/server"
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk-1/server/express"
import express from "express"
import { countSql } from "./sql-count.mjs"

const { positionals, values: flags } = parseArgs({
  allowPositionals: true,
  options: { store: { type: "string", default: "memory" }, "sqlite-pragmas": { type: "string", default: "wal" }, "count-sql": { type: "string" } }
})
if (flags["count-sql"] !== undefined) countSql(flags["count-sql"])

// The SDK's enums (ProtoJSON names on the wire).
const TASK_STATE_SUBMITTED = 1
const TASK_STATE_WORKING = 2
const TASK_STATE_COMPLETED = 3
const ROLE_AGENT = 2

const port = Number(positionals[0] ?? 0)
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

/** The SDK's SQLite task store over a fresh (or already migrated) file. */
const sqliteTaskStore = async (path) => {
  const { Kysely, SqliteDialect } = await import("kysely")
  const { DatabaseTaskStore } = await import("@a2a-js/sdk-1/server/database")
  const Database = createRequire(import.meta.url)("libsql")
  const cli = fileURLToPath(new URL("../cli/a2a_db.js", import.meta.resolve("@a2a-js/sdk-1/server")))
  const rendered = spawnSync(process.execPath, [cli, "upgrade", "--sql", "--dialect", "sqlite", "--store", "tasks"], { encoding: "utf8" })
  if (rendered.status !== 0) throw new Error(`a2a-db upgrade --sql failed: ${rendered.stderr}`)
  const sqlite = new Database(path)
  if (flags["sqlite-pragmas"] === "wal") {
    sqlite.pragma("journal_mode = WAL")
    sqlite.pragma("synchronous = NORMAL")
  } else if (flags["sqlite-pragmas"] !== "default") throw new Error(`--sqlite-pragmas: wal or default, not ${flags["sqlite-pragmas"]}`)
  const migrated = sqlite.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'a2a_tasks_migrations'").get().n > 0
  if (!migrated) sqlite.exec(rendered.stdout)
  return new DatabaseTaskStore(new Kysely({ dialect: new SqliteDialect({ database: sqlite }) }))
}

const taskStore = flags.store === "memory"
  ? new InMemoryTaskStore()
  : flags.store.startsWith("sqlite:")
  ? await sqliteTaskStore(flags.store.slice("sqlite:".length))
  : (() => {
    throw new Error(`--store: memory or sqlite:<path>, not ${flags.store}`)
  })()
const requestHandler = new DefaultRequestHandler(card, taskStore, new CompleteExecutor())
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
  process.stdout.write(`${JSON.stringify({ event: "listening", url, known_task: known.id, sdk: "@a2a-js/sdk 1.x", store: flags.store })}\n`)
})
const stop = () => server.close(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
