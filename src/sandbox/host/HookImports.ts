/**
 * A hook instance's side of `murmur:hook/lifecycle@0.8.0` inside its worker (spec §2.10): the
 * host imports of the hook world (`murmur:runtime/inference`, `tokens`, `murmur:task-io/read`,
 * `murmur:conversation/read`), the event records lifted to jco's shapes (u64 as BigInt), and the
 * call itself. task-io and conversation answer `not-granted` without asking the host unless the
 * hook's entry grants them; everything else is a blocking call to the main thread.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { type GuestJob, HOOK_BINDINGS, type HookAnswer, type HookBinding, type HookCallData, type HookMessage } from "../GuestJob.js"
import { type Channel, hostErr, HostTrap } from "./HostChannel.js"

/** Most bytes of a hook's answer (its messages, manifests or text): past it the answer is an `err`. */
export const MAX_HOOK_OUTPUT_BYTES = 1_048_576

/** The u64 fields of each event record (jco wants BigInt for them), nested records by `a.b`. */
const U64_FIELDS: Readonly<Record<HookBinding, ReadonlyArray<string>>> = {
  "on-stage": [],
  "on-session-start": [],
  "on-task-start": ["inputBytes", "budgetTokens", "contextWindow", "priorTokens"],
  "on-inference": ["inputTokens", "outputTokens"],
  "on-tool-call": ["inputBytes", "outcome.outputBytes", "outcome.durationMs"],
  "on-shell": ["outcome.stdoutBytes", "outcome.stderrBytes", "outcome.durationMs"],
  "on-compaction": ["sessionTokens"],
  "on-task-end": [],
  "on-session-end": ["totalInputTokens", "totalOutputTokens", "durationMs"]
}

const big = (value: unknown) => BigInt(Math.max(0, Math.floor(Number(value ?? 0))))

/** The event with its u64 fields as BigInt; a nested record that is absent (`option` none) stays so. */
export const liftEvent = (binding: HookBinding, event: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const lifted: Record<string, any> = { ...event }
  for (const path of U64_FIELDS[binding]) {
    const [head, tail] = path.split(".") as [string, string | undefined]
    if (tail === undefined) lifted[head] = big(lifted[head])
    else if (lifted[head] != null) lifted[head] = { ...lifted[head], [tail]: big(lifted[head][tail]) }
  }
  return lifted
}

/** `on-task-start` → `onTaskStart`: the name jco gives the export. */
export const exportName = (binding: HookBinding) => binding.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())

const plain = (value: unknown): unknown =>
  typeof value === "bigint" ? Number(value) : Array.isArray(value) ? value.map(plain) : value !== null && typeof value === "object" ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)])) : value

/**
 * Calls the lifecycle function and reads its `result<hook-output, string>`: jco returns the `ok`
 * value and throws the `err` as an error carrying `payload`. A trap propagates (the caller
 * classifies it). An answer past the size bound is an `err`, so it never reaches the session.
 */
export const callHook = (lifecycle: any, call: HookCallData): HookAnswer => {
  const fn = lifecycle?.[exportName(call.binding)]
  // A component without an optional lifecycle function (built against an older lifecycle) is not called.
  if (typeof fn !== "function") return { ok: { tag: "none" } }
  let output: any
  try {
    output = fn(liftEvent(call.binding, call.event))
  } catch (error) {
    if (error !== null && typeof error === "object" && "payload" in error) return { err: String((error as { payload: unknown }).payload) }
    throw error
  }
  const answer = plain(output) as { tag: string; val?: unknown }
  const size = JSON.stringify(answer ?? null).length
  if (size > MAX_HOOK_OUTPUT_BYTES) return { err: `hook output of ${size} bytes exceeds the ${MAX_HOOK_OUTPUT_BYTES}-byte bound` }
  if (answer === null || typeof answer !== "object" || typeof answer.tag !== "string") return { err: "hook returned an unreadable hook-output" }
  return { ok: answer }
}

const message = (raw: any): HookMessage => ({
  role: String(raw?.role ?? ""),
  content: String(raw?.content ?? ""),
  ...(raw?.id == null ? {} : { id: String(raw.id) }),
  ...(raw?.sourceId == null ? {} : { sourceId: String(raw.sourceId) })
})

/** Imports for a hook instance; `call` is the hook's own call (its grants gate task-io and conversation). */
export const hookMurmurImports = (job: GuestJob, channel: Channel): Record<string, any> => {
  const call = job.role.kind === "hook" ? job.role.call : undefined
  const taskIo = (op: "input-len" | "read-input" | "output-len" | "read-output", form: "as-given" | "original", offset = 0n, maxBytes = 0n) => {
    if (call?.taskIo !== true) throw hostErr("not-granted")
    const answer = channel.call({ method: "taskIo", op, form, offset: Number(offset), maxBytes: Number(maxBytes) })
    return typeof answer === "number" ? BigInt(answer) : answer
  }
  return {
    // The hook world `use`s the lifecycle's types, so componentize-js guests import the whole
    // interface and jco reads each function at instantiation; the host provides none of them.
    "murmur:hook/lifecycle": Object.fromEntries(HOOK_BINDINGS.map((binding) => [exportName(binding), () => {
      throw new HostTrap("murmur:hook/lifecycle is exported by hooks, not provided by the host")
    }])),
    "murmur:runtime/inference": {
      runInference: (request: any) => {
        const response = channel.call({
          method: "runInference",
          messages: (request?.messages ?? []).map(message),
          systemPrompt: request?.systemPrompt ?? undefined,
          model: request?.model ?? undefined
        }) as { text: string; modelUsed: string; inputTokens: number; outputTokens: number }
        return { ...response, inputTokens: BigInt(response.inputTokens), outputTokens: BigInt(response.outputTokens) }
      }
    },
    "murmur:runtime/tokens": {
      count: (text: string) => BigInt(channel.call({ method: "countTokens", text: String(text) }) as number)
    },
    "murmur:task-io/read": {
      inputLen: (form: "as-given" | "original") => taskIo("input-len", form),
      readInput: (form: "as-given" | "original", offset: bigint, maxBytes: bigint) => taskIo("read-input", form, offset, maxBytes),
      outputLen: () => taskIo("output-len", "as-given"),
      readOutput: (offset: bigint, maxBytes: bigint) => taskIo("read-output", "as-given", offset, maxBytes)
    },
    "murmur:conversation/read": {
      readMessages: (cursor: string | undefined, limit: number) => {
        if (call?.conversation !== true) throw hostErr("not-granted")
        return channel.call({ method: "readConversation", cursor: cursor ?? undefined, limit: Number(limit) })
      }
    }
  }
}
