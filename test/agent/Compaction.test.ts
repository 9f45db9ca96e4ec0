/**
 * Context compaction through `serve --json`: a threaded conversation whose history outgrows
 * `context.max_tokens` keeps working, its history compacted before each request that would pass
 * the threshold; the "provider" (the scripted driver with `max_request_bytes`, which refuses a
 * larger request the way a provider refuses a prompt past its window) never receives more than
 * the window. With the built-in compactor (the capsule's own model summarises) and with an
 * `on-compaction` hook (`replace-context`); the durable record becomes the compacted history.
 */
import { readFileSync, rmSync } from "node:fs"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { endTurn, ofType, traceLines } from "../lib/AgentE2E.js"
import { readRecords } from "../../src/agent/Conversations.js"
import { makeAgentCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { hookedCapsule } from "../hooks/HookCapsule.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const WINDOW = 1200
const PROVIDER_BYTES = 8000
const long = "word ".repeat(60)
const threaded = (store: string) =>
  `lifecycle: { conversation: threaded, task_acceptance: queue, queue_depth: 4 }\ncontext: { max_tokens: ${WINDOW}, record_store: ${store} }\n`

const send = async (url: string, text: string) => {
  const reply = await rpc(url, "message/send", { message: referenceMessage(text, { contextId: "ctx-long" }), configuration: { blocking: true } })
  expect(reply.body.result.status, text).toMatchObject({ state: "completed" })
}

const serve = async (dir: string) => {
  const home = mkdtempSync(join(tmpdir(), "compaction-home-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(home, { recursive: true, force: true }))
  return { served: await serveCli(dir, { MURMUR_HOME: home }, cleanups), home }
}

describe("compaction", () => {
  it("a threaded conversation completes 50 turns with the built-in compactor; no request passes the window", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [endTurn(`noted. ${long}`)], max_request_bytes: PROVIDER_BYTES },
      inference: "  compaction:\n    threshold: 0.8\n    dump_summaries: true\n",
      extra: threaded("built-in")
    })
    const { home, served } = await serve(dir)
    for (let turn = 1; turn <= 50; turn++) await send(served.listening.url, `question ${turn}`)
    const trace = traceLines(served.listening.records)
    const compactions = ofType(trace, "compaction")
    expect(compactions.length).toBeGreaterThanOrEqual(3)
    for (const line of compactions) {
      expect(line.tokens_before).toBeGreaterThanOrEqual(0.8 * WINDOW)
      expect(line.tokens_after).toBeLessThan(line.tokens_before / 2)
      expect(line.hook_name).toBeNull()
    }
    const inference = ofType(trace, "inference")
    expect(inference.filter((line) => line.origin === "compaction")).toHaveLength(compactions.length)
    expect(Math.max(...inference.map((line) => line.input_tokens))).toBeLessThanOrEqual(WINDOW)
    expect(ofType(trace, "task_end").map((line) => line.exit_status)).toEqual(Array(50).fill("ok"))
    const summaries = readFileSync(join(served.listening.workdir, "out", "compaction-summaries.jsonl"), "utf8").trim().split("\n")
    expect(summaries).toHaveLength(compactions.length)
    // The durable record holds the compacted history, not the 100 messages.
    const record = readRecords(join(home, "conversations", "built-in", "ctx-long", "conversation.jsonl"))
    const messages = record.flatMap((line) => line.messages)
    expect(messages.length).toBeLessThan(30)
    expect(JSON.stringify(messages[0])).toContain("[Summary of the earlier conversation]")
  }, 180_000)

  it("an on-compaction hook's replace-context is what the next provider call receives", async () => {
    const dir = await hookedCapsule({
      driverConfig: { replies: [endTurn(`noted. ${long}`)], max_request_bytes: PROVIDER_BYTES },
      inference: "  compaction:\n    threshold: 0.8\n",
      extra: threaded("hooked")
    }, [{ name: "compactor", binding: "on-compaction", policy: "replace-context", config: { compact: 2 } }])
    const { served } = await serve(dir)
    for (let turn = 1; turn <= 15; turn++) await send(served.listening.url, `question ${turn}`)
    const trace = traceLines(served.listening.records)
    const [first] = ofType(trace, "compaction")
    expect(first).toMatchObject({ hook_name: "compactor" })
    expect(first!.tokens_after).toBeLessThan(first!.tokens_before / 2)
    // The request after it: the hook's summary, its two kept messages, then the new task.
    const after = JSON.parse(readFileSync(join(served.listening.workdir, "driver-request-2.json"), "utf8"))
    expect(after.messages[0].content[0].text).toMatch(/^summary of \d+ messages$/)
    expect(Math.max(...ofType(trace, "inference").map((line) => line.input_tokens))).toBeLessThanOrEqual(WINDOW)
  }, 180_000)

  it("an on-compaction hook that fails fails the task; one that declines lets it go on", async () => {
    const failing = await hookedCapsule({
      driverConfig: { replies: [endTurn(`noted. ${long}`)] },
      inference: "  compaction:\n    threshold: 0.1\n",
      extra: threaded("failing")
    }, [{ name: "compactor", binding: "on-compaction", policy: "replace-context", config: { err: { "on-compaction": "cannot" } } }])
    const { served } = await serve(failing)
    const reply = await rpc(served.listening.url, "message/send", { message: referenceMessage("hello", { contextId: "c" }), configuration: { blocking: true } })
    expect(reply.body.result.status.state).toBe("failed")
    expect(JSON.stringify(reply.body.result.status)).toContain("compaction hook 'compactor' failed: cannot")

    const declining = await hookedCapsule({
      driverConfig: { replies: [endTurn("fine")] },
      inference: "  compaction:\n    threshold: 0.1\n",
      extra: threaded("declining")
    }, [{ name: "compactor", binding: "on-compaction", policy: "replace-context" }])
    const other = await serve(declining)
    await send(other.served.listening.url, "hello")
    expect(ofType(traceLines(other.served.listening.records), "compaction_declined")).toEqual([expect.objectContaining({ by: "hook" })])
  }, 120_000)
})
