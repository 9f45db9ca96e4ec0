/**
 * What a hook's imports reach on the host (spec §2.10), for one session and, inside a task, that
 * task:
 * - `murmur:runtime/inference.run-inference`: one completion through the capsule's own driver
 *   (same grant and gateway, no tools, no streaming), under the session's spend ceilings, traced
 *   as an `inference` line with `origin: hook:<name>`. `model: none` is the manifest's model.
 * - `murmur:runtime/tokens.count`: the host's cl100k count.
 * - `murmur:task-io/read`: the task's input (`as-given`: what this attempt's loop saw, reopen
 *   feedback included; `original`: before it) and its output once the loop reached an end, in
 *   windows that end on a UTF-8 boundary. Outside a task: `no-task`.
 * - `murmur:conversation/read`: the task's context, newest first, pages of 1–100.
 * The grants were checked in the worker: a call arrives here only when the entry has them.
 */
import { Effect, Either } from "effect"
import type { GuestOutcome } from "../sandbox/Sandbox.js"
import type { SandboxError } from "../sandbox/SandboxError.js"
import type { HookHostCall } from "../sandbox/GuestJob.js"
import type { Trace } from "../records/Trace.js"
import type { HookServices } from "../hooks/Hooks.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import type { Conversations } from "./Conversations.js"
import { buildRequest, finalText, type Message, readDriverResult } from "./DriverProtocol.js"
import { fromHookMessages, toHookMessage } from "./HookMessages.js"
import type { SpendGuard } from "./SpendCeiling.js"
import type { TokenCounter } from "./Tokens.js"

/** The task a hook call happens in, as task-io and conversation/read see it. */
export interface HookTaskView {
  readonly taskId: string
  readonly contextId: string
  /** The task's text before any reopen feedback. */
  readonly original: string
  /** What this attempt's loop saw. */
  asGiven: string
  /** The loop's final text, once it reached an end (cleared at each reopen). */
  output: string | undefined
  /** The turn in progress, for a hook's `inference` line. */
  turn: number
}

export interface HookServiceEnv {
  readonly prepared: PreparedAgent
  readonly trace: Trace["Type"]
  readonly spend: SpendGuard
  readonly conversations: Conversations["Type"]
  readonly countTokens: TokenCounter
  /** Runs the capsule's driver on one request body. */
  readonly runDriver: (body: string) => Effect.Effect<GuestOutcome, SandboxError>
}

const MAX_PAGE = 100

/** The longest prefix of `text`'s bytes from `offset` within `max`, ending on a UTF-8 boundary. */
export const utf8Window = (text: string, offset: number, max: number): Either.Either<string, "out-of-range"> => {
  const bytes = Buffer.from(text, "utf8")
  if (offset > bytes.length) return Either.left("out-of-range")
  let end = Math.min(bytes.length, offset + max)
  // A continuation byte (10xxxxxx) at `end` would split a character: step back to its start.
  while (end > offset && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--
  let start = offset
  while (start < end && (bytes[start]! & 0xc0) === 0x80) start++
  return Either.right(bytes.subarray(start, end).toString("utf8"))
}

const fail = (message: string) => Effect.fail({ message })

/**
 * One completion of the capsule's model, no tools, through its driver: a hook's `run-inference`
 * and the built-in compactor. Under the spend ceilings; traced as an `inference` line with its
 * `origin`.
 */
export const complete = (
  env: HookServiceEnv,
  request: { readonly messages: ReadonlyArray<Message>; readonly system: string; readonly model: string | undefined; readonly origin: string },
  task: HookTaskView | undefined
) =>
  Effect.gen(function*() {
    const { prepared } = env
    const reached = yield* env.spend.reached
    if (reached !== undefined) return yield* fail(`spend ceiling reached (${reached.key}: ${reached.spent} of ${reached.limit} tokens)`)
    const model = request.model ?? prepared.model
    const body = JSON.stringify(buildRequest({
      model,
      maxTokens: prepared.maxTokens,
      messages: request.messages,
      tools: [],
      system: request.system,
      promptCacheKey: `${prepared.project.manifest.name}:${prepared.project.manifest.version}:${request.origin}`
    }))
    const ran = yield* Effect.mapError(env.runDriver(body), (error) => ({ message: `inference failed: ${error.message}` }))
    const reply = readDriverResult(ran.result ?? { status: "passed", truncated: false, metadata: [] })
    if (Either.isLeft(reply)) return yield* fail(`inference failed: ${reply.left}`)
    if (reply.right._tag === "DriverFailed") return yield* fail(`inference failed: ${reply.right.text}`)
    const { raw, response } = reply.right
    if (response.stop_reason === "error") return yield* fail(`inference failed: ${response.error ?? "the provider reported an error"}`)
    const inputTokens = env.countTokens(body)
    const outputTokens = env.countTokens(raw)
    yield* env.spend.spend((response.usage?.input_tokens ?? inputTokens) + (response.usage?.output_tokens ?? outputTokens))
    yield* Effect.ignore(env.trace.record("inference", undefined, {
      turn: task?.turn ?? 0,
      task_id: task?.taskId ?? null,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      decision: "text",
      stop_reason: response.stop_reason,
      tool_name: null,
      origin: request.origin,
      model
    }))
    return { text: finalText(response), modelUsed: model, inputTokens, outputTokens }
  })

const runInference = (env: HookServiceEnv, hookName: string, task: HookTaskView | undefined, call: Extract<HookHostCall, { method: "runInference" }>) =>
  complete(env, { messages: fromHookMessages(call.messages), system: call.systemPrompt ?? "", model: call.model, origin: `hook:${hookName}` }, task)

const taskIo = (task: HookTaskView | undefined, call: Extract<HookHostCall, { method: "taskIo" }>) => {
  if (task === undefined) return fail("no-task")
  const reading = call.op === "input-len" || call.op === "read-input"
  const text = reading ? (call.form === "original" ? task.original : task.asGiven) : task.output
  if (text === undefined) return fail("no-output")
  if (call.op === "input-len" || call.op === "output-len") return Effect.succeed(Buffer.byteLength(text))
  return Either.match(utf8Window(text, call.offset, call.maxBytes), { onLeft: (error) => fail(error), onRight: (window) => Effect.succeed(window) })
}

const readConversation = (env: HookServiceEnv, task: HookTaskView | undefined, call: Extract<HookHostCall, { method: "readConversation" }>) =>
  Effect.gen(function*() {
    if (task === undefined) return { messages: [], nextCursor: undefined, total: 0 }
    const offset = call.cursor === undefined ? 0 : Number(call.cursor)
    if (!Number.isSafeInteger(offset) || offset < 0 || String(offset) !== (call.cursor ?? "0")) return yield* fail("invalid-cursor")
    const limit = Math.min(MAX_PAGE, Math.max(1, call.limit))
    const newestFirst = [...yield* env.conversations.history(task.contextId)].reverse()
    const page = newestFirst.slice(offset, offset + limit)
    const next = offset + page.length
    return {
      messages: page.map((message) => toHookMessage(message)),
      nextCursor: next < newestFirst.length ? String(next) : undefined,
      total: newestFirst.length
    }
  })

/** The services for hook calls made in `task` (or outside any task). */
export const hookServices = (env: HookServiceEnv, task: HookTaskView | undefined): HookServices => (hook, call) => {
  switch (call.method) {
    case "runInference":
      return runInference(env, hook.name, task, call)
    case "countTokens":
      return Effect.succeed(env.countTokens(call.text))
    case "taskIo":
      return taskIo(task, call)
    case "readConversation":
      return readConversation(env, task, call)
  }
}
