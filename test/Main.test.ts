/**
 * The service as users run it: `node dist/main.js serve` (built by `npm test` before vitest).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { createInterface } from "node:readline"
import { afterEach, describe, expect, it } from "vitest"
import { a2aMessage, collect, openStream, rpc, sleep, waitForState } from "./lib/Door.js"

const main = new URL("../dist/main.js", import.meta.url).pathname

interface Started {
  readonly child: ChildProcess
  readonly listening: { event: string; url: string; session_id: string }
  readonly stdoutLines: Array<string>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>
}

const start = async (args: ReadonlyArray<string>): Promise<Started> => {
  expect(existsSync(main), "dist/main.js is built by `npm test` (npm run build)").toBe(true)
  const child = spawn(process.execPath, [main, "serve", "--json", ...args], { stdio: ["ignore", "pipe", "pipe"] })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, at: Date.now() }))
  )
  const stdoutLines: Array<string> = []
  const lines = createInterface({ input: child.stdout! })
  const first = new Promise<string>((resolve, reject) => {
    lines.on("line", (line) => {
      stdoutLines.push(line)
      if (stdoutLines.length === 1) resolve(line)
    })
    child.on("exit", () => reject(new Error("exited before listening")))
  })
  const listening = JSON.parse(await first)
  return { child, listening, stdoutLines, exited }
}

describe("node dist/main.js serve", () => {
  let running: Started | undefined
  afterEach(() => {
    running?.child.kill("SIGKILL")
    running = undefined
  })

  it("prints exactly one listening line and serves the embedded default", async () => {
    running = await start([])
    const { listening } = running
    expect(listening.event).toBe("listening")
    expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    expect(listening.session_id).toMatch(/^ses_[0-9a-f]{32}$/)
    const card: any = await (await fetch(`${listening.url}.well-known/agent-card.json`)).json()
    expect(card.session_id).toBe(listening.session_id)
    const sent = await rpc(listening.url, "message/send", { message: a2aMessage("/complete hi"), configuration: { blocking: true } })
    expect(sent.body.result.status.state).toBe("completed")
    expect(running.stdoutLines).toHaveLength(1)
  })

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal}: cancels live tasks, sends capsule-closed to observers, exits 0 within 5 s`, async () => {
      running = await start(["--max-active", "2"])
      const { url } = running.listening
      const watch = await openStream(url, "stream/watch")
      const sent = await rpc(url, "message/send", { message: a2aMessage("/forever"), configuration: { blocking: false } })
      const taskId = sent.body.result.id
      await waitForState(url, taskId, ["working"])
      const sentAt = Date.now()
      running.child.kill(signal)
      const frames = await collect(watch.events, (event) => event.event === "capsule-closed")
      const exit = await running.exited
      expect(exit.code).toBe(0)
      expect(exit.at - sentAt).toBeLessThan(5_000)
      expect(frames.at(-1)?.event).toBe("capsule-closed")
      const canceled = frames.find((event) => event.event === "status" && JSON.parse(event.data!).status.state === "canceled")
      expect(JSON.parse(canceled!.data!)).toMatchObject({ id: taskId, status: { state: "canceled", message: "task canceled" }, final: true })
      expect(running.stdoutLines).toHaveLength(1)
    })
  }

  it("a port already in use is a clear failure with exit 1, not a crash", async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
    const { port } = blocker.address() as AddressInfo
    const child = spawn(process.execPath, [main, "serve", "--port", String(port), "--json"], { stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve))
    blocker.close()
    expect(code).toBe(1)
    const event = JSON.parse(stdout.trim().split("\n").at(-1)!)
    expect(event).toMatchObject({ event: "exit", status: "failed", error: { code: "E-RUN-010" } })
    expect(event.error.message).toContain(`127.0.0.1:${port}`)
  })

  it("refuses a bad option with a usage error and a non-zero exit", async () => {
    const child = spawn(process.execPath, [main, "serve", "--task-acceptance", "sometimes"], { stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    child.stdout!.on("data", (chunk) => (stderr += chunk))
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve))
    expect(code).not.toBe(0)
    expect(stderr).toMatch(/none, single, queue/)
    await sleep(0)
  })
})
