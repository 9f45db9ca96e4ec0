/**
 * Tool dispatch from the agent loop (spec §4.4), for one `tool_call` block: a `shell.allow`
 * binary runs through the Shell, a skill answers its `skill.md`, an allowlisted WASM tool runs in
 * a worker of its own (chunks and request-input wired to the task by the caller's `runTool`),
 * and anything else is an `error` result the model reads. Writes the call's trace lines and
 * fences the result the model will read. The `inference` line it hangs under may still be being
 * written while the call runs, and its own `tool_call` line while the loop goes on (both in order:
 * ../records/TraceAhead.ts).
 */
import { Effect, Either } from "effect"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import type { GuestOutcome, ToolSpec } from "../sandbox/Sandbox.js"
import type { SandboxError } from "../sandbox/SandboxError.js"
import { type DetachedCompletion, errorResult, parseShellInput } from "../shell/ShellGrant.js"
import { CapsuleFailure } from "../services/Capsule.js"
import type { DetachedInfo, Shell } from "../shell/Shell.js"
import type { WorkdirQuota } from "../shell/WorkdirQuota.js"
import type { FieldsOf } from "../records/TraceEvents.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import { DELEGATE_TASK } from "../delegation/DelegateTask.js"
import { SUBMIT_PLAN } from "./SubmitPlan.js"
import { type PeerFiles, redactHandles } from "../planes/PeerTools.js"
import { fenceToolResult, metadataValue, resultText, type ToolCall } from "./DriverProtocol.js"

export interface TaskCounts {
  turns: number
  inputTokens: number
  outputTokens: number
  toolCalls: number
  shellCalls: number
}

export interface DispatchEnv {
  readonly prepared: PreparedAgent
  readonly taskId: string
  readonly counts: TaskCounts
  readonly shell: Shell["Type"]
  /** The workdir's size budget, checked before each command starts. */
  readonly quota: WorkdirQuota
  readonly runTool: (name: string, spec: ToolSpec, data: string) => Effect.Effect<GuestOutcome, SandboxError>
  /** Whether a request-input of this task timed out (the task then fails `input-timeout`). */
  readonly timedOut: () => boolean
  readonly record: <T extends string>(eventType: T, parentId: string, fields: FieldsOf<T>) => Effect.Effect<string, CapsuleFailure>
  /** Like `record`, but the line is written while the caller goes on (still in order; a failed write fails a later line or the task's end). */
  readonly recordAhead: <T extends string>(eventType: T, parentId: string, fields: FieldsOf<T>) => Effect.Effect<void>
  /** `submit-plan` (./SubmitPlan.ts), when `capabilities.plan.submit` offers it. */
  readonly plan?: ((call: ToolCall) => Effect.Effect<ToolResultData, CapsuleFailure>) | undefined
  /** `delegate-task` (./DelegateTask.ts), when the capsule may delegate. */
  readonly delegate?: ((input: unknown) => Effect.Effect<ToolResultData>) | undefined
  /** `share-file` / `fetch-peer-file` (./PeerTools.ts), when the session offers them. */
  readonly peer?: PeerFiles["Type"] | undefined
  /** Hands a detached command's completion on (./ShellCompletions.ts). */
  readonly follow: (detached: DetachedInfo, completion: Effect.Effect<DetachedCompletion>) => Effect.Effect<void>
  /** Told of a shell command that finished (for its `on-shell` observation). */
  readonly shellFinished?: ((seen: ShellSeen) => Effect.Effect<void>) | undefined
}

/** A finished shell command as its observers see it. */
export interface ShellSeen {
  readonly binary: string
  readonly exitCode: number
  /** What the model read of its output. */
  readonly output: string
  readonly stdoutBytes: number
  readonly stderrBytes: number
  readonly durationMs: number
}

/** A call's result and the text the model reads for it: fenced (spec §3.9), except a skill's guidance. */
export interface Dispatched {
  readonly result: ToolResultData
  readonly text: string
}

