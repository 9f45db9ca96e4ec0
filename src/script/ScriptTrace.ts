/**
 * A script capsule's `trace.jsonl` (docs/trace.md, "What a script capsule writes"). It goes
 * through the agent's writer (../agent/Trace.ts), so the line format, the session → task tree and
 * the no-follow opens are the agent's: one `session_start`/`session_end` pair per launch, one
 * `task_start`/`task_end` pair per `run()`, and one `a2a_send` per `murmur:message/send` a peer
 * answered with a task. A script has no model, turns, tokens or prompt, so those fields take the
 * neutral values (`""`, `0`, `null`, `"none"`) rather than being left off: a reader of the
 * reference's schema finds every column it expects.
 */
import { Cause, Effect, Exit, type Scope } from "effect"
import { makeTrace, TraceWriteFailed } from "../records/Trace.js"
import { type A2aSendFields, type SessionEndFields, type SessionStartFields, sessionStartOf, type TaskSource } from "../records/TraceEvents.js"
import { laneOf, type Origin, type Trust } from "../services/Task.js"
import { effectiveTraceCapture } from "../project/Manifest.js"
import type { PreparedScript } from "./PreparedScript.js"

/** One `run()` as the trace sees it. */
export interface ScriptTask {
  readonly taskId: string
  readonly contextId: string
  readonly source: TaskSource
  readonly origin: Origin
  readonly trust: Trust
  readonly delegationId?: string | undefined
  readonly messageBytes: number
  readonly queuedMs: number
  /** Set for a task that came over A2A: it is announced with `a2a_task_received` first (§4.1 step 2). */
  readonly received?: { readonly messageId: string; readonly traceparent: string | null } | undefined
}

/** Records one answered send; a failed write is kept and fails the task once `run()` has ended. */
export type RecordSend = (fields: A2aSendFields) => Effect.Effect<void>

export interface ScriptTrace {
  /**
   * Runs `run` between the task's `task_start` and `task_end` (`ok`, `failed` or `canceled`, from
   * how it ended). A trace write that fails after `task_start` does not cut the guest short: the
   * task fails with it (E-RUN-007) once `run` has ended.
   */
  readonly task: <A, E, R>(task: ScriptTask, run: (sent: RecordSend) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | TraceWriteFailed, R>
}

type ExitStatus = SessionEndFields["exit_status"]

const exitStatus = (exit: Exit.Exit<unknown, unknown>): ExitStatus =>
  Exit.isSuccess(exit) ? "ok" : Cause.isInterruptedOnly(exit.cause) ? "canceled" : "failed"

export const scriptSessionStart = (prepared: PreparedScript): SessionStartFields => {
  const { manifest } = prepared.project
  return sessionStartOf({
    manifest,
    tools: prepared.allowlist,
    shellCommands: manifest.capabilities.shell?.allow.length ?? 0,
    containment: prepared.containment
  })
}

/** Opens the launch's trace and writes `session_start`; `session_end` is written when the scope closes. */
export const openScriptTrace = (prepared: PreparedScript): Effect.Effect<ScriptTrace, TraceWriteFailed, Scope.Scope> =>
  Effect.gen(function*() {
    // The records sit beneath the capsule directory, out of the guests' tree; made and opened
    // from there without following a link all the same.
    const trace = yield* makeTrace({
      directory: prepared.records,
      within: prepared.project.directory,
      sessionId: prepared.sessionId,
      capture: effectiveTraceCapture(prepared.project.manifest)
    })
    const started = Date.now()
    let lastExit: ExitStatus = "ok"
    yield* trace.sessionStart(scriptSessionStart(prepared))
    yield* Effect.addFinalizer(() =>
      trace.sessionEnd({
        total_turns: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        total_tool_calls: 0,
        total_shell_calls: 0,
        duration_ms: Date.now() - started,
        exit_status: lastExit
      }).pipe(Effect.ignore)
    )

    const task = <A, E, R>(fields: ScriptTask, run: (sent: RecordSend) => Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const taskStarted = Date.now()
        let failed: TraceWriteFailed | undefined
        const keep = (write: Effect.Effect<unknown, TraceWriteFailed>) =>
          write.pipe(Effect.asVoid, Effect.catchAll((error) => Effect.sync(() => void (failed ??= error))))
        if (fields.received !== undefined) {
          yield* trace.record("a2a_task_received", undefined, {
            task_id: fields.taskId,
            context_id: fields.contextId,
            message_id: fields.received.messageId,
            traceparent_from_caller: fields.received.traceparent
          })
        }
        yield* trace.taskStart({
          task_id: fields.taskId,
          context_id: fields.contextId,
          source: fields.source,
          origin: fields.origin,
          trust: fields.trust,
          lane: laneOf(fields.origin),
          ...(fields.delegationId === undefined ? {} : { delegation_id: fields.delegationId }),
          message_parts_bytes: fields.messageBytes,
          queued_ms: fields.queuedMs
        })
        const value = yield* run((sent) => keep(trace.record("a2a_send", undefined, sent))).pipe(
          Effect.onExit((exit) => {
            lastExit = exitStatus(exit)
            return keep(trace.taskEnd({
              task_id: fields.taskId,
              exit_status: lastExit,
              duration_ms: Date.now() - taskStarted,
              turns: 0,
              input_tokens: 0,
              output_tokens: 0,
              tool_calls: 0,
              shell_calls: 0,
              reopen_count: 0
            }))
          })
        )
        if (failed !== undefined) return yield* failed
        return value
      })

    return { task } satisfies ScriptTrace
  })
