/**
 * How an agent task ends when it does not complete, through `node dist/main.js run <dir> --task
 * TEXT --json` (`npm run build` first) with the scripted-driver fixture: the turn budget spent
 * (spec §4.3 "error: inference loop exceeded N turns", `max_turns_reached`), the loop's failure
 * arms (a driver `stop_reason: error`, a driver result that did not pass, an unsupported stop
 * reason, a tool_call stop without blocks: "error: …" in out/result.txt, the task failed with
 * "session ended: …", the same reason), and host-side errors (a driver trap, an unparseable response: the task failed
 * with "driver invocation failed: …"). Each launch's exit event, result file and trace are checked.
 */
import { afterAll, describe, expect, it } from "vitest"
import { call, driverCalls, ofType, resultFile, runTask, type TaskRun, toolTurn } from "../lib/AgentE2E.js"
import type { AgentDirOptions } from "../lib/CapsuleDirs.js"

const cleanups: Array<() => void> = []

afterAll(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
})

const run = (options: AgentDirOptions) => runTask(options, "go", cleanups)

/** A launch whose task failed: exit 1, the exit event naming the task, its state and message. */
const expectFailed = (launched: TaskRun, message: string | RegExp) => {
  expect(launched.run.code, launched.run.stderr).toBe(1)
  expect(launched.exit).toMatchObject({ event: "exit", status: "failed", workdir: launched.workdir, state: "failed", task_id: expect.stringMatching(/^tsk_/) })
  if (typeof message === "string") expect(launched.exit.message).toBe(message)
  else expect(launched.exit.message).toMatch(message)
  // The reason, whatever the frames said: the exit event carries out/result.txt.
  expect(launched.exit.result).toBe(resultFile(launched.workdir))
}

/** The task's own task_end and the launch's session_end both carry `exit`. */
const expectTraceEnd = (launched: TaskRun, exit: string) => {
  expect(ofType(launched.trace, "task_end")).toEqual([expect.objectContaining({ task_id: launched.exit.task_id, exit_status: exit })])
  expect(launched.trace.at(-1)).toMatchObject({ event_type: "session_end", exit_status: exit })
}

describe("run <agent dir> --task: tasks that do not complete", () => {
  it("max_turns exhausted: error text in out/result.txt, task_end and session_end max_turns_reached, no driver call past the budget", async () => {
    const launched = await run({
      driverConfig: { replies: [toolTurn(call("c1", "echo-tool", { n: 1 }))] },
      tools: { "echo-tool": "echo-tool" },
      inference: "  max_turns: 2\n"
    })
    expectFailed(launched, "session ended: inference loop exceeded 2 turns")
    expect(resultFile(launched.workdir)).toBe("error: inference loop exceeded 2 turns")
    expect(driverCalls(launched.workdir)).toBe(2)
    expectTraceEnd(launched, "max_turns_reached")
    expect(ofType(launched.trace, "inference").map((line) => line.turn)).toEqual([0, 1])
    expect(ofType(launched.trace, "tool_call")).toHaveLength(2)
    expect(ofType(launched.trace, "task_end")[0]).toMatchObject({ turns: 2, tool_calls: 2, shell_calls: 0 })
    expect(ofType(launched.trace, "session_start")[0]).toMatchObject({ max_turns: 2 })
  })

  it("driver stop_reason error: \"error: <error>\", the turn traced with its stop reason, the task failed", async () => {
    const launched = await run({ driverConfig: { replies: [{ stop_reason: "error", error: "provider exploded", content: [] }] } })
    expectFailed(launched, "session ended: provider exploded")
    expect(resultFile(launched.workdir)).toBe("error: provider exploded")
    expect(ofType(launched.trace, "inference")).toEqual([expect.objectContaining({ turn: 0, stop_reason: "error", decision: "text", tool_name: null })])
    expectTraceEnd(launched, "failed")
  })

  it("driver result status error: \"error: <its data>\", the task failed, no second driver call", async () => {
    // The scripted driver answers status error "scripted-driver: no replies configured" when it has no replies.
    const launched = await run({ driverConfig: { replies: [] } })
    expectFailed(launched, "session ended: scripted-driver: no replies configured")
    expect(resultFile(launched.workdir)).toBe("error: scripted-driver: no replies configured")
    expect(driverCalls(launched.workdir)).toBe(1)
    expectTraceEnd(launched, "failed")
  })

  it("unsupported stop_reason: \"error: unsupported stop_reason '<v>'\", the task failed", async () => {
    const launched = await run({ driverConfig: { replies: [{ stop_reason: "pause_turn", content: [] }] } })
    expectFailed(launched, "session ended: unsupported stop_reason 'pause_turn'")
    expect(resultFile(launched.workdir)).toBe("error: unsupported stop_reason 'pause_turn'")
    expectTraceEnd(launched, "failed")
  })

  it("stop_reason tool_call without tool_call blocks: the reference's error text, the task failed", async () => {
    const launched = await run({ driverConfig: { replies: [{ stop_reason: "tool_call", content: [{ type: "text", text: "hmm" }] }] } })
    expectFailed(launched, "session ended: response stop_reason=tool_call but no tool_call blocks were present")
    expect(resultFile(launched.workdir)).toBe("error: response stop_reason=tool_call but no tool_call blocks were present")
    expectTraceEnd(launched, "failed")
  })

  it("driver trap: the task fails with \"driver invocation failed: tool '<driver>' trapped: …\"", async () => {
    // With chunks on, the scripted driver iterates `content`; a number there throws inside the guest, which traps.
    const launched = await run({ driverConfig: { chunks: true, replies: [{ stop_reason: "end_turn", content: 5 }] } })
    expectFailed(launched, /^driver invocation failed: tool 'scripted-driver' trapped: wasm trap: /)
    expect(resultFile(launched.workdir)).toMatch(/^error: tool 'scripted-driver' trapped: wasm trap: /)
    expect(ofType(launched.trace, "inference")).toEqual([])
    expectTraceEnd(launched, "failed")
  })

  it("unparseable driver response: the task fails with \"driver invocation failed: failed to parse driver response: …\"", async () => {
    // A reply that is a string: the driver answers {"0":"x"}, which has no stop_reason.
    const launched = await run({ driverConfig: { replies: ["x"] } })
    expectFailed(launched, /^driver invocation failed: failed to parse driver response: /)
    expect(resultFile(launched.workdir)).toMatch(/^error: failed to parse driver response: /)
    expect(launched.exit.message).toContain("stop_reason")
    expectTraceEnd(launched, "failed")
  })
})
