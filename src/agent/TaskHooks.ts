/**
 * The hook calls of one agent task (spec §4.1, §4.4, §3.8): `on-task-start` (its
 * `seed-context` capped to `context.seed_budget`), the policy decision before a tool or shell
 * call and the observation after it (`on-tool-call`, `on-shell`), `on-inference` (its `artifact`
 * answers become the task's artifacts) and `on-task-end` (its `reopen-task` answer). What to do
 * with an answer is the loop's (./AgentLoop.ts); this module builds the events and reads the
 * answers.
 */
import { Effect } from "effect"
import type { Denial, HookCallContext, Hooks } from "../hooks/Hooks.js"
import type { CapsuleFailure } from "../services/Capsule.js"
import { argvFor, isShellInterpreter, parseShellInput } from "../shell/ShellGrant.js"
import type { Message, ToolCall } from "./DriverProtocol.js"
import { fromHookMessages } from "./HookMessages.js"
import type { ShellSeen } from "./ToolDispatch.js"

export interface TaskHookEnv {
  readonly hooks: Hooks
  readonly taskId: string
  /** The calls' context: faults hang under the task's line. */
  readonly context: Effect.Effect<HookCallContext, CapsuleFailure>
  /** Writes a line under the task's. */
  readonly record: (eventType: string, fields: Readonly<Record<string, unknown>>) => Effect.Effect<void, CapsuleFailure>
}

export interface SeedBudget {
  /** `floor(context.max_tokens × seed_budget)`; 0: no window, nothing is cut. */
  readonly tokens: number
  /** `seed_overflow_margin`: slack over the budget before messages are cut. */
  readonly margin: number
}

/** `shell-event.command` is for display: at most this many characters. */
const COMMAND_CLIP = 200

/**
 * `on-task-start`: the messages its hooks seed, in order, cut where they would pass the budget
 * (and its margin). What was cut is traced `context_seed` with the counts and, when anything was,
 * a `seed-rejected` fault.
 */
export const taskStartSeeds = (
  env: TaskHookEnv,
  /** Built only when a hook is bound there (counting a long history costs main-thread time). */
  event: () => Readonly<Record<string, unknown>>,
  budget: SeedBudget,
  count: (message: Message) => number
) =>
  Effect.gen(function*() {
    if (!env.hooks.at("on-task-start")) return []
    const context = yield* env.context
    const fired = yield* env.hooks.fire("on-task-start", event(), context)
    const seeds: Array<Message> = []
    const limit = budget.tokens === 0 ? Number.POSITIVE_INFINITY : Math.floor(budget.tokens * (1 + budget.margin))
    let used = 0
    for (const commit of fired.commits) {
      const offered = fromHookMessages(commit.val)
      let kept = 0
      let dropped = 0
      for (const message of offered) {
        const tokens = count(message)
        if (used + tokens > limit) {
          dropped++
          continue
        }
        used += tokens
        kept++
        seeds.push(message)
      }
      yield* env.record("context_seed", { task_id: env.taskId, hook_name: commit.hook, messages: kept, dropped_messages: dropped, tokens: used, budget_tokens: budget.tokens })
      if (dropped > 0) {
        yield* env.hooks.fault(commit.hook, "on-task-start", "seed-rejected", `${dropped} seeded message(s) past the seed budget (${budget.tokens} tokens, margin ${budget.margin}) were cut`, context.parent)
      }
    }
    return seeds
  })

/** A shell call as `on-shell` sees it (`outcome` added after the call). */
export const shellEvent = (call: ToolCall, turn: number, binary: string) => {
  const parsed = parseShellInput(JSON.stringify(call.input ?? {}))
  const command = parsed._tag === "Invalid" ? "" : parsed.command
  return {
    turn,
    binary,
    command: command.slice(0, COMMAND_CLIP),
    argv: argvFor(call.name, command),
    script: isShellInterpreter(call.name) ? command : undefined,
    recipe: undefined
  }
}

