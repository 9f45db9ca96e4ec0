/**
 * One agent task (spec §4.1–§4.6): turns until `end_turn` / `max_tokens` / `max_turns` / an
 * error. Each turn calls the driver (a `murmur:tool/run` guest in its own worker, request JSON
 * in `input.data`, its chunks streamed into the task), then dispatches every `tool_call` in order
 * (§4.4: shell allowlist, skill, WASM tool, else the dispatch error fed back to the model). Every
 * tool result becomes one `artifact` event; trace lines go through `Trace`; `out/result.txt` is
 * always written. Interruption (cancel) stops at once: the worker in flight is terminated by the
 * Sandbox's scope, and nothing after it runs. `task.md`, `out/result.txt` and `logs/guest.log` are
 * opened without following links (../sandbox/WorkdirFs.ts): a task that meets one (a tool may
 * plant it) fails naming it, and nothing is read or written where it leads.
 */
import { Effect, Either, Fiber, Option } from "effect"
import { type GuestHost, type GuestTemplate, Sandbox, type ToolSpec } from "../sandbox/Sandbox.js"
import { guestLog } from "../sandbox/GuestLog.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { CapsuleFailure, type TaskInput, type TaskIO } from "../services/Capsule.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import { Shell } from "../shell/Shell.js"
import { laneOf } from "../services/Task.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import { Trace } from "../records/Trace.js"
import type { TaskExitStatus } from "../records/TraceEvents.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import { delegateTask } from "../delegation/DelegateTask.js"
import { DelegationLauncher } from "../delegation/DelegationLauncher.js"
import { Conversations } from "./Conversations.js"
import { PeerFiles } from "../planes/PeerTools.js"
import { ShellCompletions } from "./ShellCompletions.js"
import { explainFailure, reasonContext } from "./FailureReason.js"
import { tokenCounter } from "./Tokens.js"
import { dispatchTool, type TaskCounts } from "./ToolDispatch.js"
import {
  assistantMessage,
  buildRequest,
  type Continuation,
  finalText,
  type Message,
  nextContinuation,
  outgoing,
  promptCacheKey,
  readDriverResult,
  resultText,
  taskText,
  type ToolCall,
  toolCalls,
  toolMessage,
  userMessage
} from "./DriverProtocol.js"
import { append, newTranscript, wireTracer } from "../records/WireTrace.js"

export interface AgentOutcome {
  /** What `task_end` records. */
  readonly exit: Extract<TaskExitStatus, "ok" | "failed" | "max_turns_reached">
  /** The final answer, or "error: …" (what `out/result.txt` holds). */
  readonly text: string
  readonly turns: number
}

/** A host-side error: the task fails with this message (`driver invocation failed: …`). */
export class AgentHostError extends Error {}

export const writeResult = (workdir: string, text: string) => WorkdirFs.attempt(() => WorkdirFs.write(workdir, "out/result.txt", text))

/** On a path that already fails the task: a refused `out/result.txt` is only logged. */
const writeFailedResult = (workdir: string, text: string) =>
  writeResult(workdir, text).pipe(Effect.catchAll((error) => Effect.logWarning(`out/result.txt not written: ${error.message}`)))

const noInput: GuestHost["requestInput"] = () => Effect.fail({ message: "request-input is not available to a driver" })

/** Session-wide sums for `session_end`, added to as each task ends. */
export interface SessionTotals {
  turns: number
  inputTokens: number
  outputTokens: number
  toolCalls: number
  shellCalls: number
  lastExit: Exclude<TaskExitStatus, "reopen_budget_exhausted">
}

export const emptyTotals = (): SessionTotals => ({ turns: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0, shellCalls: 0, lastExit: "ok" })

