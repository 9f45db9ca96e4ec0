/**
 * One agent task (spec §4.1–§4.6): turns until `end_turn` / `max_tokens` / `max_turns` / an
 * error. Each turn calls the driver (a `murmur:tool/run` guest in its own worker, request JSON
 * in `input.data`, its chunks streamed into the task), then dispatches every `tool_call` in order
 * (§4.4: shell allowlist, skill, WASM tool, else the dispatch error fed back to the model). Every
 * tool result becomes one `artifact` event; trace lines go through `Trace`; `out/result.txt` is
 * always written. Interruption (cancel) stops at once: the worker in flight is terminated by the
 * Sandbox's scope, and nothing after it runs. `task.md`, `out/result.txt` and `logs/guest.log` are
 * opened without following links (../records/WorkdirFs.ts): a task that meets one (a tool may
 * plant it) fails naming it, and nothing is read or written where it leads.
 */
import { Data, Effect, Either, Fiber, Option } from "effect"
import { type GuestHost, type GuestTemplate, Sandbox, type ToolSpec } from "../sandbox/Sandbox.js"
import { guestLog } from "../sandbox/GuestLog.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { CapsuleFailure, INPUT_TIMEOUT, type TaskInput, type TaskIO } from "../services/Capsule.js"
import { parseAllowList } from "../project/NetworkPolicy.js"
import { stageAttachments } from "./Attachments.js"
import { outputFiles } from "./OutputFiles.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import { Shell } from "../shell/Shell.js"
import { laneOf } from "../services/Task.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import { Trace } from "../records/Trace.js"
import { type TraceAhead, traceAhead } from "../records/TraceAhead.js"
import type { TaskExitStatus } from "../records/TraceEvents.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import { delegateTask } from "../delegation/DelegateTask.js"
import { DelegationLauncher } from "../delegation/DelegationLauncher.js"
import { Conversations } from "./Conversations.js"
import { PeerFiles } from "../planes/PeerTools.js"
import { ShellCompletions } from "./ShellCompletions.js"
import { explainFailure, reasonContext } from "./FailureReason.js"
import { type TokenCounter, tokenCounter } from "./Tokens.js"
import { type Dispatched, dispatchTool, type ShellSeen, type TaskCounts } from "./ToolDispatch.js"
import { errorResult } from "../shell/ShellGrant.js"
import { join } from "node:path"
import { SandboxError } from "../sandbox/SandboxError.js"
import { explainGuestFailure } from "../sandbox/GuestFailure.js"
import { secretsOf } from "./FailureReason.js"
import { runPlan } from "./SubmitPlan.js"
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
import { append, newTranscript, type Transcript, wireTracer } from "../records/WireTrace.js"
import { appendEval, evalLine, JUDGE_SYSTEM, type Judgement, judgePrompt, verdictOf } from "./EvalScores.js"
import { type CeilingReached, ceilingText, type SpendGuard } from "./SpendCeiling.js"
import type { WorkdirBreach, WorkdirQuota } from "../shell/WorkdirQuota.js"
import type { HookCallContext, Hooks } from "../hooks/Hooks.js"
import { compactIfNeeded, type CompactionSettings } from "./Compaction.js"
import { complete, hookServices, type HookServiceEnv, type HookTaskView } from "./HookServices.js"
import {
  inferenceArtifacts,
  observeShell,
  observeToolCall,
  policyDecision,
  reopenedText,
  reopenWanted,
  taskStartSeeds,
  type TaskHookEnv
} from "./TaskHooks.js"


export interface AgentOutcome {
  /** What `task_end` records. */
  readonly exit: Extract<TaskExitStatus, "ok" | "failed" | "max_turns_reached" | "spend_ceiling_reached" | "reopen_budget_exhausted">
  /** The final answer, or "error: …" (what `out/result.txt` holds). */
  readonly text: string
  readonly turns: number
}

/** A host-side error: the task fails with this message (`driver invocation failed: …`). */
export class AgentHostError extends Data.TaggedError("AgentHostError")<{ readonly message: string }> {}

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

