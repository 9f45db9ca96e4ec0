/**
 * Field records of the `trace.jsonl` events (reference §6, 0.3 shapes from the reference's
 * observability schema). Fields the runtime always knows are required; the rest are optional and,
 * when absent, are left off the line (never written as `null` unless the type says `| null`).
 * Declaration order is the reference's column order: pass fields in this order, since `Trace`
 * writes them in the caller's order. Field names are the wire names (snake_case).
 */
import type { Lane, Origin, Trust } from "../services/Task.js"
import type { CapsuleManifest } from "../project/Manifest.js"

export type Containment = "advisory" | "scoped" | "sealed"

export type CapabilityKind = "network" | "filesystem" | "shell"

/** `session_start.capabilities`: a network rule, a filesystem block, shell commands allowed. */
export const declaredCapabilities = (
  caps: { readonly network?: { readonly allow: ReadonlyArray<unknown> } | undefined; readonly filesystem?: unknown },
  shellCommands: number
): ReadonlyArray<CapabilityKind> => [
  ...((caps.network?.allow.length ?? 0) > 0 ? ["network" as const] : []),
  ...(caps.filesystem !== undefined ? ["filesystem" as const] : []),
  ...(shellCommands > 0 ? ["shell" as const] : [])
]

export interface SessionStartFields {
  readonly capsule_name: string
  readonly capsule_version: string
  /** `inference.model`. */
  readonly model: string
  readonly max_turns: number
  readonly max_session_tokens?: number | null
  readonly machine_tokens_per_day?: number | null
  /** Categories the manifest granted anything under. */
  readonly capabilities: ReadonlyArray<CapabilityKind>
  readonly tools_declared: ReadonlyArray<string>
  readonly containment_declared: Containment
  /** What the host's tier gives the shell's commands (sealed needs bubblewrap), capped at advisory by `workdir_exec`. */
  readonly containment_achieved: Containment
  readonly userns_grant?: string | null
  readonly workdir_exec: boolean
  readonly resumed_from?: string | null
  readonly context_id?: string | null
  readonly spawned_by?: string
  readonly delegation_id?: string
  readonly system_prompt_source: "manifest" | "cli" | "none"
  readonly credential_source: "config" | "environment" | "manifest" | "none"
  /** SHA-256 (hex) of the manifest's resolved prompt, without the runtime's `[Capsule]` block; `null` when none. Recomputed from `system_prompt` when that is given. */
  readonly system_prompt_sha256: string | null
  /** The explain-scope report (docs/trace.md, "effective_grants"): names, never env values. */
  readonly effective_grants?: Readonly<Record<string, unknown>>
  /** The prompt body: never on the line; under `content` stored as `blobs/<system_prompt_sha256>`. */
  readonly system_prompt?: string | null
}

/** What a launch says of itself in `session_start`, whatever its kind. */
export interface SessionStartOf {
  readonly manifest: Pick<CapsuleManifest, "name" | "version" | "capabilities">
  /** The tools the capsule declares, as its card names them. */
  readonly tools: ReadonlyArray<string>
  /** How many commands `capabilities.shell` allows. */
  readonly shellCommands: number
  readonly containment: { readonly declared: Containment; readonly achieved: Containment }
  /** An agent's inference settings; a script capsule has none. */
  readonly inference?: { readonly model: string; readonly maxTurns: number; readonly maxSessionTokens: number | null; readonly machineTokensPerDay?: number | null } | undefined
  /** A delegated child's spawner and delegation. */
  readonly lineage?: { readonly spawnedBy: string; readonly delegationId: string } | undefined
  readonly systemPromptSource?: SessionStartFields["system_prompt_source"] | undefined
  readonly credentialSource?: SessionStartFields["credential_source"] | undefined
}

/**
 * A launch's `session_start` fields, in the reference's order, for the agent and the script kind
 * alike. One launch is one fresh session: nothing resumed, no pinned context; user-namespace
 * containment is not a feature of this runtime.
 */
export const sessionStartOf = (of: SessionStartOf): SessionStartFields => {
  const caps = of.manifest.capabilities
  return {
    capsule_name: of.manifest.name,
    capsule_version: of.manifest.version,
    model: of.inference?.model ?? "",
    max_turns: of.inference?.maxTurns ?? 0,
    max_session_tokens: of.inference?.maxSessionTokens ?? null,
    machine_tokens_per_day: of.inference?.machineTokensPerDay ?? null,
    capabilities: declaredCapabilities(caps, of.shellCommands),
    tools_declared: of.tools,
    containment_declared: of.containment.declared,
    containment_achieved: of.containment.achieved,
    userns_grant: null,
    workdir_exec: caps.filesystem?.workdirExec ?? false,
    resumed_from: null,
    context_id: null,
    ...(of.lineage === undefined ? {} : { spawned_by: of.lineage.spawnedBy, delegation_id: of.lineage.delegationId }),
    system_prompt_source: of.systemPromptSource ?? "none",
    credential_source: of.credentialSource ?? "none",
    system_prompt_sha256: null
  }
}