/** What every driver or tool run of this agent shares: what a warm pool prepares ahead. */
export const guestTemplate = (prepared: PreparedAgent, name: string, spec: ToolSpec): GuestTemplate => ({
  role: { kind: "tool", name },
  component: spec.component,
  grant: spec.grant,
  allowlist: prepared.allowlist,
  tools: prepared.tools,
  inTask: true,
  sessionId: prepared.sessionId,
  artifacts: prepared.artifacts
})

/** Runs one task; fails only with a host-side error (or `input-timeout`). */
export const runAgentTask = (prepared: PreparedAgent, input: TaskInput, io: TaskIO, totals: SessionTotals = emptyTotals()) =>
  Effect.gen(function*() {
    const sandbox = yield* Sandbox
    const shell = yield* Shell
    const trace = yield* Trace
    const countTokens = yield* tokenCounter
    // Outside a session that delivers completions (a library caller's own loop), nobody waits.
    const completions = yield* Effect.serviceOption(ShellCompletions)
    // Present when the capsule may delegate; the residue sources when the session has them.
    const launcher = yield* Effect.serviceOption(DelegationLauncher)
    const detachedWork = yield* Effect.serviceOption(DetachedRegistry)
    const delegations = yield* Effect.serviceOption(DelegationTracker)
    const peerFiles = yield* Effect.serviceOption(PeerFiles)
    const conversations = yield* Effect.serviceOption(Conversations)
    const started = Date.now()
    const counts: TaskCounts = { turns: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0, shellCalls: 0 }
    const phase = { name: "turn" as "turn" | "inference" | "input", turn: 0 }
    let timedOut = false
    const log = guestLog(prepared.workdir)
    yield* Effect.addFinalizer(() => log.close)
    // A failure's text names the configured endpoint and the grant to change, never a secret.
    const reasons = reasonContext(prepared)
    const explain = (text: string) => explainFailure(text, reasons)

    const traced = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) => effect.pipe(Effect.mapError((error) => new CapsuleFailure({ message: `agent loop failed: ${error.message}` })))
    // A trace line the next step does not need (task_start before the first driver call, an
    // `inference` line before its tool calls, the last one before the final writes) is written
    // while that step runs. Lines stay in order: each waits for the one before, and so does every
    // other line and the task's end (`settled`), where a failed write still fails the task.
    let inFlight: Fiber.Fiber<unknown, CapsuleFailure> | undefined
    const after = (fiber: typeof inFlight) => (fiber === undefined ? Effect.void : Effect.asVoid(Fiber.join(fiber)))
    const settled = Effect.suspend(() => after(inFlight))
    const ahead = <A>(line: Effect.Effect<A, CapsuleFailure>) =>
      Effect.suspend(() => {
        // The line before is the one in flight now, not when the fork runs (by then it is this one).
        const before = after(inFlight)
        return Effect.map(Effect.fork(Effect.zipRight(before, line)), (fiber) => {
          inFlight = fiber
          return Fiber.join(fiber)
        })
      })
    const endTask = (exit: Exclude<TaskExitStatus, "reopen_budget_exhausted">) =>
      settled.pipe(Effect.zipRight(Effect.sync(() => {
        totals.turns += counts.turns
        totals.inputTokens += counts.inputTokens
        totals.outputTokens += counts.outputTokens
        totals.toolCalls += counts.toolCalls
        totals.shellCalls += counts.shellCalls
        totals.lastExit = exit
      })), Effect.zipRight(traced(trace.taskEnd({
        task_id: input.taskId,
        exit_status: exit,
        duration_ms: Date.now() - started,
        turns: counts.turns,
        input_tokens: counts.inputTokens,
        output_tokens: counts.outputTokens,
        tool_calls: counts.toolCalls,
        shell_calls: counts.shellCalls,
        reopen_count: 0
      }))))

    // Written while the first driver call runs (the driver does not read it); tools, which may,
    // and the task's end wait for it.
    const taskFile = yield* Effect.fork(WorkdirFs.attempt(() => WorkdirFs.write(prepared.workdir, "task.md", input.text)))
    // A task from the wire is announced before it starts (§4.1 step 2); one the host started is not.
    const announced: Effect.Effect<unknown, CapsuleFailure> = input.provenance.hostSource !== undefined ? Effect.void : traced(trace.record("a2a_task_received", undefined, {
      task_id: input.taskId,
      context_id: input.contextId,
      message_id: input.messageId,
      traceparent_from_caller: input.provenance.traceparent ?? null
    }))
    const taskNode = yield* ahead(Effect.zipRight(announced, traced(trace.taskStart({
      task_id: input.taskId,
      context_id: input.contextId,
      source: input.provenance.hostSource ?? "a2a",
      origin: input.provenance.origin,
      trust: input.provenance.trust,
      lane: laneOf(input.provenance.origin),
      ...(input.provenance.delegationId === undefined ? {} : { delegation_id: input.provenance.delegationId }),
      message_parts_bytes: Buffer.byteLength(input.text),
      queued_ms: input.queuedMs ?? 0
    }))))

    const toolHost = (): GuestHost => ({
      text: io.text,
      thinking: io.thinking,
      requestInput: (prompt) =>
        Effect.gen(function*() {
          const before = phase.name
          phase.name = "input"
          const answer = yield* io.requestInput(prompt).pipe(Effect.tapError((error) => Effect.sync(() => void (timedOut ||= error.message === "input-timeout"))))
          phase.name = before
          return answer
        }),
      sendMessage: () => Effect.fail({ message: "message/send is not available to tools" }),
      stdout: log.write,
      stderr: log.write
    })

    // `traceparent`: the provider sees the turn's trace context (the gateway sets it on what it forwards).
    const runGuest = (name: string, spec: ToolSpec, data: string, host: GuestHost, traceparent?: string) =>
      sandbox.run({ ...guestTemplate(prepared, name, spec), deadlineSeconds: spec.deadlineSeconds, input: { data }, host, traceparent })

    // A refused task.md fails the task at its end; tools meanwhile run without it.
    const dispatch = (call: ToolCall, turn: number, parent: Effect.Effect<string, CapsuleFailure>) =>
      Effect.zipRight(Effect.ignore(Fiber.join(taskFile)), dispatchTool({
        prepared,
        taskId: input.taskId,
        counts,
        shell,
        runTool: (name, spec, data) => runGuest(name, spec, data, toolHost()),
        timedOut: () => timedOut,
        record: (type, parentId, fields) => Effect.zipRight(settled, traced(trace.record(type, parentId, fields))),
        recordAhead: (type, parentId, fields) => Effect.asVoid(ahead(traced(trace.record(type, parentId, fields)))),
        delegate: Option.isNone(launcher) || launcher.value.allowed.length === 0 ? undefined : (callInput) =>
          delegateTask(launcher.value, callInput, { taskId: input.taskId, contextId: input.contextId, trust: input.provenance.trust }),
        peer: Option.getOrUndefined(peerFiles),
        follow: (detached, completion) => Option.match(completions, { onNone: () => Effect.void, onSome: (inbox) => inbox.follow(detached, completion, input.provenance.trust) })
      }, call, turn, parent))

    const loop = Effect.gen(function*() {
      const transcript = newTranscript<Message>()
      const { messages } = transcript
      // Threaded: the context's earlier turns come first, reloaded before the first driver call;
      // each turn of this task is recorded as it completes (./Conversations.ts).
      // A record that passed its caps dropped its oldest turns: the trace says so, under the task.
      const remember = (turnMessages: ReadonlyArray<Message>) =>
        Option.isNone(conversations) ? Effect.void : Effect.flatMap(
          conversations.value.append(input.contextId, input.taskId, turnMessages),
          (trim) =>
            trim === undefined ? Effect.void : Effect.asVoid(ahead(Effect.flatMap(taskNode, (parent) =>
              traced(trace.record("conversation_trimmed", parent, { task_id: input.taskId, ...trim })))))
        )
      if (Option.isSome(conversations)) for (const message of yield* conversations.value.history(input.contextId)) append(transcript, message)
      const opening = userMessage(taskText(input.provenance, input.text))
      append(transcript, opening)
      yield* remember([opening])
      const wire = wireTracer(trace, prepared.system, prepared.toolList)
      let continuation: Continuation | undefined
      const cacheKey = promptCacheKey(prepared.project.manifest.name, prepared.project.manifest.version, input.contextId)
      const driverHost: GuestHost = { ...toolHost(), requestInput: noInput }
      // One turn: the driver's answer, then its tool calls. `undefined` goes on to the next turn.
      const oneTurn = (turn: number) => Effect.gen(function*() {
        phase.turn = turn
        counts.turns = turn + 1
        yield* io.status(`inference turn ${turn + 1}`)
        const send = outgoing(messages, continuation, input.contextId)
        const request = buildRequest({
          model: prepared.model,
          maxTokens: prepared.maxTokens,
          messages: send.messages,
          tools: prepared.toolList,
          system: prepared.system,
          continuationId: send.continuationId,
          promptCacheKey: cacheKey
        })
        const body = JSON.stringify(request)
        phase.name = "inference"
        const driving = yield* Effect.fork(Effect.either(Effect.flatMap(outgoingTraceHeaders, ({ traceparent }) =>
          runGuest(prepared.driver.name, prepared.driver.spec, body, driverHost, traceparent)).pipe(
          Effect.withSpan("AgentLoop.driver", { attributes: { taskId: input.taskId, turn: turn + 1, driver: prepared.driver.name } })
        )))
        // Counted while the driver's worker runs: the whole payload, as if nothing were threaded.
        const inputTokens = countTokens(send.continuationId === undefined ? body : JSON.stringify({ ...request, messages }))
        const ran = yield* Fiber.join(driving)
        phase.name = "turn"
        if (Either.isLeft(ran)) return yield* Effect.fail(new AgentHostError(ran.left.message))
        yield* io.endTurn
        const reply = readDriverResult(ran.right.result ?? { status: "passed", truncated: false, metadata: [] })
        if (Either.isLeft(reply)) return yield* Effect.fail(new AgentHostError(reply.left))
        if (reply.right._tag === "DriverFailed") return { exit: "failed", text: explain(`error: ${reply.right.text}`), turns: turn + 1 } satisfies AgentOutcome
        const { continuationId, raw, response } = reply.right
        continuation = nextContinuation(continuationId, input.contextId, messages.length)
        const calls = toolCalls(response)
        if (Either.isLeft(calls)) return yield* Effect.fail(new AgentHostError(calls.left))
        const outputTokens = countTokens(raw)
        counts.inputTokens += inputTokens
        counts.outputTokens += outputTokens
        const usage = response.usage
        const hashes = yield* traced(wire(transcript, send.messages.length, raw))
        const inferenceNode = yield* ahead(Effect.flatMap(taskNode, (parent) => traced(trace.record("inference", parent, {
          turn,
          task_id: input.taskId,
          input_tokens: inputTokens,
          output_tokens: outputTokens,
          decision: response.stop_reason === "tool_call" ? "tool_call" : response.stop_reason === "end_turn" ? "end_turn" : "text",
          stop_reason: response.stop_reason,
          tool_name: calls.right[0]?.name ?? null,
          ...(usage?.input_tokens === undefined ? {} : { input_tokens_actual: usage.input_tokens }),
          ...(usage?.output_tokens === undefined ? {} : { output_tokens_actual: usage.output_tokens }),
          ...(usage?.cached_tokens === undefined ? {} : { cached_tokens: usage.cached_tokens }),
          ...(usage?.cache_write_tokens === undefined ? {} : { cache_write_tokens: usage.cache_write_tokens }),
          ...hashes
        }))))
        switch (response.stop_reason) {
          case "end_turn":
          case "max_tokens":
            yield* remember([assistantMessage(response.content)])
            return { exit: "ok", text: finalText(response), turns: turn + 1 } satisfies AgentOutcome
          case "error":
            return { exit: "failed", text: explain(`error: ${response.error ?? ""}`), turns: turn + 1 } satisfies AgentOutcome
          case "tool_call":
            break
          default:
            return { exit: "failed", text: `error: unsupported stop_reason '${response.stop_reason}'`, turns: turn + 1 } satisfies AgentOutcome
        }
        if (calls.right.length === 0) {
          return { exit: "failed", text: "error: response stop_reason=tool_call but no tool_call blocks were present", turns: turn + 1 } satisfies AgentOutcome
        }
        const turnMessages = [assistantMessage(response.content)]
        append(transcript, turnMessages[0]!)
        for (const call of calls.right) {
          const { result, text } = yield* dispatch(call, turn, inferenceNode).pipe(
            Effect.tap(({ result }) => Effect.annotateCurrentSpan("outcome", result.status)),
            Effect.withSpan("AgentLoop.tool", { attributes: { taskId: input.taskId, turn: turn + 1, tool: call.name } })
          )
          yield* io.artifact(call.name, resultText(result))
          const tool = toolMessage(call.id, result.status !== "passed", text)
          turnMessages.push(tool)
          append(transcript, tool)
        }
        yield* remember(turnMessages)
        return undefined
      })
      for (let turn = 0; turn < prepared.maxTurns; turn++) {
        const done = yield* oneTurn(turn).pipe(Effect.withSpan("AgentLoop.turn", { attributes: { taskId: input.taskId, turn: turn + 1 } }))
        if (done !== undefined) return done
      }
      return { exit: "max_turns_reached", text: `error: inference loop exceeded ${prepared.maxTurns} turns`, turns: prepared.maxTurns } satisfies AgentOutcome
    })

    const outcome = yield* loop.pipe(
      Effect.catchIf((error): error is AgentHostError => error instanceof AgentHostError, (error) =>
        Effect.gen(function*() {
          const reason = explain(error.message)
          yield* writeFailedResult(prepared.workdir, `error: ${reason}`)
          yield* endTask("failed")
          return yield* new CapsuleFailure({ message: `driver invocation failed: ${reason}` })
        })),
      Effect.tapError((error) => error.message === "input-timeout" ? writeFailedResult(prepared.workdir, "error: input-timeout").pipe(Effect.zipRight(Effect.ignore(endTask("failed")))) : Effect.void),
      Effect.onInterrupt(() =>
        Effect.gen(function*() {
          yield* writeFailedResult(prepared.workdir, "error: task canceled")
          // What keeps running after this cancel (spec §7.3), named as the residue names it.
          const work = Option.isSome(detachedWork) ? yield* detachedWork.value.list() : []
          const children = Option.isSome(delegations) ? yield* delegations.value.list() : []
          yield* Effect.exit(settled)
          yield* trace.record("task_canceled", yield* taskNode, {
            task_id: input.taskId,
            turn: phase.turn,
            phase: phase.name,
            detached_work_ids: work.map((item) => item.work_id),
            delegation_ids: children.map((item) => item.delegation_id)
          })
          yield* endTask("canceled")
        }).pipe(Effect.ignore)
      )
    )
    const finished = yield* Effect.either(Effect.all([Fiber.join(taskFile), writeResult(prepared.workdir, outcome.text), log.refused]))
    if (Either.isLeft(finished)) {
      yield* writeFailedResult(prepared.workdir, `error: ${finished.left.message}`)
      yield* endTask("failed")
      return yield* new CapsuleFailure({ message: finished.left.message })
    }
    yield* endTask(outcome.exit)
    return outcome
  }).pipe(Effect.scoped)