/** `parent`: the id of the call's `inference` line, which may still be being written while the call runs. */
export const dispatchTool = (env: DispatchEnv, call: ToolCall, turn: number, parentLine: Effect.Effect<string, CapsuleFailure>) =>
  Effect.gen(function*() {
    const data = JSON.stringify(call.input ?? {})
    const began = Date.now()
    const inputObject = typeof call.input === "object" && call.input !== null ? call.input as Record<string, unknown> : {}
    // Every call but a skill's writes `tool_call` (a shell call too, before its `shell` line:
    // §4.4), and its output is what the model got, fence included.
    const toolCallLine = (result: ToolResultData) =>
      Effect.gen(function*() {
        env.counts.toolCalls++
        const text = fenceToolResult(call.name, resultText(result))
        const effect = metadataValue(result, "state_effect")
        const resource = metadataValue(result, "resource_id")
        yield* env.recordAhead("tool_call", yield* parentLine, {
          turn,
          task_id: env.taskId,
          tool_name: call.name,
          tool_call_id: call.id,
          // A peer handle is a credential; the trace keeps its id only.
          input: env.peer === undefined ? inputObject : JSON.parse(redactHandles(data)),
          input_bytes: Buffer.byteLength(data),
          output: env.peer === undefined ? text : redactHandles(text),
          output_bytes: Buffer.byteLength(text),
          duration_ms: Date.now() - began,
          status: result.status === "passed" ? "ok" : "error",
          ...(effect === "read" || effect === "mutate" ? { state_effect: effect } : {}),
          ...(resource === undefined ? {} : { resource_id: resource })
        })
        return { result, text } satisfies Dispatched
      })
    // Step 0: runtime-owned tools are intercepted before anything the capsule declares.
    if (call.name === DELEGATE_TASK && env.delegate !== undefined) return yield* toolCallLine(yield* env.delegate(call.input))
    if (call.name === SUBMIT_PLAN && env.plan !== undefined) return yield* toolCallLine(yield* env.plan(call))
    if (env.peer?.names.includes(call.name)) return yield* toolCallLine(yield* env.peer.run(call.name, call.input))
    if (env.prepared.shell.allow.includes(call.name)) {
      env.counts.shellCalls++
      const parsed = parseShellInput(data)
      if (parsed._tag === "Invalid") return yield* toolCallLine(parsed.result)
      const outcome = yield* Effect.either(env.shell.run({
        binary: call.name,
        command: parsed.command,
        workdir: env.prepared.workdir,
        allow: env.prepared.shell.allow,
        hostEnv: env.prepared.hostEnv,
        baselineEnv: env.prepared.shell.baselineEnv,
        stripPatterns: env.prepared.shell.stripPatterns,
        runtimeVars: env.prepared.runtimeVars,
        graceSeconds: env.prepared.lifecycle.shellGraceSecs,
        containment: env.prepared.shell.containment,
        taskId: env.taskId,
        maxOutputBytes: env.prepared.shell.maxOutputBytes,
        quota: env.quota
      }))
      if (Either.isLeft(outcome)) return yield* toolCallLine(outcome.left.toolResult)
      const done = outcome.right
      const dispatched = yield* toolCallLine(done.result)
      if (done._tag === "Finished") {
        yield* env.record("shell", yield* parentLine, {
          turn,
          task_id: env.taskId,
          binary: done.binary,
          command: parsed.command,
          exit_code: done.exitCode,
          stdout_bytes: done.stdoutBytes,
          stderr_bytes: done.stderrBytes,
          duration_ms: done.durationMs,
          ...(done.outputPath === undefined ? {} : { truncated: true, output_path: done.outputPath }),
          ...(done.droppedBytes === undefined ? {} : { resource_limit: "max_output_bytes", dropped_bytes: done.droppedBytes })
        })
        if (env.shellFinished !== undefined) {
          yield* env.shellFinished({
            binary: done.binary,
            exitCode: done.exitCode,
            output: resultText(done.result),
            stdoutBytes: done.stdoutBytes,
            stderrBytes: done.stderrBytes,
            durationMs: done.durationMs
          })
        }
      } else {
        yield* env.record("shell_detached", yield* parentLine, {
          turn,
          task_id: env.taskId,
          work_id: done.detached.workId,
          binary: done.detached.binary,
          command: done.detached.command,
          grace_ms: done.detached.graceMs
        })
        yield* env.follow(done.detached, done.completion)
      }
      return dispatched
    }
    const skill = env.prepared.skills[call.name]
    if (skill !== undefined) {
      yield* env.record("skill_call", yield* parentLine, {
        turn,
        task_id: env.taskId,
        skill_name: call.name,
        output_bytes: Buffer.byteLength(skill),
        duration_ms: Date.now() - began,
        status: "ok"
      })
      const result: ToolResultData = { status: "passed", summary: `Skill ${call.name} guidance`, data: skill, truncated: false, metadata: [] }
      return { result, text: skill } satisfies Dispatched
    }
    let result: ToolResultData
    const spec = env.prepared.tools[call.name]
    if (!env.prepared.allowlist.includes(call.name)) result = errorResult(`tool '${call.name}' is not declared in manifest allowlist`)
    else if (spec === undefined) result = errorResult(`tool '${call.name}' is not available in this session`)
    else {
      const ran = yield* Effect.either(env.runTool(call.name, spec, data))
      if (env.timedOut()) return yield* CapsuleFailure.inputTimeout()
      result = Either.isRight(ran)
        ? ran.right.result ?? errorResult("tool returned no result")
        : errorResult(ran.left.message)
    }
    return yield* toolCallLine(result)
  })