export type TaskSource = "a2a" | "task_md" | "detached_shell" | "detached_lost"

export interface TaskStartFields {
  readonly task_id: string
  readonly context_id: string
  readonly source: TaskSource
  readonly origin: Origin
  readonly trust: Trust
  readonly lane: Lane
  readonly delegation_id?: string
  /** Byte length of the task message text. */
  readonly message_parts_bytes: number
  /**
   * Ours, beyond the reference's schema: milliseconds the task waited in the registry between
   * submission and start (`max_active` reached), rounded down; 0 when it started at once.
   */
  readonly queued_ms?: number
}

export type TaskExitStatus =
  | "ok"
  | "failed"
  | "max_turns_reached"
  | "spend_ceiling_reached"
  | "reopen_budget_exhausted"
  | "canceled"

export interface TaskEndFields {
  readonly task_id: string
  readonly exit_status: TaskExitStatus
  readonly duration_ms: number
  readonly turns: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly tool_calls: number
  readonly shell_calls: number
  readonly reopen_count: number
}

export interface InferenceFields {
  /** Zero-based. */
  readonly turn: number
  readonly task_id: string | null
  /** The runtime's own estimate, counted before sending. */
  readonly input_tokens: number
  readonly output_tokens: number
  readonly decision: "tool_call" | "end_turn" | "text"
  /** The provider's stop reason verbatim, `""` when none; absent when no driver response was parsed. */
  readonly stop_reason?: string
  readonly tool_name: string | null
  /** The four provider-reported counts: only when the driver reported them, never `0` in their place. */
  readonly input_tokens_actual?: number
  readonly output_tokens_actual?: number
  readonly cached_tokens?: number
  readonly cache_write_tokens?: number
  /** `hook:<name>` for a hook's completion; `model` only alongside it. */
  readonly origin?: string
  readonly model?: string
  /** The runtime's `msg_` ids of the messages this request carried, in send order (every capture mode). */
  readonly message_ids?: ReadonlyArray<string>
  /** Wire hashes (SHA-256 hex of what was sent): dropped under `capture: none`. */
  readonly system_sha?: string
  readonly tools_sha?: string
  readonly response_sha?: string
  readonly message_shas?: ReadonlyArray<string>
}

/** `inference` fields written under `meta` and `content` only. */
export const WIRE_HASH_FIELDS = ["system_sha", "tools_sha", "response_sha", "message_shas"] as const

export interface ToolCallFields {
  readonly turn: number
  readonly task_id: string | null
  readonly tool_name: string
  readonly tool_call_id: string | null
  readonly input: Readonly<Record<string, unknown>>
  readonly input_bytes: number
  /** What the model received (the fenced result): written only under `capture: content`. */
  readonly output?: string
  readonly output_bytes: number
  readonly duration_ms: number
  readonly status: "ok" | "error"
  readonly state_effect?: "read" | "mutate"
  readonly resource_id?: string
}

export interface SkillCallFields {
  readonly turn: number
  readonly task_id: string | null
  readonly skill_name: string
  readonly output_bytes: number
  readonly duration_ms: number
  readonly status: "ok" | "error"
}

export interface ShellFields {
  readonly turn: number
  readonly task_id: string | null
  /** The program that ran (resolved absolute path when found on the host `PATH`). */
  readonly binary: string
  /** The arguments alone; for an interpreter, the `-c` script. */
  readonly command: string
  readonly exit_code: number
  readonly stdout_bytes: number
  readonly stderr_bytes: number
  readonly duration_ms: number
  /** Only when the model's result left output out; the full output (up to the cap) is at `output_path`. */
  readonly truncated?: true
  readonly output_path?: string
  /** `max_output_bytes` when `capabilities.shell.max_output_bytes` killed the command. */
  readonly resource_limit?: string
  /** With `resource_limit`: bytes read past the cap and dropped. */
  readonly dropped_bytes?: number
}

export interface ShellDetachedFields {
  readonly turn: number
  readonly task_id: string | null
  readonly work_id: string
  readonly binary: string
  readonly command: string
  readonly grace_ms: number
}

