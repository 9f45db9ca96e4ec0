/**
 * `submit-plan` (`capabilities.plan.submit`): the plan is checked whole before anything runs;
 * then steps run through the turn's own dispatch, independent ones in parallel, dependents after
 * what they need, a step after a failed one skipped; traced plan_start / plan_step_start /
 * plan_step / plan_end. Through `run` with the scripted driver, real tools and shell commands.
 */
import { Either } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { readPlan } from "../../src/agent/SubmitPlan.js"
import { call, driverRequest, endTurn, ofType, runTask, type TraceLine, toolTurn } from "../lib/AgentE2E.js"

const cleanups: Array<() => void> = []
afterAll(() => {
  for (const cleanup of cleanups) cleanup()
})

describe("readPlan", () => {
  it("refuses a plan with a cycle, an unknown dependency, a repeated id, a nested plan or too many steps", () => {
    const refused = (steps: unknown) => Either.isLeft(readPlan({ steps })) ? (readPlan({ steps }) as Either.Left<string, never>).left : "accepted"
    expect(refused([{ id: "a", tool: "t", depends_on: ["b"] }, { id: "b", tool: "t", depends_on: ["a"] }])).toBe("the plan has a dependency cycle through a, b")
    expect(refused([{ id: "a", tool: "t", depends_on: ["x"] }])).toBe("'a' depends on unknown step 'x'")
    expect(refused([{ id: "a", tool: "t" }, { id: "a", tool: "u" }])).toBe("step id 'a' is used twice")
    expect(refused([{ id: "a", tool: "submit-plan" }])).toBe("step 'a' cannot call submit-plan")
    expect(refused(Array.from({ length: 33 }, (_, i) => ({ id: `s${i}`, tool: "t" })))).toBe("a plan has at most 32 steps (got 33)")
    expect(refused([])).toBe("submit-plan needs 'steps', a non-empty list")
    expect(refused([{ id: "a", tool: "t" }, { id: "b", tool: "t", depends_on: ["a"] }])).toBe("accepted")
  })
})

describe("submit-plan in a task", () => {
  it("runs independent steps together, dependents after, skips what follows a failure, and answers every outcome", async () => {
    const plan = {
      steps: [
        { id: "slow1", tool: "sleep", input: { command: "1" } },
        { id: "slow2", tool: "sleep", input: { command: "1" } },
        { id: "echo", tool: "echo-tool", input: { msg: "after" }, depends_on: ["slow1", "slow2"] },
        { id: "bad", tool: "no-such-tool", input: {} },
        { id: "never", tool: "echo-tool", input: {}, depends_on: ["bad"] }
      ]
    }
    const run = await runTask({
      driverConfig: { replies: [toolTurn(call("p1", "submit-plan", plan)), endTurn("done")] },
      tools: { "echo-tool": "echo-tool" },
      capabilities: "  shell:\n    allow: [sleep]\n  plan:\n    submit: true\n"
    }, "plan it", cleanups)
    expect(run.run.code, run.run.stderr).toBe(0)
    const tools = driverRequest(run.workdir, 1).tools.map((tool: { name: string }) => tool.name)
    expect(tools).toContain("submit-plan")
    const answer = driverRequest(run.workdir, 2).messages.find((m: { role: string }) => m.role === "tool")
    const text: string = answer.content[0].text
    const outcome = JSON.parse(text.slice(text.indexOf("\n") + 1, text.lastIndexOf("\n")))
    expect(outcome.steps.map((step: { id: string; status: string }) => [step.id, step.status])).toEqual([
      ["slow1", "ok"], ["slow2", "ok"], ["echo", "ok"], ["bad", "error"], ["never", "skipped"]
    ])
    const plans = run.trace.filter((line: TraceLine) => String(line.event_type).startsWith("plan_"))
    const order = plans.map((line: TraceLine) => `${line.event_type}${line.step_id === undefined ? "" : `:${line.step_id}`}`)
    expect(order[0]).toBe("plan_start")
    expect(order.at(-1)).toBe("plan_end")
    // Both sleeps started before either finished; echo started after both.
    const at = (name: string) => order.indexOf(name)
    expect(Math.max(at("plan_step_start:slow1"), at("plan_step_start:slow2"))).toBeLessThan(Math.min(at("plan_step:slow1"), at("plan_step:slow2")))
    expect(at("plan_step_start:echo")).toBeGreaterThan(Math.max(at("plan_step:slow1"), at("plan_step:slow2")))
    expect(order).not.toContain("plan_step_start:never")
    expect(ofType(run.trace, "plan_end")).toEqual([expect.objectContaining({ ok: 3, failed: 1, skipped: 1 })])
    // Each step was a call of its own: the shell's lines are there.
    expect(ofType(run.trace, "shell")).toHaveLength(2)
  }, 90_000)
})
