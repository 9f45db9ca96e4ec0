/**
 * The examples of docs/agents.md that show hooks, memory and state, compaction and plans, run as
 * a user would (`node dist/main.js run|serve examples/<name>`, after `npm run build`, which
 * builds their hooks): each does what its murmur.yaml says it does.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ofType, resultFile, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, runCli, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const example = (name: string) => new URL(`../../examples/${name}`, import.meta.url).pathname
const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
const home = () => {
  const dir = mkdtempSync(join(tmpdir(), "examples-home-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
const run = async (name: string, task: string, env: Record<string, string>) => {
  const result = await runCli(["run", example(name), "--task", task, "--json"], env, 60_000)
  expect(result.code, result.stderr).toBe(0)
  const exit = exitEvent(result)
  cleanups.push(() => rmSync(exit.workdir, { recursive: true, force: true }), () => rmSync(exit.records, { recursive: true, force: true }))
  return { workdir: exit.workdir as string, trace: traceLines(exit.records) }
}

describe("the examples of docs/agents.md", () => {
  it("reopen: the verifier sends the answer without a source back once; the second answer cites one", async () => {
    const { trace, workdir } = await run("reopen", "What is the capital of France?", { MURMUR_HOME: home() })
    expect(ofType(trace, "task_reopened")).toEqual([expect.objectContaining({ hook_name: "verifier", reopen_number: 1 })])
    expect(resultFile(workdir)).toContain("Source:")
    expect(ofType(trace, "task_end")).toEqual([expect.objectContaining({ exit_status: "ok", reopen_count: 1 })])
  }, 90_000)

  it("memory: what one session keeps in the state store, the next session's task is seeded with", async () => {
    const env = { MURMUR_HOME: home() }
    const first = await run("memory", "My favourite colour is green.", env)
    expect(ofType(first.trace, "context_seed")).toEqual([])
    expect(readFileSync(join(env.MURMUR_HOME, "state", "memory-notes", "notes.txt"), "utf8")).toContain("My favourite colour is green.")
    const second = await run("memory", "What is my favourite colour?", env)
    expect(ofType(second.trace, "context_seed")).toEqual([expect.objectContaining({ hook_name: "recall", messages: 1, dropped_messages: 0 })])
    expect(resultFile(second.workdir)).toContain("My favourite colour is green.")
  }, 90_000)

  it("plan: three steps, two of them in parallel, every outcome back to the model", async () => {
    const { trace, workdir } = await run("plan", "count the files", { MURMUR_HOME: home() })
    expect(ofType(trace, "plan_end")).toEqual([expect.objectContaining({ ok: 3, failed: 0, skipped: 0 })])
    expect(resultFile(workdir)).toContain("both steps finished")
  }, 90_000)

  it("compaction: a dozen turns in one thread, compacted within the window", async () => {
    const served = await serveCli(example("compaction"), { MURMUR_HOME: home() }, cleanups)
    cleanups.push(() => rmSync(served.listening.workdir, { recursive: true, force: true }), () => rmSync(served.listening.records, { recursive: true, force: true }))
    for (let turn = 1; turn <= 12; turn++) {
      const reply = await rpc(served.listening.url, "message/send", { message: referenceMessage(`question ${turn}`, { contextId: "ctx-example" }), configuration: { blocking: true } })
      expect(reply.body.result.status.state).toBe("completed")
    }
    const trace = traceLines(served.listening.records)
    expect(ofType(trace, "compaction").length).toBeGreaterThanOrEqual(1)
    expect(Math.max(...ofType(trace, "inference").map((line) => line.input_tokens))).toBeLessThanOrEqual(1500)
    expect(readFileSync(join(served.listening.workdir, "out", "compaction-summaries.jsonl"), "utf8").trim().split("\n").length).toBe(ofType(trace, "compaction").length)
  }, 120_000)
})
