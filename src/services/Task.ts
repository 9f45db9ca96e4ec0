/**
 * The task domain: states and their allowed transitions, origins and lanes, messages, artifacts
 * and the task record the registry keeps. Wire shapes live in `src/http`; this is the model.
 */
export type TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "failed"
  | "rejected"
  | "canceled"

export const terminalStates: ReadonlySet<TaskState> = new Set(["completed", "failed", "rejected", "canceled"])

export const isTerminal = (state: TaskState): boolean => terminalStates.has(state)

/** States that stop a blocking `message/send`: terminal, or waiting for the caller. */
export const isSettled = (state: TaskState): boolean => isTerminal(state) || state === "input-required"

const allowed: Record<TaskState, ReadonlyArray<TaskState>> = {
  submitted: ["working", "canceled", "failed"],
  working: ["input-required", "completed", "failed", "canceled"],
  "input-required": ["working", "failed", "canceled"],
  completed: [],
  failed: [],
  rejected: [],
  canceled: []
}

export const canTransition = (from: TaskState, to: TaskState): boolean => allowed[from].includes(to)

export type Origin = "user" | "peer" | "schedule" | "event" | "completion" | "system"
export type Trust = "trusted" | "untrusted"
export type Lane = "user" | "peer" | "bg"

export const laneOf = (origin: Origin): Lane => origin === "user" ? "user" : origin === "peer" ? "peer" : "bg"

/** Which wire shapes a task was created with; answers about it default to the same. */
export type Dialect = "reference" | "a2a"

export interface TextPart {
  readonly kind: "text"
  readonly text: string
}

/** Structured data (any JSON value) a client attached to a message. */
export interface DataPart {
  readonly kind: "data"
  readonly data: unknown
  readonly mediaType?: string
}

/** A file a client attached: its bytes (base64) or a URL the capsule's host fetches. */
export interface FilePart {
  readonly kind: "file"
  readonly name?: string
  readonly mediaType?: string
  readonly bytes?: string
  readonly uri?: string
}

export type Part = TextPart | DataPart | FilePart

export interface Message {
  readonly role: "user" | "agent"
  readonly messageId: string
  readonly parts: ReadonlyArray<Part>
  readonly taskId?: string
  readonly contextId?: string
}

export interface Artifact {
  readonly artifactId: string
  readonly name: string
  readonly parts: ReadonlyArray<Part>
}

/** Who sent the task and how far its content is trusted (the reference's provenance). */
export interface Provenance {
  readonly origin: Origin
  readonly trust: Trust
  readonly delegationId?: string
  readonly traceparent?: string
  /**
   * Set only for a task the host started itself (never from the wire): from `task.md` /
   * `--task`, or to deliver a detached shell command's completion.
   */
  readonly hostSource?: "task_md" | "detached_shell"
  /**
   * The principal the door authenticated for the message that created it (a token's name, or
   * `anonymous`): kept with the task, so its context's owner is known again after a restart.
   */
  readonly principal?: string
}

export interface Task {
  readonly id: string
  readonly contextId: string
  readonly state: TaskState
  /** The status line of the last transition (`task canceled`, the input prompt, a failure…). */
  readonly statusMessage?: string
  /** The final answer of a completed task. */
  readonly response?: string
  /** The pending request-input prompt while `input-required`. */
  readonly prompt?: string
  /** ISO 8601 time of the last transition. */
  readonly timestamp: string
  /** Counts the task's transitions (0 when accepted): names each status uniquely. */
  readonly revision: number
  readonly history: ReadonlyArray<Message>
  readonly artifacts: ReadonlyArray<Artifact>
  readonly provenance: Provenance
  readonly lane: Lane
  readonly dialect: Dialect
}

export const textOf = (message: Message): string =>
  message.parts.flatMap((part) => (part.kind === "text" ? [part.text] : [])).join("\n")

/** What a part weighs in memory, for retention: its text, its data as JSON, its bytes or URL. */
export const partBytes = (part: Part): number => {
  switch (part.kind) {
    case "text":
      return Buffer.byteLength(part.text)
    case "data":
      return Buffer.byteLength(JSON.stringify(part.data) ?? "")
    case "file":
      return (part.bytes?.length ?? 0) + (part.uri?.length ?? 0) + (part.name?.length ?? 0)
  }
}
