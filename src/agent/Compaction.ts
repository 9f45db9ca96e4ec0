/**
 * Context compaction (`context.max_tokens`, `inference.compaction.*`; spec §4.3): before a
 * provider call whose request would reach `threshold × context.max_tokens` tokens, the history
 * is replaced by a shorter one, so the provider is never sent more than the window allows.
 *
 * - With a hook bound to `on-compaction` (commit policy `replace-context`), the hook gets the
 *   messages and returns their replacement. A hook that fails fails the task (the reference's
 *   rule); one that answers `none` declines (`compaction_declined`), and the request goes as is.
 * - With none, the built-in compactor asks the capsule's own model (`compaction.model`, else the
 *   manifest's; `compaction.system_prompt`, else a short instruction) to summarise everything
 *   before the turn in progress, and the history becomes that summary followed by the turn in
 *   progress (the last user message, or the last assistant message and its tool results).
 *
 * Traced `compaction` (`tokens_before`, `tokens_after`); `dump_summaries` appends each summary to
 * `out/compaction-summaries.jsonl`.
 */
import { Effect } from "effect"
import type { Compaction } from "../project/manifest/Inference.js"
import type { HookCallContext, Hooks } from "../hooks/Hooks.js"
import type { CapsuleFailure } from "../services/Capsule.js"
import { type Message, userMessage } from "./DriverProtocol.js"
import { fromHookMessages, toHookMessage } from "./HookMessages.js"

export const SUMMARY_PROMPT =
  "Summarise the conversation so far for your own later use: the task, what was decided, what was done (tools called and what they returned), " +
  "what is still open, and every fact, name, number or path the rest of the work needs. Write only the summary."

export interface CompactionSettings {
  /** `context.max_tokens`. */
  readonly window: number
  readonly config: Compaction | undefined
  /** `compaction.system_prompt` or the file it names, read at launch. */
  readonly systemPrompt: string | undefined
}

export interface CompactionEnv {
  readonly hooks: Hooks
  readonly context: HookCallContext
  readonly taskId: string
  readonly turn: number
  /** Tokens a request carrying `messages` would count. */
  readonly count: (messages: ReadonlyArray<Message>) => number
  /** One completion of the capsule's model over `messages` (the built-in compactor). */
  readonly summarise: (messages: ReadonlyArray<Message>, system: string, model: string | undefined) => Effect.Effect<string, { readonly message: string }>
  readonly record: (eventType: string, fields: Readonly<Record<string, unknown>>) => Effect.Effect<void, CapsuleFailure>
  /** Appends a line to `out/compaction-summaries.jsonl` (only under `dump_summaries`). */
  readonly dump: (line: Readonly<Record<string, unknown>>) => Effect.Effect<void>
}

export class CompactionFailed {
  readonly _tag = "CompactionFailed"
  constructor(readonly message: string) {}
}

/** Where the turn in progress starts: its assistant message when the history ends in tool results, else its last message. */
export const tailStart = (messages: ReadonlyArray<Message>): number => {
  if (messages.length === 0) return 0
  if (messages[messages.length - 1]!.role !== "tool") return messages.length - 1
  for (let at = messages.length - 1; at >= 0; at--) if (messages[at]!.role === "assistant") return at
  return 0
}

/** The messages, less the oldest ones, until a request carrying them counts at most `limit`. */
const within = (messages: ReadonlyArray<Message>, limit: number, count: CompactionEnv["count"]) => {
  let from = 0
  while (from < messages.length - 1 && count(messages.slice(from)) > limit) from++
  return messages.slice(from)
}

const builtIn = (env: CompactionEnv, settings: CompactionSettings, messages: ReadonlyArray<Message>) =>
  Effect.gen(function*() {
    const cut = tailStart(messages)
    const tail = messages.slice(cut)
    // What is summarised must itself fit: the oldest of it goes first.
    const older = within(messages.slice(0, cut), Math.floor(settings.window * 0.8), env.count)
    if (older.length === 0) return undefined
    const text = yield* env.summarise([...older, userMessage(SUMMARY_PROMPT)], settings.systemPrompt ?? SUMMARY_PROMPT, settings.config?.model)
    return { messages: [userMessage(`[Summary of the earlier conversation]\n${text}`), ...tail], summary: text as unknown, hook: null as string | null }
  })

const byHook = (env: CompactionEnv, settings: CompactionSettings, messages: ReadonlyArray<Message>, tokens: number) =>
  Effect.gen(function*() {
    const fired = yield* env.hooks.fire("on-compaction", {
      messages: messages.map((message) => toHookMessage(message)),
      sessionTokens: tokens,
      threshold: settings.config?.threshold ?? 0.98,
      model: settings.config?.model,
      systemPrompt: settings.systemPrompt
    }, env.context)
    const failed = fired.failures[0]
    if (failed !== undefined) return yield* Effect.fail(new CompactionFailed(`compaction hook '${failed.hook}' failed: ${failed.message}`))
    const commit = fired.commits[0]
    if (commit === undefined) return undefined
    const replaced = fromHookMessages(commit.val)
    return replaced.length === 0 ? undefined : { messages: replaced, summary: commit.val, hook: commit.hook as string | null }
  })

/**
 * The history to send instead of `messages`, or `undefined` when they fit (or compaction
 * declined). `tokens`: what a request carrying `messages` counts.
 */
export const compactIfNeeded = (env: CompactionEnv, settings: CompactionSettings, messages: ReadonlyArray<Message>, tokens: number) =>
  Effect.gen(function*() {
    const threshold = settings.config?.threshold ?? 0.98
    if (tokens < threshold * settings.window) return undefined
    const hooked = env.hooks.at("on-compaction")
    const done = hooked
      ? yield* byHook(env, settings, messages, tokens)
      : yield* builtIn(env, settings, messages).pipe(Effect.mapError((error) => new CompactionFailed(`compaction failed: ${error.message}`)))
    if (done === undefined) {
      yield* env.record("compaction_declined", { task_id: env.taskId, turn: env.turn, tokens, limit_tokens: settings.window, by: hooked ? "hook" : "runtime" })
      return undefined
    }
    const after = env.count(done.messages)
    yield* env.record("compaction", { task_id: env.taskId, turn: env.turn, tokens_before: tokens, tokens_after: after, hook_name: done.hook })
    if (settings.config?.dumpSummaries === true) {
      yield* env.dump({ task_id: env.taskId, turn: env.turn, at: Date.now(), tokens_before: tokens, tokens_after: after, hook_name: done.hook, summary: done.summary })
    }
    return done.messages
  })
