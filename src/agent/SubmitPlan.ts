/**
 * `submit-plan` (`capabilities.plan.submit: true`): a runtime-owned tool the model hands a plan
 * of steps, each a call of one of its tools with an input and the steps it depends on. The plan
 * is checked whole first (unique ids, known dependencies, no cycle, at most 32 steps, no step
 * calling submit-plan); then every step whose dependencies succeeded runs, independent ones in
 * parallel (at most 4 at once), each dispatched like any other call of the turn (policy hooks,
 * grants, trace lines); a step whose dependency failed is skipped. Traced `plan_start`,
 * `plan_step_start`, `plan_step` and `plan_end`. The model gets every step's outcome as one JSON
 * result.
 */
import { Effect, Either } from "effect"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import type { ToolDefinition } from "../project/ToolDefinition.js"
import type { CapsuleFailure } from "../services/Capsule.js"
import { mintId } from "../services/Ids.js"
import type { ToolCall } from "./DriverProtocol.js"

export const SUBMIT_PLAN = "submit-plan"
export const MAX_PLAN_STEPS = 32
export const PLAN_CONCURRENCY = 4

export const submitPlanDefinition: ToolDefinition = {
  name: SUBMIT_PLAN,
  description: `Run a plan of tool calls: each step names one of your tools, its input, and the steps it depends on. ` +
    `Independent steps run in parallel; a step runs only after the steps it depends on succeeded. At most ${MAX_PLAN_STEPS} steps. ` +
    "Returns every step's outcome.",
  parameters: {
    type: "object",
    properties: {
      steps: {
        type: "array",
        maxItems: MAX_PLAN_STEPS,
        items: {
          type: "object",
          properties: {
            id: { type: "string", description: "The step's id, unique in the plan" },
            tool: { type: "string", description: "The tool this step calls" },
            input: { type: "object", description: "The tool's input" },
            depends_on: { type: "array", items: { type: "string" }, description: "Ids of steps that must succeed first" }
          },
          required: ["id", "tool"]
        }
      }
    },
    required: ["steps"],
    additionalProperties: false
  }
}

export interface PlanStep {
  readonly id: string
  readonly tool: string
  readonly input: unknown
  readonly dependsOn: ReadonlyArray<string>
}

const asRecord = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {})

/** The plan's steps, checked whole; Left: why it is refused (nothing runs). */
export const readPlan = (input: unknown): Either.Either<ReadonlyArray<PlanStep>, string> => {
  const raw = asRecord(input)["steps"]
  if (!Array.isArray(raw) || raw.length === 0) return Either.left("submit-plan needs 'steps', a non-empty list")
  if (raw.length > MAX_PLAN_STEPS) return Either.left(`a plan has at most ${MAX_PLAN_STEPS} steps (got ${raw.length})`)
  const steps: Array<PlanStep> = []
  for (const [index, entry] of raw.entries()) {
    const step = asRecord(entry)
    const id = step["id"]
    const tool = step["tool"]
    const dependsOn = step["depends_on"] ?? []
    if (typeof id !== "string" || id === "") return Either.left(`step ${index} needs an 'id'`)
    if (typeof tool !== "string" || tool === "") return Either.left(`step '${id}' needs a 'tool'`)
    if (tool === SUBMIT_PLAN) return Either.left(`step '${id}' cannot call submit-plan`)
    if (!Array.isArray(dependsOn) || dependsOn.some((dep) => typeof dep !== "string")) return Either.left(`step '${id}': 'depends_on' is a list of step ids`)
    if (steps.some((other) => other.id === id)) return Either.left(`step id '${id}' is used twice`)
    steps.push({ id, tool, input: step["input"] ?? {}, dependsOn: dependsOn as ReadonlyArray<string> })
  }
  const ids = new Set(steps.map((step) => step.id))
  const unknown = steps.flatMap((step) => step.dependsOn.filter((dep) => !ids.has(dep)).map((dep) => `'${step.id}' depends on unknown step '${dep}'`))
  if (unknown.length > 0) return Either.left(unknown.join("; "))
  // Kahn's walk: what never becomes ready is on a cycle.
  const done = new Set<string>()
  let progressed = true
  while (progressed) {
    progressed = false
    for (const step of steps) {
      if (!done.has(step.id) && step.dependsOn.every((dep) => done.has(dep))) {
        done.add(step.id)
        progressed = true
      }
    }
  }
  const cyclic = steps.filter((step) => !done.has(step.id)).map((step) => step.id)
  return cyclic.length > 0 ? Either.left(`the plan has a dependency cycle through ${cyclic.join(", ")}`) : Either.right(steps)
}

