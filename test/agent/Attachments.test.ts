/**
 * File and data parts reach an agent capsule as files: `serve <agent dir>` (the CLI, `npm run
 * build` first) takes a message with a data part, a file by bytes and a file by URL, writes them
 * under `inputs/` in the workdir and names them in `task.md` and the first turn; a URL outside
 * `network.allow`, or one that redirects, fails the task with the reason and leaves no file.
 */
import { createServer, type Server } from "node:http"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { makeAgentCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A local file server: `/report.txt` answers text, `/moved` redirects to it. */
const fileServer = async () => {
  const server: Server = createServer((request, response) => {
    if (request.url === "/report.txt") return response.writeHead(200, { "content-type": "text/plain" }).end("quarterly numbers\n")
    if (request.url === "/moved") return response.writeHead(302, { location: "/report.txt" }).end()
    response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `127.0.0.1:${(server.address() as { port: number }).port}`
}

const serveAgent = async (allowed: string) => {
  const dir = await makeAgentCapsuleDir({
    driverConfig: { replies: [{ stop_reason: "end_turn", content: [{ type: "text", text: "read them" }] }] },
    capabilities: `  network:\n    allow: ["${allowed}"]\n`
  })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return serveCli(dir, {}, cleanups)
}

let counter = 0
const message1 = (parts: ReadonlyArray<unknown>) => ({ messageId: `att-${counter++}`, role: "ROLE_USER", parts })

describe("attachments of an agent task", () => {
  it("land under inputs/ and are named in task.md and the first turn; the task keeps them in its history", async () => {
    const host = await fileServer()
    const served = await serveAgent(host)
    const { url, workdir } = served.listening
    const reply = await rpc(url, "SendMessage", {
      message: message1([
        { text: "summarise the attachments" },
        { data: { region: "north", total: 12 }, mediaType: "application/json" },
        { raw: Buffer.from("a,b\n1,2\n").toString("base64"), filename: "../../table.csv", mediaType: "text/csv" },
        { url: `http://${host}/report.txt`, filename: "report.txt" }
      ])
    }, { headers: { "a2a-version": "1.0" } })
    const task = reply.body.result?.task
    expect(task?.status.state, JSON.stringify(reply.body)).toBe("TASK_STATE_COMPLETED")
    expect(readFileSync(join(workdir, "inputs", "data-1.json"), "utf8")).toBe(`{\n  "region": "north",\n  "total": 12\n}\n`)
    // The name is a hint: only its sanitised basename is used.
    expect(readFileSync(join(workdir, "inputs", "table.csv"), "utf8")).toBe("a,b\n1,2\n")
    expect(readFileSync(join(workdir, "inputs", "report.txt"), "utf8")).toBe("quarterly numbers\n")
    const taskMd = readFileSync(join(workdir, "task.md"), "utf8")
    expect(taskMd).toContain("summarise the attachments")
    expect(taskMd).toContain("- inputs/data-1.json (application/json, ")
    expect(taskMd).toContain("- inputs/table.csv (text/csv, 8 bytes)")
    expect(taskMd).toContain(`- inputs/report.txt (18 bytes, from http://${host}/report.txt)`)
    const request = JSON.parse(readFileSync(join(workdir, "driver-request-1.json"), "utf8"))
    expect(JSON.stringify(request.messages[0])).toContain("inputs/table.csv")
    expect(task.history[0].parts.slice(1)).toEqual([
      { data: { region: "north", total: 12 }, mediaType: "application/json" },
      { raw: Buffer.from("a,b\n1,2\n").toString("base64"), filename: "../../table.csv", mediaType: "text/csv" },
      { url: `http://${host}/report.txt`, filename: "report.txt" }
    ])
  }, 60_000)

  it("a URL outside network.allow, or one that redirects, fails the task with the reason and writes nothing", async () => {
    const host = await fileServer()
    const served = await serveAgent(host)
    const { url, workdir } = served.listening
    const outside = await rpc(url, "message/send", {
      message: { kind: "message", messageId: `att-${counter++}`, role: "user", parts: [{ kind: "text", text: "x" }, { kind: "file", file: { uri: "http://127.0.0.2:9/secret" } }] },
      configuration: { blocking: true }
    })
    expect(outside.body.result.status.state).toBe("failed")
    expect(outside.body.result.status.message.parts[0].text).toMatch(/attachment refused: network policy: 'http:\/\/127\.0\.0\.2:9\/secret' not in capabilities\.network\.allow/)
    const moved = await rpc(url, "message/send", {
      message: { kind: "message", messageId: `att-${counter++}`, role: "user", parts: [{ kind: "text", text: "x" }, { kind: "file", file: { uri: `http://${host}/moved`, name: "moved.txt" } }] },
      configuration: { blocking: true }
    })
    expect(moved.body.result.status.state).toBe("failed")
    expect(moved.body.result.status.message.parts[0].text).toMatch(/answered a redirect \(302\)/)
    expect(existsSync(join(workdir, "inputs", "moved.txt"))).toBe(false)
  }, 60_000)
})