/** What every task of one agent session shares, built once by the capsule's layer (./AgentCapsule.ts). */
export interface AgentEnv {
  readonly prepared: PreparedAgent
  readonly sandbox: Sandbox["Type"]
  readonly shell: Shell["Type"]
  readonly trace: Trace["Type"]
  /** The session's sums, added to as each task ends. */
  readonly totals: SessionTotals
  /** `ShellCompletions.none` in a session that takes no further tasks: nobody waits. */
  readonly completions: ShellCompletions["Type"]
  /** `DelegationLauncher.disabled` (no `allowed` names) when the capsule may not delegate. */
  readonly launcher: DelegationLauncher["Type"]
  /** The residue sources a cancel names. */
  readonly detachedWork: DetachedRegistry["Type"]
  readonly delegations: DelegationTracker["Type"]
  /** The peer tools, when the manifest offers any. */
  readonly peerFiles: Option.Option<PeerFiles["Type"]>
  /** `Conversations.stateless` unless `lifecycle.conversation: threaded`. */
  readonly conversations: Conversations["Type"]
  /** The session's and the machine's token ceilings, checked before each provider call. */
  readonly spend: SpendGuard
  /** `resources.workdir_max_bytes`: past it the session ends (E-RUN-013). */
  readonly quota: WorkdirQuota
  /** The door's URL, when the session has one: large output files are linked on its resource plane. */
  readonly doorUrl?: string | undefined
  /** The capsule's hooks (none declared: every call is a no-op). */
  readonly hooks: Hooks
  /** What hook imports reach (../hooks/Hooks.ts `HookServices`). */
  readonly hookEnv: HookServiceEnv
}

/** One task in progress: what it was handed, and what it has done so far. */
interface TaskRun {
  readonly env: AgentEnv
  readonly input: TaskInput
  readonly io: TaskIO
  readonly started: number
  readonly counts: TaskCounts
  /** The tools the task called, in order (`tool_sequence`). */
  readonly tools: Array<string>
  /** Where the task is, for `task_canceled`, whether a request-input of it timed out, and how often it was reopened. */
  readonly state: { phase: "turn" | "inference" | "input"; turn: number; timedOut: boolean; reopens: number }
  /** The task as its hooks' task-io and conversation/read see it. */
  readonly view: HookTaskView
  readonly countTokens: TokenCounter
  readonly log: ReturnType<typeof guestLog>
  /** A failure's text names the configured endpoint and the grant to change, never a secret. */
  readonly explain: (text: string) => string
  readonly lines: TraceAhead<CapsuleFailure>
  /** The `task_start` line's id, once it is written. */
  readonly taskNode: Effect.Effect<string, CapsuleFailure>
  /** `task.md`, written while the first driver call runs (the driver does not read it). */
  readonly taskFile: Fiber.Fiber<void, WorkdirFs.WorkdirPathRefused>
}

/** A trace write that failed fails the task as a host error. */
const traced = <A, E extends { readonly message: string }, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.mapError((error) => new CapsuleFailure({ reason: "HostError", message: `agent loop failed: ${error.message}` })))

/** The capsule's `network.allow`, validated when the manifest was read. */
const networkRulesOf = (prepared: AgentEnv["prepared"]) =>
  Either.getOrElse(parseAllowList(prepared.project.manifest.capabilities.network?.allow ?? []), () => [])

