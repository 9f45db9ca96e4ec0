// Baseline for the SSE fan-out part of bench/door.mjs: a plain node:http server that speaks just
// enough of the door's protocol for the bench (`stream/watch`, `message/send` of
// `stamp <count> <everyMs> <batch>`, `tasks/get`) and fans frames out the cheapest obvious way:
// each frame is encoded once (reference SSE shape, the same bytes the door writes) and the same
// Buffer is written to every observer; each burst is written with the observers' sockets corked,
// so a burst is one write per observer. It keeps no replay buffer and does no lag accounting
// (Node buffers whatever an observer does not read), so it is a floor, not a door design.
// Emission paces like fanout-server.mjs's capsule: `batch` chunks, then a sleep of `everyMs`;
// each chunk's text is `process.hrtime.bigint()` taken right before it is encoded and written.
// Prints {"event":"listening","url":...} on stdout like `capsule-runtime serve --json`.
import { createServer } from "node:http"

const observers = new Set()
const tasks = new Map()
let nextId = 1
let taskSeq = 0

const sseFrame = (id, event, data) => Buffer.from(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
const publish = (bytes) => {
  for (const res of observers) res.write(bytes)
}
const corked = (fn) => {
  for (const res of observers) res.cork()
  fn()
  for (const res of observers) res.uncork()
}

const stamp = async (task, count, everyMs, batch) => {
  corked(() => publish(sseFrame(nextId++, "status", { id: task.id, context_id: task.contextId, status: { state: "working" }, final: false })))
  task.state = "working"
  for (let i = 0; i < count;) {
    corked(() => {
      for (let b = 0; b < batch && i < count; b++, i++) {
        publish(sseFrame(nextId++, "text", { id: task.id, text: `${process.hrtime.bigint()} `, final: false }))
      }
    })
    if (i < count && everyMs > 0) await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
  corked(() => {
    publish(sseFrame(nextId++, "text", { id: task.id, text: "", final: true }))
    publish(sseFrame(nextId++, "status", { id: task.id, context_id: task.contextId, status: { state: "completed", response: "" }, final: true }))
  })
  task.state = "completed"
}

const answer = (res, id, result) => {
  const body = JSON.stringify({ jsonrpc: "2.0", id, result })
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const server = createServer((req, res) => {
  let body = ""
  req.setEncoding("utf8")
  req.on("data", (chunk) => (body += chunk))
  req.on("end", () => {
    const { id, method, params } = JSON.parse(body)
    if (method === "stream/watch") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      res.write(`event: connection-ack\ndata: ${JSON.stringify({ role: "observer", conversation_mode: "stateless" })}\n\n`)
      observers.add(res)
      res.on("close", () => observers.delete(res))
      return
    }
    if (method === "message/send") {
      const [, n = "10", every = "10", batch = "1"] = params.message.parts[0].text.trim().split(/\s+/)
      const task = { id: `tsk_${++taskSeq}`, contextId: `ctx_${taskSeq}`, state: "submitted" }
      tasks.set(task.id, task)
      answer(res, id, { id: task.id, contextId: task.contextId, status: { state: "submitted" } })
      setImmediate(() => stamp(task, Number(n), Number(every), Math.max(1, Number(batch))))
      return
    }
    if (method === "tasks/get") {
      const task = tasks.get(params.id)
      answer(res, id, { id: params.id, contextId: task?.contextId, status: { state: task?.state ?? "unknown" } })
      return
    }
    answer(res, id, null)
  })
})
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ event: "listening", url: `http://127.0.0.1:${server.address().port}/` })}\n`)
})
process.on("SIGTERM", () => process.exit(0))
process.on("SIGINT", () => process.exit(0))
