// Baseline for bench/door.mjs: a plain node:http server doing the door's parse-and-answer work
// for `message/send` and `tasks/get` (read the body, parse JSON, validate the JSON-RPC envelope
// and params, insert/look up the task in a Map, answer in the door's reference shapes). It runs
// no task: that is the work the door does on top, and it is counted against the door.
// Prints one JSON line {"event":"listening","url":...} like `capsule-runtime serve --json`.
import { randomFillSync } from "node:crypto"
import { createServer } from "node:http"

const random = new Uint8Array(10)
const uuidv7Simple = () => {
  randomFillSync(random)
  const time = Date.now().toString(16).padStart(12, "0").slice(-12)
  const hex = Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")
  const variant = ((parseInt(hex.slice(3, 4), 16) & 0x3) | 0x8).toString(16)
  return `${time}7${hex.slice(0, 3)}${variant}${hex.slice(4, 19)}`
}

const RETAIN = 1000
const tasks = new Map() // finished tasks, the oldest forgotten beyond RETAIN (as the door does)
const running = new Map() // never evicted (the door keeps live tasks)

const answer = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}
const error = (id, code, message, data) =>
  JSON.stringify({ jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } })
const result = (id, value) => JSON.stringify({ jsonrpc: "2.0", id, result: value })
const isId = (id) => id === null || typeof id === "string" || typeof id === "number"

const methods = {
  "message/send": (params) => {
    const message = params?.message
    if (typeof message !== "object" || message === null || !Array.isArray(message.parts) || typeof message.messageId !== "string") {
      return { error: [-32602, "Invalid params"] }
    }
    const text = message.parts.map((part) => (typeof part?.text === "string" ? part.text : "")).join("")
    const task = { id: `tsk_${uuidv7Simple()}`, contextId: `ctx_${uuidv7Simple()}`, status: { state: "submitted" }, text }
    tasks.set(task.id, task)
    if (tasks.size > RETAIN) tasks.delete(tasks.keys().next().value)
    return { result: { id: task.id, contextId: task.contextId, status: task.status } }
  },
  "tasks/get": (params) => {
    if (typeof params?.id !== "string") return { error: [-32602, "Invalid params"] }
    const task = tasks.get(params.id) ?? running.get(params.id)
    if (task === undefined) return { error: [-32001, "Task not found", { taskId: params.id }] }
    return { result: { id: task.id, contextId: task.contextId, status: task.status } }
  }
}

const server = createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/") return answer(res, 404, `{"error":"not_found"}`)
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return answer(res, 200, error(null, -32700, "Parse error"))
    }
    const id = isId(body?.id) ? body.id : null
    if (typeof body !== "object" || body === null || body.jsonrpc !== "2.0" || typeof body.method !== "string" || !isId(body.id ?? null)) {
      return answer(res, 200, error(id, -32600, "Invalid Request"))
    }
    const method = methods[body.method]
    if (method === undefined) return answer(res, 200, error(id, -32601, "Method not found"))
    const outcome = method(body.params)
    answer(res, 200, outcome.error ? error(id, ...outcome.error) : result(id, outcome.result))
  })
})

// A task the bench can `tasks/get` (the door's counterpart is a running "/forever" task).
const known = methods["message/send"]({ message: { messageId: "seed", role: "user", parts: [{ text: "/forever" }] } }).result
running.set(known.id, tasks.get(known.id))
tasks.delete(known.id)
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  const { port } = server.address()
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}/`, known_task: known.id })}\n`)
})
const stop = () => server.close(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