export interface ShellCompletedFields {
  readonly work_id: string
  readonly binary: string
  readonly command: string
  readonly exit_code: number
  readonly duration_ms: number
  /** Relative to the capsule workdir: `logs/<work_id>.log`. */
  readonly output_path: string
  readonly output_bytes: number
  /** As on `shell`: `max_output_bytes` and the bytes dropped when the output cap killed the command. */
  readonly resource_limit?: string
  readonly dropped_bytes?: number
  readonly status: "ok" | "error"
  readonly completion_task_id: string
}

export interface ShellAbandonedFields {
  readonly work_id: string
  readonly binary: string
  readonly command: string
  readonly running_ms: number
  /** These three only for a command that finished during teardown. */
  readonly exit_code?: number
  readonly output_path?: string
  readonly output_bytes?: number
}

export interface TaskCanceledFields {
  readonly task_id: string
  /** The turn in flight; absent for a task cancelled before it ran. */
  readonly turn?: number
  readonly phase: "queued" | "turn" | "inference" | "input" | "delegation"
  readonly detached_work_ids: ReadonlyArray<string>
  readonly delegation_ids: ReadonlyArray<string>
}

export interface SessionEndFields {
  readonly total_turns: number
  readonly total_input_tokens: number
  readonly total_output_tokens: number
  readonly total_tool_calls: number
  /** `shell` plus `shell_detached` lines. */
  readonly total_shell_calls: number
  readonly duration_ms: number
  /** The last task's own outcome. */
  readonly exit_status: Exclude<TaskExitStatus, "reopen_budget_exhausted">
}

export interface A2aTaskReceivedFields {
  readonly task_id: string
  readonly context_id: string
  readonly message_id: string
  readonly traceparent_from_caller: string | null
}

/** One `murmur:message/send` a script capsule made that a peer answered with a task. */
export interface A2aSendFields {
  readonly peer_url: string
  readonly message_id: string
  /** The peer's task and context, as it answered them. */
  readonly task_id: string
  readonly context_id: string
  /** The W3C `traceparent` the request carried (the current span's); `null` when it carried none. */
  readonly traceparent: string | null
  /** The trust the request was stamped with (`x-murmur-task-trust`). */
  readonly trust: Trust
}

/** What an append to a threaded conversation (../agent/Conversations.ts) dropped from the front of a thread's record to stay within its caps. */
export interface RecordTrim {
  readonly context_id: string
  readonly limit: "max_bytes" | "max_turns"
  readonly dropped_turns: number
  readonly dropped_bytes: number
  readonly kept_turns: number
  readonly kept_bytes: number
}

/** The `egress` trace line: one per proxied connection, written when it closes (../shell/egress/EgressProxy.ts). */
export interface EgressFields {
  readonly task_id: string | null
  /** The shell binary whose command opened the connection. */
  readonly binary: string
  /** `CONNECT`, the forwarded method, or `null` when no request line was read. */
  readonly method: string | null
  readonly host: string | null
  readonly port: number | null
  readonly decision: "allowed" | "denied"
  /** Why it was denied, or why an allowed connection failed. */
  readonly reason?: string
  /** The address connected to. */
  readonly address?: string
  /** Bytes from the command to the upstream (a forwarded request's rewritten head included). */
  readonly bytes_up: number
  /** Bytes from the upstream to the command. */
  readonly bytes_down: number
  readonly duration_ms: number
}

/** A threaded capsule's record passed `context.record_max_bytes` or `record_max_turns`: its oldest turns were dropped. */
export interface ConversationTrimmedFields extends RecordTrim {
  readonly task_id: string
}

/** The typed events; any other event type takes free-form fields. */
export interface TraceEventFields {
  readonly session_start: SessionStartFields
  readonly task_start: TaskStartFields
  readonly task_end: TaskEndFields
  readonly session_end: SessionEndFields
  readonly inference: InferenceFields
  readonly tool_call: ToolCallFields
  readonly skill_call: SkillCallFields
  readonly shell: ShellFields
  readonly shell_detached: ShellDetachedFields
  readonly shell_completed: ShellCompletedFields
  readonly shell_abandoned: ShellAbandonedFields
  readonly task_canceled: TaskCanceledFields
  readonly a2a_task_received: A2aTaskReceivedFields
  readonly a2a_send: A2aSendFields
  /** A sealed shell command's proxied connection (../shell/egress/EgressProxy.ts). */
  readonly egress: EgressFields
  readonly conversation_trimmed: ConversationTrimmedFields
}

/** Events with their own `Trace` method, which owns their place in the tree. */
export type FramingEvent = "session_start" | "session_end" | "task_start" | "task_end"

export type TraceFields = Readonly<Record<string, unknown>>

/** What `Trace.record` accepts for an event type (`never` for the framing events). */
export type FieldsOf<T extends string> = T extends FramingEvent ? never
  : T extends keyof TraceEventFields ? TraceEventFields[T]
  : TraceFields
