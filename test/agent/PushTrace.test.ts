/**
 * Push deliveries are recorded in an agent session's trace: `serve <agent dir> --push-allow
 * 127.0.0.1` (the CLI; `npm run build` first), a task with an inline push config to a local
 * receiver, and one `push_delivery` line per update in `trace.jsonl`, naming the host only.
 */
import { createServer } from "node:http"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { listeningCli, makeAgentCapsuleDir, until } from "../lib/CapsuleDirs.js"
import { rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe("push deliveries in the trace", () => {
  it("one push_delivery line per update, delivered, with the host and not the token", async () => {
    let received = 0
    const server = createServer((request, response) => {
      request.resume()
      request.on("end", () => {
        received++
        response.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
    const port = (server.address() as { port: number }).port
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [{ stop_reason: "end_turn", content: [{ type: "text", text: "done" }] }] } })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const served = await listeningCli(["serve", dir, "--json", "--push-allow", "127.0.0.1"], {}, cleanups)
    const reply = await rpc(served.listening.url, "SendMessage", {
      message: { messageId: "push-trace-1", role: "ROLE_USER", parts: [{ text: "hi" }] },
      configuration: { taskPushNotificationConfig: { url: `http://127.0.0.1:${port}/hook?secret=q`, token: "tok-never-traced" } }
    })
    const task = reply.body.result.task
    expect(task.status.state).toBe("TASK_STATE_COMPLETED")
    const lines = () =>
      readFileSync(join(served.listening.records, "trace.jsonl"), "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))
    await until(() => lines().filter((line) => line.event_type === "push_delivery").length >= received && received >= 2, "push deliveries traced")
    const pushes = lines().filter((line) => line.event_type === "push_delivery")
    for (const line of pushes) {
      expect(line).toMatchObject({ task_id: task.id, host: `127.0.0.1:${port}`, outcome: "delivered", attempts: 1, status: 204 })
    }
    const text = readFileSync(join(served.listening.records, "trace.jsonl"), "utf8")
    expect(text).not.toContain("tok-never-traced")
    expect(text).not.toContain("secret=q")
  }, 60_000)
})
