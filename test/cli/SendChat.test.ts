/**
 * `send` and `chat` against a real `serve` child (the embedded scripted capsule on port 0;
 * `npm run build` first): send's exit status is the task's state, named on stderr; chat driven
 * through a stdin pipe answers an input-required prompt, cancels with `/cancel` and keeps its
 * lines in order; a turn whose connection drops mid-stream goes on with `Last-Event-ID` through
 * `stream/watch`, no chunk shown twice or missed.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sendTurn } from "../../src/cli/Send.js"
import { listeningCli, runCli, type ServeProcess } from "../lib/CapsuleDirs.js"
import { startCuttingProxy } from "../lib/CuttingProxy.js"
import { chat } from "../../src/cli/Chat.js"

const cleanups: Array<() => Promise<void> | void> = []
let served: ServeProcess

beforeAll(async () => {
  served = await listeningCli(["serve", "--json"], {}, cleanups)
})
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** `node dist/main.js chat <url>` with these stdin lines (then EOF). */
const chatCli = (url: string, lines: ReadonlyArray<string>) => runCli(["chat", url], {}, 20_000, lines.map((line) => `${line}\n`).join(""))

const statusLines = (stdout: string) => stdout.split("\n").filter((line) => /^\[tsk_…[0-9a-f]{8}\] (working|completed|failed|canceled|input-required)/.test(line)).map((line) => line.replace(/^\[tsk_…[0-9a-f]{8}\] /, ""))

describe("send <url> <text>", () => {
  it("prints the streamed answer and exits 0 when the task completed", async () => {
    const run = await runCli(["send", served.listening.url, "/stream 3 20"])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/\[tsk_…[0-9a-f]{8}\] chunk 1 chunk 2 chunk 3 \n/)
    expect(statusLines(run.stdout)).toEqual(["working", "completed: streamed 3 chunks"])
  })

  it("exits 1 for a failed task and 3 for one waiting for input, naming the state and its message on stderr", async () => {
    const failed = await runCli(["send", served.listening.url, "/fail the disk is full"])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toContain("failed: the disk is full")
    expect(failed.stderr).toMatch(/^send: task tsk_[0-9a-f]+ ended failed: the disk is full\n$/)
    const waiting = await runCli(["send", served.listening.url, "/ask which one?"])
    expect(waiting.code).toBe(3)
    expect(waiting.stderr).toMatch(/ended input-required: which one\?\n$/)
  })

  it("a bad URL or an unreachable door is one line and exit 1", async () => {
    const bad = await runCli(["send", "ftp://x", "hi"])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe("send: not a door URL: ftp://x (expected http://host:port/ or host:port)\n")
    const gone = await runCli(["send", "127.0.0.1:1", "hi"])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/^send: cannot reach http:\/\/127\.0\.0\.1:1\/ .*\n$/)
  })
})

describe("chat <url>", () => {
  it("through a pipe: answers the prompt, /cancel cancels the running task, lines keep their order", async () => {
    const run = await chatCli(served.listening.url, ["hi", "/done bye", "/sleep 20000", "/cancel", "/ask what now?", "this", "/quit", "never sent"])
    expect(run.code, run.stderr).toBe(0)
    expect(statusLines(run.stdout)).toEqual([
      "working",
      "input-required: Say more, or /done to finish.",
      "working: resumed",
      "completed: bye",
      "working",
      "canceled: task canceled",
      "working",
      "input-required: what now?",
      "working: resumed",
      "completed: you said: this"
    ])
    expect(run.stdout).toContain("echo: hi")
    expect(run.stdout).not.toContain("never sent")
    expect(run.stderr).toMatch(/cancel: task tsk_[0-9a-f]+ is canceled/)
  })

  it("a connection dropped mid-turn resumes with Last-Event-ID: every chunk once, the turn completes", async () => {
    const proxy = await startCuttingProxy(served.listening.url, "chunk 3", cleanups)
    const seen = { out: "", notices: [] as Array<string> }
    await Effect.runPromise(
      chat(proxy.url, {
        lines: Stream.make("/stream 6 40"),
        out: (text) => Effect.sync(() => void (seen.out += text)),
        notice: (line) => Effect.sync(() => void seen.notices.push(line))
      }).pipe(Effect.provide(NodeHttpClient.layer))
    )
    expect(proxy.requests).toHaveLength(2)
    expect(proxy.requests[0]).toContain("message/stream")
    expect(proxy.requests[1]).toContain("stream/watch")
    expect(proxy.requests[1]).toMatch(/last-event-id: \d+/i)
    const chunks = seen.out.match(/chunk \d/g)
    expect(chunks).toEqual(["chunk 1", "chunk 2", "chunk 3", "chunk 4", "chunk 5", "chunk 6"])
    expect(seen.out).toContain("completed: streamed 6 chunks")
    expect(seen.notices.some((line) => line.startsWith("connection to") && line.includes("following task"))).toBe(true)
  })

  it("sendTurn refuses what is not a door with a clear message", async () => {
    const exit = await Effect.runPromiseExit(
      sendTurn("http://127.0.0.1:1/", "hi", { out: () => Effect.void, notice: () => Effect.void }).pipe(Effect.provide(NodeHttpClient.layer))
    )
    expect(exit._tag).toBe("Failure")
    expect(JSON.stringify(exit)).toContain("cannot reach http://127.0.0.1:1/")
  })
})