interface StepOutcome {
  readonly id: string
  readonly tool: string
  readonly status: "ok" | "error" | "skipped"
  readonly output?: string
}

export interface PlanEnv {
  /** Dispatches one step as a call of the turn: its result and the text the model read of it. */
  readonly runStep: (call: ToolCall) => Effect.Effect<{ readonly result: ToolResultData; readonly text: string }, CapsuleFailure>
  readonly record: (eventType: string, fields: Readonly<Record<string, unknown>>) => Effect.Effect<void, CapsuleFailure>
  readonly taskId: string
}

const errorResult = (summary: string): ToolResultData => ({ status: "error", summary, data: summary, truncated: false, metadata: [] })

/** Runs a `submit-plan` call; a refused plan is an error result the model reads, and nothing ran. */
export const runPlan = (env: PlanEnv, call: ToolCall) =>
  Effect.gen(function*() {
    const plan = readPlan(call.input)
    if (Either.isLeft(plan)) return errorResult(`plan refused: ${plan.left}`)
    const steps = plan.right
    const planId = mintId("pln")
    const began = Date.now()
    yield* env.record("plan_start", { task_id: env.taskId, plan_id: planId, tool_call_id: call.id, steps: steps.map((step) => ({ id: step.id, tool: step.tool, depends_on: step.dependsOn })) })
    const outcomes = new Map<string, StepOutcome>()
    while (outcomes.size < steps.length) {
      const waiting = steps.filter((step) => !outcomes.has(step.id))
      for (const step of waiting) {
        const failed = step.dependsOn.find((dep) => outcomes.has(dep) && outcomes.get(dep)!.status !== "ok")
        if (failed !== undefined) outcomes.set(step.id, { id: step.id, tool: step.tool, status: "skipped", output: `skipped: '${failed}' did not succeed` })
      }
      const ready = steps.filter((step) => !outcomes.has(step.id) && step.dependsOn.every((dep) => outcomes.get(dep)?.status === "ok"))
      yield* Effect.forEach(ready, (step) =>
        Effect.gen(function*() {
          const stepBegan = Date.now()
          yield* env.record("plan_step_start", { task_id: env.taskId, plan_id: planId, step_id: step.id, tool_name: step.tool })
          const { result, text } = yield* env.runStep({ type: "tool_call", id: `${call.id}:${step.id}`, name: step.tool, input: step.input } as ToolCall)
          const status = result.status === "passed" ? "ok" : "error"
          outcomes.set(step.id, { id: step.id, tool: step.tool, status, output: text })
          yield* env.record("plan_step", { task_id: env.taskId, plan_id: planId, step_id: step.id, tool_name: step.tool, status, duration_ms: Date.now() - stepBegan })
        }), { concurrency: PLAN_CONCURRENCY, discard: true })
    }
    const all = steps.map((step) => outcomes.get(step.id)!)
    const count = (status: StepOutcome["status"]) => all.filter((outcome) => outcome.status === status).length
    yield* env.record("plan_end", { task_id: env.taskId, plan_id: planId, ok: count("ok"), failed: count("error"), skipped: count("skipped"), duration_ms: Date.now() - began })
    const data = JSON.stringify({ plan_id: planId, steps: all })
    return { status: count("ok") === all.length ? "passed" : "failed", summary: `plan ${planId}: ${count("ok")} ok, ${count("error")} failed, ${count("skipped")} skipped`, data, truncated: false, metadata: [] } satisfies ToolResultData
  })
