/**
 * `observability.eval`: each task scored as it ends, a line of `<records>/eval.jsonl`. Through
 * `run` (`npm run build` first) with the scripted driver: a two-turn task calling the shell.
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, endTurn, ofType, text, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const scorers = [
  "    - type: exit_ok",
  "    - { type: max_turns, max: 1, name: one-turn }",
  "    - { type: max_tokens, max: 100000 }",
  "    - { type: tool_sequence, expected: [echo] }",
  "    - { type: tool_sequence, expected: [echo, echo], name: twice }",
  "    - type: llm_judge"
].join("\n")

describe("observability.eval", () => {
  it("writes one eval.jsonl line per task with every scorer's verdict; llm_judge asks the capsule's model", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [toolTurn(text("Echoing."), call("c1", "echo", { command: "hi" })), endTurn("done")] },
      capabilities: "  shell:\n    allow: [echo]\n",
      extra: `observability:\n  eval:\n    dataset_id: smoke\n    scorers:\n${scorers}\n`
    })
    dirs.push(dir)
    const run = await runCli(["run", dir, "--task", "go", "--json"])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).not.toContain("llm_judge")
    const { records } = exitEvent(run)
    const lines = readFileSync(join(records, "eval.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toHaveLength(1)
    const [line] = lines
    const inference = ofType(traceLines(records), "inference")
    // The judge's call is the last inference line, under its own origin; the task's tokens are the loop's.
    expect(inference.map((one) => one.origin ?? "loop")).toEqual(["loop", "loop", "eval:llm_judge"])
    const tokens = inference.slice(0, 2).reduce((sum, one) => sum + one.input_tokens + one.output_tokens, 0)
    expect(line).toMatchObject({ task_id: ofType(traceLines(records), "task_start")[0]!.task_id, dataset_id: "smoke", exit_status: "ok", passed: false })
    expect(line.scores).toEqual([
      { name: "exit_ok", type: "exit_ok", pass: true, value: "ok", expected: "ok" },
      { name: "one-turn", type: "max_turns", pass: false, value: 2, expected: 1 },
      { name: "max_tokens", type: "max_tokens", pass: true, value: tokens, expected: 100000 },
      { name: "tool_sequence", type: "tool_sequence", pass: true, value: ["echo"], expected: ["echo"] },
      { name: "twice", type: "tool_sequence", pass: false, value: ["echo"], expected: ["echo", "echo"] },
      // The scripted "model" answers the judge with its first reply, whose text is "Echoing.": no PASS.
      { name: "llm_judge", type: "llm_judge", pass: false, value: "Echoing.", expected: "PASS" }
    ])
  }, 60_000)

  it("llm_judge passes an answer the model grades PASS", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [endTurn("PASS: the answer is 4")] },
      extra: "observability:\n  eval:\n    scorers:\n    - { type: llm_judge, name: judge }\n"
    })
    dirs.push(dir)
    const run = await runCli(["run", dir, "--task", "what is 2+2?", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const [line] = readFileSync(join(exitEvent(run).records, "eval.jsonl"), "utf8").trim().split("\n").map((one) => JSON.parse(one))
    expect(line).toMatchObject({ passed: true, scores: [{ name: "judge", type: "llm_judge", pass: true, value: "PASS: the answer is 4" }] })
  }, 60_000)

  it("writes no eval.jsonl for a capsule without scorers", async () => {
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [endTurn("done")] } })
    dirs.push(dir)
    const run = await runCli(["run", dir, "--task", "go", "--json"])
    expect(run.code, run.stderr).toBe(0)
    expect(() => readFileSync(join(exitEvent(run).records, "eval.jsonl"))).toThrow()
  }, 60_000)
})
