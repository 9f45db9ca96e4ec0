/**
 * Spend ceilings through `serve` (`npm run build` first), the scripted driver reporting each
 * call's usage: `inference.max_session_tokens` stops a session at the call that would pass it,
 * and `spend.machine_tokens_per_day` in `$MURMUR_HOME/config.yaml` counts what every session of
 * the machine spent today (a ledger under `$MURMUR_HOME/spend/`).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, driverCalls, ofType, text, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { listeningCli, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const usage = (input_tokens: number, output_tokens: number) => ({ usage: { input_tokens, output_tokens } })
const shellTurn = (id: string) => ({ ...toolTurn(text("Working."), call(id, "echo", { command: "step" })), ...usage(400, 100) })
const finalTurn = { stop_reason: "end_turn", content: [text("Done.")], ...usage(400, 100) }

const home = () => {
  const dir = mkdtempSync(join(tmpdir(), "spend-home-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const serveWith = async (inference: string, murmurHome: string, replies: ReadonlyArray<unknown>) => {
  const dir = await makeAgentCapsuleDir({
    driverConfig: { replies },
    inference,
    capabilities: "  shell:\n    allow: [echo]\n",
    extra: "lifecycle:\n  task_acceptance: queue\n  after_task: sleep\n"
  })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const served = await listeningCli(["serve", dir, "--json", "--port", "0"], { MURMUR_HOME: murmurHome }, cleanups)
  return { dir, ...served }
}

const send = async (url: string, words: string) =>
  (await rpc(url, "message/send", { message: referenceMessage(words), configuration: { blocking: true } })).body.result

describe("inference.max_session_tokens", () => {
  it("stops the session before the call that would pass it: the task ends spend_ceiling_reached, later tasks make no call, session_end says so", async () => {
    // 500 tokens a call (as the provider reports them); the ceiling of 900 is passed by the second call.
    const served = await serveWith("  max_session_tokens: 900\n", home(), [shellTurn("c1"), shellTurn("c2"), finalTurn])
    const first = await send(served.listening.url, "go")
    expect(first.status.state).toBe("failed")
    expect(JSON.stringify(first.status.message)).toContain("spend ceiling reached: this session has used 1000 tokens of its 900 (inference.max_session_tokens)")
    expect(driverCalls(served.listening.workdir)).toBe(2)

    const second = await send(served.listening.url, "again")
    expect(second.status.state).toBe("failed")
    expect(driverCalls(served.listening.workdir)).toBe(2)

    served.child.kill("SIGTERM")
    expect((await served.exited).code).toBe(0)
    const trace = traceLines(served.listening.records)
    expect(ofType(trace, "session_start")[0]).toMatchObject({ max_session_tokens: 900, machine_tokens_per_day: null })
    const reached = ofType(trace, "spend_ceiling_reached")
    expect(reached.map((line) => [line.task_id, line.turn, line.key, line.spent_tokens, line.limit_tokens])).toEqual([
      [first.id, 2, "inference.max_session_tokens", 1000, 900],
      [second.id, 0, "inference.max_session_tokens", 1000, 900]
    ])
    expect(ofType(trace, "task_end").map((line) => line.exit_status)).toEqual(["spend_ceiling_reached", "spend_ceiling_reached"])
    expect(ofType(trace, "session_end")[0]!.exit_status).toBe("spend_ceiling_reached")
  }, 60_000)

  it("counts what the runtime counted when the provider reports no usage", async () => {
    const bare = (turn: Record<string, unknown>) => Object.fromEntries(Object.entries(turn).filter(([key]) => key !== "usage"))
    const served = await serveWith("  max_session_tokens: 1\n", home(), [bare(shellTurn("c1")), bare(finalTurn)])
    const task = await send(served.listening.url, "go")
    expect(task.status.state).toBe("failed")
    expect(driverCalls(served.listening.workdir)).toBe(1)
    const [inference] = ofType(traceLines(served.listening.records), "inference")
    const [reached] = ofType(traceLines(served.listening.records), "spend_ceiling_reached")
    expect(reached!.spent_tokens).toBe(inference!.input_tokens + inference!.output_tokens)
  }, 60_000)
})

describe("examples/spend", () => {
  it("completes its first task (1,200 tokens); the second makes one call (1,800) and stops before the next", async () => {
    const example = join(import.meta.dirname, "..", "..", "examples", "spend")
    const served = await listeningCli(["serve", example, "--json", "--port", "0"], { MURMUR_HOME: home() }, cleanups)
    expect((await send(served.listening.url, "one")).status.state).toBe("completed")
    const second = await send(served.listening.url, "two")
    expect(second.status.state).toBe("failed")
    expect(JSON.stringify(second.status.message)).toContain("this session has used 1800 tokens of its 1500 (inference.max_session_tokens)")
    served.child.kill("SIGTERM")
    await served.exited
    rmSync(served.listening.workdir, { recursive: true, force: true })
  }, 60_000)
})

describe("spend.machine_tokens_per_day", () => {
  const today = () => new Date().toISOString().slice(0, 10)

  it("adds every call to the machine's ledger for the day and stops a session once the day's spend reaches the budget", async () => {
    const murmurHome = home()
    writeFileSync(join(murmurHome, "config.yaml"), "spend:\n  machine_tokens_per_day: 700\n")
    // Another session spent 600 today already.
    mkdirSync(join(murmurHome, "spend"), { recursive: true })
    writeFileSync(join(murmurHome, "spend", `${today()}.tokens`), "600\n")
    const served = await serveWith("", murmurHome, [shellTurn("c1"), finalTurn])
    const task = await send(served.listening.url, "go")
    expect(task.status.state).toBe("failed")
    expect(JSON.stringify(task.status.message)).toContain("this machine has used 1100 tokens of its 700 for today")
    expect(driverCalls(served.listening.workdir)).toBe(1)
    expect(readFileSync(join(murmurHome, "spend", `${today()}.tokens`), "utf8")).toBe("600\n500\n")
    const trace = traceLines(served.listening.records)
    expect(ofType(trace, "session_start")[0]).toMatchObject({ machine_tokens_per_day: 700 })
    expect(ofType(trace, "spend_ceiling_reached")[0]).toMatchObject({ key: "spend.machine_tokens_per_day", spent_tokens: 1100, limit_tokens: 700, turn: 1 })
  }, 60_000)

  it("refuses a launch whose machine config it cannot honour, naming the file (E-RUN-010)", async () => {
    const murmurHome = home()
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [finalTurn] } })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    for (const config of ["spend:\n  machine_tokens_per_day: 0\n", "spend:\n  tokens_per_day: 10\n", "spend: [\n"]) {
      writeFileSync(join(murmurHome, "config.yaml"), config)
      const result = await runCli(["run", dir, "--task", "hi"], { MURMUR_HOME: murmurHome })
      expect(result.code, config).not.toBe(0)
      expect(result.stderr, config).toContain("E-RUN-010")
      expect(result.stderr, config).toContain(join(murmurHome, "config.yaml"))
    }
  }, 60_000)
})