/** A tool call as `on-tool-call` sees it (`outcome` added after the call). */
export const toolEvent = (call: ToolCall, turn: number) => {
  const input = JSON.stringify(call.input ?? {})
  return { turn, toolName: call.name, inputBytes: Buffer.byteLength(input), input }
}

/**
 * The policy decision before a call: the `deny` hooks bound to `on-tool-call`, and for a shell
 * call those bound to `on-shell`. The first refusal wins; `call_denied` is traced.
 */
export const policyDecision = (env: TaskHookEnv, call: ToolCall, turn: number, shellBinary: string | undefined) =>
  Effect.gen(function*() {
    const asksTool = env.hooks.at("on-tool-call")
    const asksShell = shellBinary !== undefined && env.hooks.at("on-shell")
    if (!asksTool && !asksShell) return undefined
    const context = yield* env.context
    let denial: Denial | undefined = asksTool ? yield* env.hooks.decide("on-tool-call", { ...toolEvent(call, turn), outcome: undefined }, context) : undefined
    if (denial === undefined && asksShell) denial = yield* env.hooks.decide("on-shell", { ...shellEvent(call, turn, shellBinary), outcome: undefined }, context)
    if (denial !== undefined) {
      yield* env.record("call_denied", { task_id: env.taskId, turn, tool_name: call.name, tool_call_id: call.id, hook_name: denial.hook, reason: denial.reason })
    }
    return denial
  })

/** The observation after a call (`on-tool-call`; answers other than `none` are faults there). */
export const observeToolCall = (env: TaskHookEnv, call: ToolCall, turn: number, outcome: { readonly outputBytes: number; readonly durationMs: number; readonly status: string }) =>
  Effect.gen(function*() {
    if (!env.hooks.at("on-tool-call")) return
    yield* env.hooks.fire("on-tool-call", { ...toolEvent(call, turn), outcome }, yield* env.context)
  })

/** The observation after a shell command that finished (`on-shell`). */
export const observeShell = (env: TaskHookEnv, call: ToolCall, turn: number, seen: ShellSeen) =>
  Effect.gen(function*() {
    if (!env.hooks.at("on-shell")) return
    yield* env.hooks.fire("on-shell", {
      ...shellEvent(call, turn, seen.binary),
      // The model's view of the output (capped like it); stderr is folded into it there.
      outcome: { exitCode: seen.exitCode, stdout: seen.output, stderr: "", stdoutBytes: seen.stdoutBytes, stderrBytes: seen.stderrBytes, durationMs: seen.durationMs }
    }, yield* env.context)
  })

/** `on-task-end`: the first `reopen-task` answer, if any hook wants the task back. */
export const reopenWanted = (env: TaskHookEnv, exitStatus: string) =>
  Effect.gen(function*() {
    if (!env.hooks.at("on-task-end")) return undefined
    const fired = yield* env.hooks.fire("on-task-end", { taskId: env.taskId, exitStatus }, yield* env.context)
    const commit = fired.commits.find((candidate) => candidate.tag === "reopen-task")
    return commit === undefined ? undefined : { hook: commit.hook, reason: String(commit.val ?? "") }
  })

/** `on-inference`: the `artifact` answers, by hook. */
export const inferenceArtifacts = (env: TaskHookEnv, event: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    if (!env.hooks.at("on-inference")) return []
    const fired = yield* env.hooks.fire("on-inference", event, yield* env.context)
    return fired.commits.filter((commit) => commit.tag === "artifact").map((commit) => ({ hook: commit.hook, text: String(commit.val ?? "") }))
  })

/** The task text after its reopens: the original, then every reason with its hook (spec §4.1 step 3). */
export const reopenedText = (original: string, feedback: ReadonlyArray<{ readonly hook: string; readonly reason: string }>) =>
  `${original}\n\n## Reopen feedback\n\n${feedback.map(({ hook, reason }) => `- ${hook}: ${reason}`).join("\n")}\n`
