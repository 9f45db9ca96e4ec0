/**
 * What the main thread hands a guest worker (one `{ job }` message, when a run takes the worker) and the messages they exchange. All
 * of it crosses a structured clone: compiled `WebAssembly.Module`s (shared, not recompiled),
 * plain grant data, a `MessagePort` and a `SharedArrayBuffer` for blocking host calls.
 */
import type { MessagePort } from "node:worker_threads"
import type { MemoryState } from "./wasm/MemoryVerdict.js"
import type { NetworkRule } from "../project/NetworkMatch.js"
import type { ArtifactData } from "../project/ArtifactData.js"

/** A transpiled component: its JS glue on disk (imported by file URL) and its compiled core modules. */
export interface LoadedGuest {
  readonly jsUrl: string
  /** The glue rewritten as a classic script (what workers load, with a V8 code cache). */
  readonly scriptPath: string
  readonly modules: Readonly<Record<string, WebAssembly.Module>>
}


/** Everything a guest may touch, built per instance. */
export interface GuestGrant {
  /** Host directory preopened as `.`, a path without links (./Grants.ts resolves it); none: no filesystem at all. */
  readonly preopen: string | undefined
  /**
   * The artifact's state directory (`capabilities.state`), preopened as `state`: it outlives the
   * session, under `$MURMUR_HOME/state/<store>/`, a path without links (./grants/StateDir.ts).
   */
  readonly state?: string | undefined
  /**
   * `capabilities.filesystem.read_only`, made relative to the preopen (`""`: all of it): subtrees
   * the guest may read but not change (./worker/GuestFs.ts). None: nothing is read-only.
   */
  readonly readOnly?: ReadonlyArray<string> | undefined
  readonly env: Readonly<Record<string, string>>
  readonly network: ReadonlyArray<NetworkRule>
  /** Linear-memory cap in bytes (already patched into the modules; used to classify traps). */
  readonly memoryBytes: number
  /** Most core instances one instantiation may create (`capabilities.limits.instances`). */
  readonly instances: number
  /** The inference gateway (spec §3.3), for a driver declaring `inference_auth` only. */
  readonly gateway?: InferenceGateway | undefined
}

/**
 * Where the driver's requests to `http://127.0.0.1:9` really go, and the auth header the host
 * inserts on the way. The key lives here, in host code; the guest never sees it.
 */
export interface InferenceGateway {
  readonly scheme: "http" | "https"
  /** `host[:port]` of the upstream endpoint. */
  readonly authority: string
  readonly header: string
  /** The header value with the key rendered in; none when no key is configured. */
  readonly value: string | undefined
}

export interface ToolGuest {
  readonly guest: LoadedGuest
  readonly grant: GuestGrant
  readonly deadlineMs: number
}

export type { ArtifactData }

export interface ToolInputData {
  readonly data?: string | undefined
  readonly logPath?: string | undefined
}

export interface ToolResultData {
  readonly status: "passed" | "failed" | "error"
  readonly summary?: string | undefined
  readonly data?: string | undefined
  readonly dataPath?: string | undefined
  readonly truncated: boolean
  readonly metadata: ReadonlyArray<readonly [string, string]>
}

/** The nine lifecycle functions of `murmur:hook/lifecycle@0.8.0`, by their WIT names. */
export const HOOK_BINDINGS = [
  "on-stage",
  "on-session-start",
  "on-task-start",
  "on-inference",
  "on-tool-call",
  "on-shell",
  "on-compaction",
  "on-task-end",
  "on-session-end"
] as const
export type HookBinding = typeof HOOK_BINDINGS[number]

/** One lifecycle call: the function and its event record (u64 fields as plain numbers; the worker lifts them). */
export interface HookCallData {
  readonly binding: HookBinding
  readonly event: Readonly<Record<string, unknown>>
  /** The entry's `task_io.read` / `conversation.read` grants: without one, that import answers `not-granted`. */
  readonly taskIo: boolean
  readonly conversation: boolean
}

/** A `hook-output` variant as jco carries it (`val` absent for `none`), or the hook's `err`. */
export type HookAnswer =
  | { readonly ok: { readonly tag: string; readonly val?: unknown } }
  | { readonly err: string }

