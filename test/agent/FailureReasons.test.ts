/**
 * Why a task failed, as the person who sent it sees it (`npm run build` first): the OpenAI driver
 * behind the inference gateway against a provider that refuses connections, served by a real
 * `serve` child — the failed status (tasks/get and `watch`) names the configured endpoint, never
 * the gateway placeholder or the key; a provider the network grant does not cover — the failure
 * names the key to change. The rewriting itself is checked on plain text first.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Fiber } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { explainFailure, failedMessage, type ReasonContext } from "../../src/agent/FailureReason.js"
import { buildGuest, shippedGuest } from "../../src/build/ShippedGuests.js"
import { watch } from "../../src/cli/Watch.js"
import { exitEvent, runCli, serveCli } from "../lib/CapsuleDirs.js"
import { a2aMessage, rpc, waitForState } from "../lib/Door.js"

const repo = resolve(new URL("../..", import.meta.url).pathname)
const cleanups: Array<() => Promise<void> | void> = []
const KEY = "sk-test-0123456789abcdef"

beforeAll(() => buildGuest(shippedGuest("drivers/openai")), 300_000)
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A port nothing listens on (bound, then closed). */
const closedPort = () =>
  new Promise<number>((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => done(port))
    })
  })

/** An agent capsule driven by drivers/openai with this endpoint and network allow list. */
const openAiCapsule = (endpoint: string, allow: ReadonlyArray<string>) => {
  const dir = mkdtempSync(join(tmpdir(), "failure-reason-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(
    join(dir, "murmur.yaml"),
    [
      "name: reasons",
      "version: 0.1.0",
      "artifacts:",
      "  - name: openai",
      "    runtime: driver",
      `    source: ${join(repo, "drivers/openai")}`,
      "    local_source: true",
      "capabilities:",
      "  network:",
      `    allow: ${JSON.stringify(allow)}`,
      "inference:",
      `  endpoint: ${endpoint}`,
      "  model: m",
      "  api_key: ${REASONS_KEY}",
      "  driver:",
      "    artifact: openai",
      ""
    ].join("\n")
  )
  return dir
}

const context: ReasonContext = {
  endpoint: "https://user:pw@api.example.com/v1",
  secrets: [KEY, `Bearer ${KEY}`],
  ceiling: [],
  driverNarrows: undefined
}

describe("explainFailure", () => {
  it("names the endpoint's origin for the gateway, without userinfo; leaves other loopback ports alone", () => {
    expect(explainFailure("error: request to http://127.0.0.1:9/v1/chat/completions failed: connection-refused", context))
      .toBe(
        "error: request to https://api.example.com/v1/chat/completions failed: connection-refused; is the model server running at https://api.example.com/v1 " +
          "(inference.endpoint)? a local server (Ollama, vLLM, llama.cpp) must be started first"
      )
    expect(explainFailure("request to http://127.0.0.1:9000/x failed", context)).toBe("request to http://127.0.0.1:9000/x failed")
  })

  it("turns a denial into the key to change; the driver's own entry when the capsule ceiling covers the host", () => {
    const denied = "request to https://api.example.com/v1/chat/completions was denied by the network grant (HTTP-request-denied); allow its host in capabilities.network.allow"
    expect(explainFailure(denied, context)).toBe(
      "request to https://api.example.com/v1/chat/completions was denied: capabilities.network.allow does not cover api.example.com:443; add it to capabilities.network.allow"
    )
    const narrowed = { ...context, ceiling: [{ host: "api.example.com" }], driverNarrows: "openai" }
    expect(explainFailure(denied, narrowed)).toContain("artifacts[openai].capabilities.network.allow does not cover api.example.com:443")
  })

  it("redacts the key and any quoted auth header", () => {
    const out = explainFailure(`401 for key ${KEY}; sent Authorization: Bearer abc.def and {"x-api-key":"zzz"}`, context)
    expect(out).not.toContain(KEY)
    expect(out).not.toContain("abc.def")
    expect(out).not.toContain("zzz")
    expect(out).toContain("Authorization: [redacted]")
  })

  it("the status is the reference's words, then the reason", () => {
    expect(failedMessage("session ended", "error: provider exploded")).toBe("session ended: provider exploded")
    expect(failedMessage("session ended", "error: ")).toBe("session ended")
  })
})

describe("a failed task says why", () => {
  it("a provider that refuses connections: tasks/get and watch name the configured endpoint, not the gateway, not the key", async () => {
    const port = await closedPort()
    const endpoint = `http://127.0.0.1:${port}/v1`
    const { listening } = await serveCli(openAiCapsule(endpoint, [`http://127.0.0.1:${port}`]), { REASONS_KEY: KEY }, cleanups)
    const seen = { out: "" }
    const watcher = Effect.runFork(
      watch(listening.url, { json: false, out: (text) => Effect.sync(() => void (seen.out += text)), notice: () => Effect.void }).pipe(
        Effect.provide(NodeHttpClient.layer)
      )
    )
    cleanups.push(() => Effect.runPromise(Fiber.interrupt(watcher)).then(() => undefined))
    const reply = await rpc(listening.url, "message/send", { message: a2aMessage("hello") })
    const expected = `session ended: request to ${endpoint}/chat/completions failed: connection-refused; is the model server running at ${endpoint} ` +
      "(inference.endpoint)? a local server (Ollama, vLLM, llama.cpp) must be started first"
    await waitForState(listening.url, reply.body.result.id, ["failed"], 20_000)
    const got = await rpc(listening.url, "tasks/get", { id: reply.body.result.id })
    expect(got.body.result.status).toMatchObject({ state: "failed", message: { parts: [{ text: expected }] } })
    for (let i = 0; i < 100 && !seen.out.includes("failed:"); i++) await new Promise((done) => setTimeout(done, 20))
    expect(seen.out).toContain(`failed: ${expected}`)
    const everything = JSON.stringify(got.body) + seen.out
    expect(everything).not.toContain("127.0.0.1:9/")
    expect(everything).not.toContain(KEY)
  })

  it("a provider the network grant does not cover: the failure names capabilities.network.allow and the host:port to add", async () => {
    const run = await runCli(["run", openAiCapsule("http://127.0.0.1:4999/v1", ["http://localhost:1"]), "--task", "hi", "--json"], { REASONS_KEY: KEY })
    expect(run.code, run.stderr).toBe(1)
    const exit = exitEvent(run)
    expect(exit.state).toBe("failed")
    expect(exit.message).toBe(
      "session ended: request to http://127.0.0.1:4999/v1/chat/completions was denied: capabilities.network.allow does not cover 127.0.0.1:4999; add it to capabilities.network.allow"
    )
    expect(run.stdout + run.stderr).not.toContain(KEY)
    expect(run.stdout + run.stderr).not.toContain("127.0.0.1:9/")
  })
})
