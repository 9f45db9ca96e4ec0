/**
 * examples/ollama end to end through the CLI (`npm run build` first), with the fake provider in
 * place of Ollama: the example's manifest with only its endpoint and network rule pointed at
 * the fake. The OpenAI-compatible driver (through the inference gateway) drives a two-turn task
 * with a WASM tool and a shell call; a cancel during a slow provider response stops the task at
 * once and the provider sees no further request.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { buildGuest, shippedGuests } from "../../src/build/ShippedGuests.js"
import { exitEvent, runCli, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc, sleep } from "../lib/Door.js"
import { chunk, completion, type FakeProvider, startFakeProvider } from "../lib/FakeProvider.js"

const repo = resolve(new URL("../..", import.meta.url).pathname)
const cleanups: Array<() => Promise<void> | void> = []
let provider: FakeProvider

beforeAll(async () => {
  for (const guest of shippedGuests) await buildGuest(guest)
  provider = await startFakeProvider()
}, 300_000)
afterAll(() => provider.close())
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A copy of examples/ollama whose provider is the fake one (artifact sources made absolute). */
const exampleDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "ollama-example-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(join(repo, "examples/ollama/murmur.yaml"), join(dir, "murmur.yaml"))
  const yaml = readFileSync(join(dir, "murmur.yaml"), "utf8")
    .replace("http://localhost:11434/v1", provider.url)
    .replace("http://localhost:11434", `http://127.0.0.1:${provider.port}`)
    .replace(/^(\s+)source: /gm, `$1source: ${join(repo, "examples/ollama")}/`)
  writeFileSync(join(dir, "murmur.yaml"), yaml)
  return dir
}

describe("examples/ollama (fake provider)", () => {
  it("runs a two-turn task: WASM tool and shell call, then a streamed answer", async () => {
    provider.script([
      { kind: "json", body: completion({ toolCalls: [{ id: "c1", name: "greet", arguments: "{\"name\":\"Ada\"}" }, { id: "c2", name: "echo", arguments: "{\"command\":\"hi there\"}" }], finish: "tool_calls" }) },
      { kind: "stream", events: [chunk({ role: "assistant", content: "Greeted " }), chunk({ content: "Ada." }, "stop")] }
    ])
    const traceId = "0af7651916cd43dd8448eb211c80319c"
    const run = await runCli(["run", exampleDir(), "--task", "greet Ada", "--json"], { TRACEPARENT: `00-${traceId}-b7ad6b7169203331-01` })
    expect(run.code, run.stderr).toBe(0)
    const { workdir } = exitEvent(run)
    expect(readFileSync(join(workdir, "out", "result.txt"), "utf8")).toBe("Greeted Ada.")
    expect(provider.requests).toHaveLength(2)
    const [first, second] = provider.requests
    expect(first!.path).toBe("/v1/chat/completions")
    expect(first!.headers.authorization).toBeUndefined()
    // The gateway sets each turn's trace context: the caller's trace, one span per turn.
    const contexts = provider.requests.map((request) => String(request.headers.traceparent).split("-"))
    expect(contexts.map(([, trace]) => trace)).toEqual([traceId, traceId])
    expect(new Set(contexts.map(([, , span]) => span)).size).toBe(2)
    expect(first!.body).toMatchObject({ model: "qwen2.5:3b", stream: true })
    expect(first!.body.tools.map((tool: { function: { name: string } }) => tool.function.name).sort()).toEqual(["date", "echo", "greet"])
    const tools = second!.body.messages.filter((message: { role: string }) => message.role === "tool")
    expect(tools.map((message: { tool_call_id: string }) => message.tool_call_id)).toEqual(["c1", "c2"])
    expect(tools[0].content).toContain("Hello, Ada!")
    expect(tools[1].content).toContain("hi there")
  })

  it("a cancel during a slow provider response ends the task at once; the provider sees no further request", async () => {
    provider.script([{ kind: "json", body: completion({ text: "too late" }), delayMs: 20_000 }])
    const { listening } = await serveCli(exampleDir(), {}, cleanups)
    // No OTLP endpoint: nothing is exported, yet the caller's trace still reaches the provider.
    const traceId = "5d2f0a6e1c3b4a8d9e7f6a5b4c3d2e1f"
    const sent = await rpc(listening.url, "message/send", { message: referenceMessage("take your time"), configuration: { blocking: false } }, {
      headers: { traceparent: `00-${traceId}-a1b2c3d4e5f60718-01` }
    })
    const id = sent.body.result.id
    for (let i = 0; i < 400 && provider.requests.length === 0; i++) await sleep(25)
    expect(provider.requests).toHaveLength(1)
    expect(String(provider.requests[0]!.headers.traceparent).split("-")[1]).toBe(traceId)
    const cancel = await rpc(listening.url, "tasks/cancel", { id })
    expect(cancel.body.result).toMatchObject({ id, status: { state: "canceled" } })
    await sleep(1_000)
    expect(provider.requests).toHaveLength(1)
    expect((await rpc(listening.url, "tasks/get", { id })).body.result.status.state).toBe("canceled")
    const canceled = readFileSync(join(listening.records, "trace.jsonl"), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
      .find((line) => line.event_type === "task_canceled")
    expect(canceled).toMatchObject({ task_id: id, phase: "inference" })
  })
})