export interface GuestJob {
  readonly role:
    | { readonly kind: "capsule" }
    | { readonly kind: "tool"; readonly name: string; readonly input: ToolInputData }
    | { readonly kind: "hook"; readonly name: string; readonly call: HookCallData }
  readonly guest: LoadedGuest
  readonly grant: GuestGrant
  /** Names of every `runtime: tool` artifact (the `invoke` allowlist), WASM or not. */
  readonly allowlist: ReadonlyArray<string>
  /** The allowlisted tools that have a WASM component, instantiated fresh for each call. */
  readonly tools: Readonly<Record<string, ToolGuest>>
  /** Whether an A2A task is in scope (chunks and request-input attach to it). */
  readonly inTask: boolean
  readonly sessionId: string
  readonly artifacts: ReadonlyArray<ArtifactData>
  readonly rpc: { readonly port: MessagePort; readonly flag: SharedArrayBuffer }
  /** The run's W3C trace context: the inference gateway sets it on what it forwards. */
  readonly traceparent?: string | undefined
  /**
   * V8 code caches for glue scripts, by `scriptPath`: made by an earlier worker after its run,
   * so they hold the functions that run compiled lazily. Bytecode only, no guest state.
   */
  readonly codeCache?: Readonly<Record<string, Uint8Array>> | undefined
  /** Glue scripts whose cache should be made again after this run, though one was accepted. */
  readonly refreshCodeCache?: ReadonlyArray<string> | undefined
}

/**
 * The worker's first message. `hold`: a warm-pool worker, which prepares its instance ahead and
 * waits for the run's `RunGo` on `rpc` (the job's role input is then a placeholder).
 */
export interface GuestStart {
  readonly job: GuestJob
  readonly hold?: boolean
}

/** Starts a held worker's run: posted on `rpc.port`, then the flag is raised. */
export interface RunGo {
  readonly input: ToolInputData
  readonly traceparent?: string | undefined
}

export type HostCall =
  | { readonly method: "requestInput"; readonly prompt: string }
  | { readonly method: "sendMessage"; readonly peerUrl: string; readonly messageId: string; readonly contextId?: string | undefined; readonly text: string }
  | HookHostCall

/** What a hook's own imports ask of the host (`murmur:runtime/*`, task-io, conversation). */
export type HookHostCall =
  | { readonly method: "runInference"; readonly messages: ReadonlyArray<HookMessage>; readonly systemPrompt: string | undefined; readonly model: string | undefined }
  | { readonly method: "countTokens"; readonly text: string }
  | { readonly method: "taskIo"; readonly op: "input-len" | "read-input" | "output-len" | "read-output"; readonly form: "as-given" | "original"; readonly offset: number; readonly maxBytes: number }
  | { readonly method: "readConversation"; readonly cursor: string | undefined; readonly limit: number }

/** `murmur:hook/lifecycle@0.8.0.message`, as jco carries it. */
export interface HookMessage {
  readonly role: string
  readonly content: string
  readonly id?: string | undefined
  readonly sourceId?: string | undefined
}

export type HostReply = { readonly ok: unknown } | { readonly err: string } | { readonly trap: string }

export type FailureReason = "Trap" | "Instantiate" | "InstanceLimit" | "MissingExport"

/** How a worker loaded a glue script: with the cache it was handed, without one, or with one V8 refused. */
export type CodeCacheUse = "accepted" | "none" | "rejected"

export type WorkerMessage =
  | { readonly type: "glue"; readonly scriptPath: string; readonly cache: CodeCacheUse }
  /** A code cache made after a successful run, for later workers of the same glue. */
  | { readonly type: "codeCache"; readonly scriptPath: string; readonly data: Uint8Array }
  | { readonly type: "stdout" | "stderr"; readonly bytes: Uint8Array }
  | { readonly type: "chunk"; readonly kind: "text" | "thinking"; readonly text: string }
  | { readonly type: "call"; readonly call: HostCall }
  | { readonly type: "toolStart"; readonly name: string; readonly deadlineMs: number }
  | { readonly type: "toolEnd"; readonly name: string }
  | { readonly type: "done"; readonly result?: ToolResultData | undefined; readonly hook?: HookAnswer | undefined }
  | { readonly type: "failed"; readonly reason: FailureReason; readonly message: string; readonly memory: MemoryState }