/** Opens the task: its guest log, `task.md` and its first trace lines, all under way. */
const beginTask = (env: AgentEnv, input: TaskInput, io: TaskIO) =>
  Effect.gen(function*() {
    const { prepared, trace } = env
    const started = Date.now()
    const countTokens = yield* tokenCounter
    const log = guestLog(prepared.workdir)
    yield* Effect.addFinalizer(() => log.close)
    const reasons = reasonContext(prepared)
    const lines = traceAhead<CapsuleFailure>()
    // Tools, which may read task.md, and the task's end wait for it.
    const taskFile = yield* Effect.fork(WorkdirFs.attempt(() => WorkdirFs.write(prepared.workdir, "task.md", input.text)))
    // A task from the wire is announced before it starts (§4.1 step 2); one the host started is not.
    const announced: Effect.Effect<unknown, CapsuleFailure> = input.provenance.hostSource !== undefined ? Effect.void : traced(trace.record("a2a_task_received", undefined, {
      task_id: input.taskId,
      context_id: input.contextId,
      message_id: input.messageId,
      traceparent_from_caller: input.provenance.traceparent ?? null
    }))
    const taskNode = yield* lines.ahead(Effect.zipRight(announced, traced(trace.taskStart({
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
    return {
      env,
      input,
      io,
      started,
      counts: { turns: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0, shellCalls: 0 },
      tools: [],
      state: { phase: "turn", turn: 0, timedOut: false, reopens: 0 },
      view: { taskId: input.taskId, contextId: input.contextId, original: input.text, asGiven: input.text, output: undefined, turn: 0 },
      countTokens,
      log,
      explain: (text) => explainFailure(text, reasons),
      lines,
      taskNode,
      taskFile
    } satisfies TaskRun
  })

/** Adds the task to the session's sums and writes its `task_end`, after every line before it. */
const endTask = (task: TaskRun, exit: TaskExitStatus) =>
  task.lines.settled.pipe(Effect.zipRight(Effect.sync(() => {
    const { counts, env: { totals } } = task
    totals.turns += counts.turns
    totals.inputTokens += counts.inputTokens
    totals.outputTokens += counts.outputTokens
    totals.toolCalls += counts.toolCalls
    totals.shellCalls += counts.shellCalls
    // session_end's status has no reopen arm: a task its verifier kept rejecting failed.
    totals.lastExit = exit === "reopen_budget_exhausted" ? "failed" : exit
  })), Effect.zipRight(traced(task.env.trace.taskEnd({
    task_id: task.input.taskId,
    exit_status: exit,
    duration_ms: Date.now() - task.started,
    turns: task.counts.turns,
    input_tokens: task.counts.inputTokens,
    output_tokens: task.counts.outputTokens,
    tool_calls: task.counts.toolCalls,
    shell_calls: task.counts.shellCalls,
    reopen_count: task.state.reopens
  }))), Effect.zipRight(scoreTask(task, exit)))

/** `observability.eval`: the task's scores, a line of `eval.jsonl` (./EvalScores.ts). */
const scoreTask = (task: TaskRun, exit: TaskExitStatus) =>
  Effect.gen(function*() {
    const evaluation = task.env.prepared.project.manifest.observability?.eval
    if (evaluation === undefined || evaluation.scorers.length === 0) return
    const { counts, input } = task
    const judgement = evaluation.scorers.some((scorer) => scorer.type === "llm_judge") ? yield* judge(task, exit) : undefined
    yield* appendEval(task.env.prepared.records, evalLine(evaluation.scorers, evaluation.datasetId, {
      taskId: input.taskId,
      contextId: input.contextId,
      exit,
      turns: counts.turns,
      tokens: counts.inputTokens + counts.outputTokens,
      tools: task.tools,
      judgement
    }))
  })

/** `llm_judge`: the capsule's own model grades the answer (never for a canceled task: nobody waits for it). */
const judge = (task: TaskRun, exit: TaskExitStatus): Effect.Effect<Judgement> =>
  exit === "canceled"
    ? Effect.succeed({ skipped: "the task was canceled" })
    : complete(task.env.hookEnv, {
      messages: [userMessage(judgePrompt(task.view.original, task.view.output))],
      system: JUDGE_SYSTEM,
      model: undefined,
      origin: "eval:llm_judge"
    }, task.view).pipe(
      Effect.map((done) => verdictOf(done.text)),
      Effect.catchAll((error) => Effect.succeed({ skipped: `the judge could not be asked: ${error.message}` }))
    )

/** What a tool run can do: its chunks go to the task, its request-input puts the task in `input-required`. */
const toolHost = (task: TaskRun): GuestHost => ({
  text: task.io.text,
  thinking: task.io.thinking,
  requestInput: (prompt) =>
    Effect.gen(function*() {
      const before = task.state.phase
      task.state.phase = "input"
      const answer = yield* task.io.requestInput(prompt).pipe(Effect.tapError((error) => Effect.sync(() => void (task.state.timedOut ||= error.reason === "InputTimeout"))))
      task.state.phase = before
      return answer
    }),
  sendMessage: () => Effect.fail({ message: "message/send is not available to tools" }),
  stdout: task.log.write,
  stderr: task.log.write
})

// `traceparent`: the provider sees the turn's trace context (the gateway sets it on what it forwards).
// A failure's message carries the guest's last error line (./GuestFailure.ts), for the model and the task.
const runGuest = (task: TaskRun, name: string, spec: ToolSpec, data: string, host: GuestHost, traceparent?: string) =>
  task.env.sandbox.run({ ...guestTemplate(task.env.prepared, name, spec), deadlineSeconds: spec.deadlineSeconds, input: { data }, host, traceparent }).pipe(
    Effect.mapError((error) => new SandboxError({ ...error, message: explainGuestFailure(error, join(task.env.prepared.workdir, "logs", "guest.log"), secretsOf(task.env.prepared)) }))
  )

/** The task's side of its hooks: their faults and lines hang under the task's line. */
const taskHooks = (task: TaskRun): TaskHookEnv => ({
  hooks: task.env.hooks,
  taskId: task.input.taskId,
  context: Effect.map(task.taskNode, (parent): HookCallContext => ({ parent, services: hookServices(task.env.hookEnv, task.view) })),
  record: (eventType, fields) => Effect.asVoid(task.lines.ahead(Effect.flatMap(task.taskNode, (parent) => traced(task.env.trace.record(eventType, parent, fields)))))
})

/**
 * One tool call, between its policy decision (a `deny` hook may refuse it: the model reads why)
 * and its observation (`on-tool-call`, then `on-shell` for a shell command that finished).
 */
const dispatch = (task: TaskRun, call: ToolCall, turn: number, parent: Effect.Effect<string, CapsuleFailure>): Effect.Effect<Dispatched, CapsuleFailure> =>
  Effect.gen(function*() {
    const hooks = taskHooks(task)
    const shellBinary = task.env.prepared.shell.allow.includes(call.name) ? call.name : undefined
    const denial = yield* policyDecision(hooks, call, turn, shellBinary)
    if (denial !== undefined) {
      const result = errorResult(`call denied by hook '${denial.hook}': ${denial.reason}`)
      return { result, text: resultText(result) } satisfies Dispatched
    }
    const began = Date.now()
    let shellSeen: ShellSeen | undefined
    const dispatched = yield* dispatchCall(task, call, turn, parent, (seen) => Effect.sync(() => void (shellSeen = seen)))
    const status = dispatched.result.status === "passed" ? "ok" : "error"
    yield* observeToolCall(hooks, call, turn, { outputBytes: Buffer.byteLength(dispatched.text), durationMs: Date.now() - began, status })
    if (shellSeen !== undefined) yield* observeShell(hooks, call, turn, shellSeen)
    return dispatched
  })

/** One tool call. A refused task.md fails the task at its end; tools meanwhile run without it. */
const dispatchCall = (task: TaskRun, call: ToolCall, turn: number, parent: Effect.Effect<string, CapsuleFailure>, shellFinished: (seen: ShellSeen) => Effect.Effect<void>) => {
  const { env, input } = task
  const { launcher } = env
  return Effect.zipRight(Effect.ignore(Fiber.join(task.taskFile)), dispatchTool({
    prepared: env.prepared,
    taskId: input.taskId,
    counts: task.counts,
    shell: env.shell,
    quota: env.quota,
    runTool: (name, spec, data) => runGuest(task, name, spec, data, toolHost(task)),
    timedOut: () => task.state.timedOut,
    record: (type, parentId, fields) => Effect.zipRight(task.lines.settled, traced(env.trace.record(type, parentId, fields))),
    recordAhead: (type, parentId, fields) => Effect.asVoid(task.lines.ahead(traced(env.trace.record(type, parentId, fields)))),
    delegate: launcher.allowed.length === 0 ? undefined : (callInput) =>
      delegateTask(launcher, callInput, { taskId: input.taskId, contextId: input.contextId, trust: input.provenance.trust }),
    peer: Option.getOrUndefined(env.peerFiles),
    follow: (detached, completion) => env.completions.follow(detached, completion, input.provenance.trust),
    plan: env.prepared.project.manifest.capabilities.plan?.submit === true
      ? (planCall) => runPlan({ runStep: (step) => dispatch(task, step, turn, parent), record: taskHooks(task).record, taskId: input.taskId }, planCall)
      : undefined,
    shellFinished
  }, call, turn, parent))
}

/**
 * Threaded: each turn of this task is recorded as it completes (./Conversations.ts). A record
 * that passed its caps dropped its oldest turns: the trace says so, under the task.
 */
const remember = (task: TaskRun, turnMessages: ReadonlyArray<Message>) => {
  const { conversations, trace } = task.env
  return Effect.flatMap(conversations.append(task.input.contextId, task.input.taskId, turnMessages), (trim) =>
    trim === undefined ? Effect.void : Effect.asVoid(task.lines.ahead(Effect.flatMap(task.taskNode, (parent) =>
      traced(trace.record("conversation_trimmed", parent, { task_id: task.input.taskId, ...trim }))))))
}

/** The task's side of the conversation with its driver, across its turns. */
interface Dialogue {
  readonly transcript: Transcript<Message>
  continuation: Continuation | undefined
  readonly wire: ReturnType<typeof wireTracer>
  readonly cacheKey: string
  readonly driverHost: GuestHost
}

/**
 * Threaded: the context's earlier turns come first, reloaded before the first driver call; then
 * what `on-task-start` hooks seed (within `context.seed_budget`; not kept in the thread, a memory
 * hook seeds afresh each task), then the task.
 */
const openDialogue = (task: TaskRun) =>
  Effect.gen(function*() {
    const { conversations, prepared, trace } = task.env
    const transcript = newTranscript<Message>()
    const history = yield* conversations.history(task.input.contextId)
    const context = prepared.project.manifest.context
    const window = context?.maxTokens ?? 0
    const seeds = yield* taskStartSeeds(taskHooks(task), () => ({
      taskId: task.input.taskId,
      contextId: task.input.contextId,
      source: task.input.provenance.hostSource ?? "a2a",
      inputBytes: Buffer.byteLength(task.input.text),
      budgetTokens: Math.floor(window * (context?.seedBudget ?? 0)),
      contextWindow: window,
      priorTokens: history.length === 0 ? 0 : task.countTokens(JSON.stringify(history))
    }), { tokens: Math.floor(window * (context?.seedBudget ?? 0)), margin: context?.seedOverflowMargin ?? 0 }, (message) => task.countTokens(JSON.stringify(message)))
    for (const message of [...history, ...seeds]) append(transcript, message)
    const opening = userMessage(taskText(task.input.provenance, task.input.text))
    append(transcript, opening)
    yield* remember(task, [opening])
    return {
      transcript,
      continuation: undefined,
      wire: wireTracer(trace, prepared.system, prepared.toolList),
      cacheKey: promptCacheKey(prepared.project.manifest.name, prepared.project.manifest.version, task.input.contextId),
      driverHost: { ...toolHost(task), requestInput: noInput }
    } satisfies Dialogue
  })

/**
 * Under `context.max_tokens`: a request that would reach the compaction threshold first has its
 * history compacted (./Compaction.ts); a threaded context's record becomes the compacted history.
 */
const compactFirst = (task: TaskRun, dialogue: Dialogue, turn: number, settings: CompactionSettings) =>
  Effect.gen(function*() {
    const { prepared } = task.env
    const hooks = taskHooks(task)
    const count = (messages: ReadonlyArray<Message>) =>
      task.countTokens(JSON.stringify(buildRequest({
        model: prepared.model,
        maxTokens: prepared.maxTokens,
        messages,
        tools: prepared.toolList,
        system: prepared.system,
        promptCacheKey: dialogue.cacheKey
      })))
    const { transcript } = dialogue
    const replaced = yield* compactIfNeeded({
      hooks: task.env.hooks,
      context: yield* hooks.context,
      taskId: task.input.taskId,
      turn,
      count,
      summarise: (messages, system, model) => Effect.map(complete(task.env.hookEnv, { messages, system, model, origin: "compaction" }, task.view), (done) => done.text),
      record: hooks.record,
      dump: (line) => Effect.ignore(WorkdirFs.attempt(() => WorkdirFs.append(prepared.workdir, "out/compaction-summaries.jsonl", `${JSON.stringify(line)}\n`)))
    }, settings, transcript.messages, count(transcript.messages)).pipe(
      Effect.catchTag("CompactionFailed", (error) => new AgentHostError({ message: error.message }))
    )
    if (replaced === undefined) return
    transcript.messages.length = 0
    transcript.ids.length = 0
    transcript.shas.length = 0
    for (const message of replaced) append(transcript, message)
    // The driver's continuation held the old history.
    dialogue.continuation = undefined
    yield* task.env.conversations.replace(task.input.contextId, task.input.taskId, replaced)
  })

/** The driver's answer to this turn's request, and the request's token count. */
const drive = (task: TaskRun, dialogue: Dialogue, turn: number) =>
  Effect.gen(function*() {
    const { prepared } = task.env
    if (prepared.compaction !== undefined) yield* compactFirst(task, dialogue, turn, prepared.compaction)
    const { messages } = dialogue.transcript
    const send = outgoing(messages, dialogue.continuation, task.input.contextId)
    const request = buildRequest({
      model: prepared.model,
      maxTokens: prepared.maxTokens,
      messages: send.messages,
      tools: prepared.toolList,
      system: prepared.system,
      continuationId: send.continuationId,
      promptCacheKey: dialogue.cacheKey
    })
    const body = JSON.stringify(request)
    task.state.phase = "inference"
    const driving = yield* Effect.fork(Effect.either(Effect.flatMap(outgoingTraceHeaders, ({ traceparent }) =>
      runGuest(task, prepared.driver.name, prepared.driver.spec, body, dialogue.driverHost, traceparent)).pipe(
      Effect.withSpan("AgentLoop.driver", { attributes: { taskId: task.input.taskId, turn: turn + 1, driver: prepared.driver.name } })
    )))
    // Counted while the driver's worker runs: the whole payload, as if nothing were threaded.
    const inputTokens = task.countTokens(send.continuationId === undefined ? body : JSON.stringify({ ...request, messages }))
    const ran = yield* Fiber.join(driving)
    task.state.phase = "turn"
    if (Either.isLeft(ran)) return yield* new AgentHostError({ message: ran.left.message })
    return { ran: ran.right, sent: send.messages.length, inputTokens }
  })

/** The turn's tool calls, in order, each result an artifact of the task and a message for the model. */
const runCalls = (task: TaskRun, dialogue: Dialogue, content: Parameters<typeof assistantMessage>[0], calls: ReadonlyArray<ToolCall>, turn: number, inferenceNode: Effect.Effect<string, CapsuleFailure>) =>
  Effect.gen(function*() {
    const turnMessages = [assistantMessage(content)]
    append(dialogue.transcript, turnMessages[0]!)
    for (const call of calls) {
      task.tools.push(call.name)
      const { result, text } = yield* dispatch(task, call, turn, inferenceNode).pipe(
        Effect.tap(({ result }) => Effect.annotateCurrentSpan("outcome", result.status)),
        Effect.withSpan("AgentLoop.tool", { attributes: { taskId: task.input.taskId, turn: turn + 1, tool: call.name } })
      )
      yield* task.io.artifact(call.name, resultText(result))
      const tool = toolMessage(call.id, result.status !== "passed", text)
      turnMessages.push(tool)
      append(dialogue.transcript, tool)
    }
    yield* remember(task, turnMessages)
  })

/** One turn: the driver's answer, then its tool calls. `undefined` goes on to the next turn. */
const runTurn = Effect.fn("AgentLoop.turn")(function*(task: TaskRun, dialogue: Dialogue, turn: number) {
  const { input, counts } = task
  yield* Effect.annotateCurrentSpan({ taskId: input.taskId, turn: turn + 1 })
  task.state.turn = turn
  counts.turns = turn + 1
  yield* task.io.status(`inference turn ${turn + 1}`)
  const { ran, sent, inputTokens } = yield* drive(task, dialogue, turn)
  yield* task.io.endTurn
  const reply = readDriverResult(ran.result ?? { status: "passed", truncated: false, metadata: [] })
  if (Either.isLeft(reply)) return yield* new AgentHostError({ message: reply.left })
  if (reply.right._tag === "DriverFailed") return { exit: "failed", text: task.explain(`error: ${reply.right.text}`), turns: turn + 1 } satisfies AgentOutcome
  const { continuationId, raw, response } = reply.right
  dialogue.continuation = nextContinuation(continuationId, input.contextId, dialogue.transcript.messages.length)
  const calls = toolCalls(response)
  if (Either.isLeft(calls)) return yield* new AgentHostError({ message: calls.left })
  const outputTokens = task.countTokens(raw)
  counts.inputTokens += inputTokens
  counts.outputTokens += outputTokens
  const usage = response.usage
  // What the provider says the call cost, else what was counted here.
  yield* task.env.spend.spend((usage?.input_tokens ?? inputTokens) + (usage?.output_tokens ?? outputTokens)).pipe(
    Effect.mapError((error) => new AgentHostError({ message: `the spend ledger could not be written: ${error.message}` }))
  )
  const hashes = yield* traced(dialogue.wire(dialogue.transcript, sent, raw))
  const decision = response.stop_reason === "tool_call" ? "tool_call" : response.stop_reason === "end_turn" ? "end_turn" : "text"
  const inferenceNode = yield* task.lines.ahead(Effect.flatMap(task.taskNode, (parent) => traced(task.env.trace.record("inference", parent, {
    turn,
    task_id: input.taskId,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    decision,
    stop_reason: response.stop_reason,
    tool_name: calls.right[0]?.name ?? null,
    ...(usage?.input_tokens === undefined ? {} : { input_tokens_actual: usage.input_tokens }),
    ...(usage?.output_tokens === undefined ? {} : { output_tokens_actual: usage.output_tokens }),
    ...(usage?.cached_tokens === undefined ? {} : { cached_tokens: usage.cached_tokens }),
    ...(usage?.cache_write_tokens === undefined ? {} : { cache_write_tokens: usage.cache_write_tokens }),
    ...hashes
  }))))
  const artifacts = yield* inferenceArtifacts(taskHooks(task), {
    turn,
    inputTokens,
    outputTokens,
    decision,
    toolName: calls.right[0]?.name,
    prompt: undefined,
    output: finalText(response),
    tools: undefined
  })
  for (const { hook, text } of artifacts) yield* task.io.artifact(hook, text)
  switch (response.stop_reason) {
    case "end_turn":
    case "max_tokens": {
      // Kept in the transcript too: a reopened task goes on from its answer.
      const answer = assistantMessage(response.content)
      append(dialogue.transcript, answer)
      yield* remember(task, [answer])
      return { exit: "ok", text: finalText(response), turns: turn + 1 } satisfies AgentOutcome
    }
    case "error":
      return { exit: "failed", text: task.explain(`error: ${response.error ?? ""}`), turns: turn + 1 } satisfies AgentOutcome
    case "tool_call":
      break
    default:
      return { exit: "failed", text: `error: unsupported stop_reason '${response.stop_reason}'`, turns: turn + 1 } satisfies AgentOutcome
  }
  if (calls.right.length === 0) {
    return { exit: "failed", text: "error: response stop_reason=tool_call but no tool_call blocks were present", turns: turn + 1 } satisfies AgentOutcome
  }
  yield* runCalls(task, dialogue, response.content, calls.right, turn, inferenceNode)
  return undefined
})

/** A limit reached before the turn's provider call: its line under the task, and the task ends there. */
const limitStop = (task: TaskRun, eventType: string, turn: number, fields: object, outcome: AgentOutcome) =>
  Effect.as(
    task.lines.ahead(Effect.flatMap(task.taskNode, (parent) => traced(task.env.trace.record(eventType, parent, { task_id: task.input.taskId, turn, ...fields })))),
    outcome
  )

const ceilingStop = (task: TaskRun, reached: CeilingReached, turn: number) =>
  limitStop(task, "spend_ceiling_reached", turn, { key: reached.key, spent_tokens: reached.spent, limit_tokens: reached.limit }, {
    exit: "spend_ceiling_reached",
    text: ceilingText(reached),
    turns: turn
  })

/** The workdir passed its budget: the task ends failed with E-RUN-013. */
const quotaStop = (task: TaskRun, breach: WorkdirBreach, turn: number) =>
  limitStop(task, "workdir_limit_exceeded", turn, { bytes: breach.bytes, limit_bytes: breach.limit }, {
    exit: "failed",
    text: `error: ${breach.message}`,
    turns: turn
  })

/**
 * The task's attempts: turns until one ends it, then `on-task-end`. A hook's `reopen-task` sends
 * it back through the loop with the reason as feedback while `lifecycle.max_task_reopens` and
 * `max_turns` (counted across attempts) allow; past them the task ends `reopen_budget_exhausted`.
 */
const turns = (task: TaskRun) =>
  Effect.gen(function*() {
    const dialogue = yield* openDialogue(task)
    const { lifecycle, maxTurns, workdir } = task.env.prepared
    const hooks = taskHooks(task)
    const feedback: Array<{ readonly hook: string; readonly reason: string }> = []
    let from = 0
    while (true) {
      const outcome = yield* attempt(task, dialogue, from)
      task.view.output = outcome.text
      const wanted = yield* reopenWanted(hooks, outcome.exit)
      if (wanted === undefined) return outcome
      if (task.state.reopens >= lifecycle.maxTaskReopens || outcome.turns >= maxTurns) {
        yield* hooks.record("reopen_budget_exhausted", {
          task_id: task.input.taskId,
          hook_name: wanted.hook,
          reason: wanted.reason,
          reopen_count: task.state.reopens,
          max_task_reopens: lifecycle.maxTaskReopens,
          turns: outcome.turns,
          max_turns: maxTurns
        })
        return {
          exit: "reopen_budget_exhausted",
          text: `error: reopen budget exhausted (lifecycle.max_task_reopens ${lifecycle.maxTaskReopens}, inference.max_turns ${maxTurns}): hook '${wanted.hook}' still wants the task reopened: ${wanted.reason}`,
          turns: outcome.turns
        } satisfies AgentOutcome
      }
      task.state.reopens++
      feedback.push(wanted)
      const text = reopenedText(task.input.text, feedback)
      yield* WorkdirFs.attempt(() => WorkdirFs.write(workdir, "task.md", text)).pipe(Effect.mapError((error) => new AgentHostError({ message: error.message })))
      task.view.asGiven = text
      task.view.output = undefined
      yield* hooks.record("task_reopened", { task_id: task.input.taskId, hook_name: wanted.hook, reason: wanted.reason, reopen_number: task.state.reopens })
      yield* task.io.status(`task reopened (${task.state.reopens} of ${lifecycle.maxTaskReopens}) by ${wanted.hook}: ${wanted.reason}`)
      const message = userMessage(`## Reopen feedback\n\n- ${wanted.hook}: ${wanted.reason}`)
      append(dialogue.transcript, message)
      yield* remember(task, [message])
      from = outcome.turns
    }
  })

/** Turns from `from` until one ends the task, `max_turns` does, a spend ceiling, or the workdir's budget. */
const attempt = (task: TaskRun, dialogue: Dialogue, from: number) =>
  Effect.gen(function*() {
    const { maxTurns } = task.env.prepared
    for (let turn = from; turn < maxTurns; turn++) {
      const ceiling = yield* task.env.spend.reached.pipe(
        Effect.mapError((error) => new AgentHostError({ message: `the spend ledger could not be read: ${error.message}` }))
      )
      if (ceiling !== undefined) return yield* ceilingStop(task, ceiling, turn)
      const over = task.env.quota.found()
      if (over !== undefined) return yield* quotaStop(task, over, turn)
      const done = yield* runTurn(task, dialogue, turn)
      if (done !== undefined) return done
    }
    return { exit: "max_turns_reached", text: `error: inference loop exceeded ${maxTurns} turns`, turns: maxTurns } satisfies AgentOutcome
  })

/** A host-side error ends the task `failed`, its reason in `out/result.txt` and the failure. */
const failedByHost = (task: TaskRun, error: AgentHostError) =>
  Effect.gen(function*() {
    const reason = task.explain(error.message)
    yield* writeFailedResult(task.env.prepared.workdir, `error: ${reason}`)
    yield* endTask(task, "failed")
    return yield* new CapsuleFailure({ reason: "HostError", message: `driver invocation failed: ${reason}` })
  })

/** A cancel: `task_canceled` names where the task was and what keeps running after it (spec §7.3). */
const canceled = (task: TaskRun) =>
  Effect.gen(function*() {
    const { detachedWork, delegations, prepared, trace } = task.env
    yield* writeFailedResult(prepared.workdir, "error: task canceled")
    const work = yield* detachedWork.list()
    const children = yield* delegations.list()
    yield* Effect.exit(task.lines.settled)
    yield* trace.record("task_canceled", yield* task.taskNode, {
      task_id: task.input.taskId,
      turn: task.state.turn,
      phase: task.state.phase,
      detached_work_ids: work.map((item) => item.work_id),
      delegation_ids: children.map((item) => item.delegation_id)
    })
    yield* endTask(task, "canceled")
  }).pipe(Effect.ignore)

/**
 * Runs one task; fails only with a host-side error or an input timeout. Interruption (cancel)
 * stops it at once, and what the cancel leaves is traced on the way out.
 */
export const runAgentTask = (env: AgentEnv, given: TaskInput, io: TaskIO) =>
  Effect.gen(function*() {
    // Attachments land in the workdir first; the task's text (task.md, the first turn) names them.
    const listing = yield* stageAttachments(env.prepared.workdir, given.attachments, networkRulesOf(env.prepared)).pipe(
      Effect.catchTag("WorkdirPathRefused", (error) => Effect.fail(new CapsuleFailure({ reason: "HostError", message: error.message })))
    )
    const input = listing === "" ? given : { ...given, text: `${given.text}${listing}` }
    const task = yield* beginTask(env, input, io)
    const { workdir } = env.prepared
    const outcome = yield* turns(task).pipe(
      Effect.catchTag("AgentHostError", (error) => failedByHost(task, error)),
      Effect.tapError((error) =>
        error.reason === "InputTimeout" ? writeFailedResult(workdir, `error: ${INPUT_TIMEOUT}`).pipe(Effect.zipRight(Effect.ignore(endTask(task, "failed")))) : Effect.void
      ),
      Effect.onInterrupt(() => canceled(task))
    )
    const finished = yield* Effect.either(Effect.all([Fiber.join(task.taskFile), writeResult(workdir, outcome.text), task.log.refused]))
    // What the task wrote under the declared export root goes back as file parts (./OutputFiles.ts).
    const outputs = outputFiles(workdir, env.prepared.project.manifest.exports?.files, task.started, env.doorUrl)
    if (outputs.summary !== "") yield* task.io.artifact("files", outputs.summary, outputs.files)
    if (Either.isLeft(finished)) {
      yield* writeFailedResult(workdir, `error: ${finished.left.message}`)
      yield* endTask(task, "failed")
      return yield* new CapsuleFailure({ reason: "HostError", message: finished.left.message })
    }
    yield* endTask(task, outcome.exit)
    return outcome
  }).pipe(Effect.scoped)
