/**
 * The executor interface the door runs tasks on. The built-in scripted capsule implements it
 * now; the sandbox (WebAssembly components in workers) implements it later. A run is an Effect:
 * the runner interrupts it to cancel, so an implementation must release what it holds in
 * finalizers, never in error handlers.
 */
import { Context, type Effect, Schema } from "effect"
import type { DataPart, FilePart, Provenance } from "./Task.js"

/**
 * Why a task failed, for code to branch on (the message is for people):
 *
 * - `InputTimeout`: a request-input was not answered within the session's input timeout;
 * - `HostError`: the host could not carry the task on (a driver invocation, a trace write, a
 *   refused workdir file);
 * - `Failed`: the capsule ran and its task failed (an agent's failure arm, a script's guest).
 *
 * A cancel is not a failure: it interrupts the run, and the runner reads it from the `Cause`.
 */
export const CapsuleFailureReason = Schema.Literal("InputTimeout", "HostError", "Failed")
export type CapsuleFailureReason = typeof CapsuleFailureReason.Type

/** The status message of a task whose request-input timed out (the reference's words). */
export const INPUT_TIMEOUT = "input-timeout"

export class CapsuleFailure extends Schema.TaggedError<CapsuleFailure>()("CapsuleFailure", {
  reason: CapsuleFailureReason,
  message: Schema.String
}) {
  static readonly inputTimeout = (): CapsuleFailure => new CapsuleFailure({ reason: "InputTimeout", message: INPUT_TIMEOUT })
}

export interface CapsuleInfo {
  readonly name: string
  readonly version: string
  readonly description: string
  /** LLM-visible tools, in installed order (the card's `capabilities.tools`). */
  readonly tools: ReadonlyArray<string>
  readonly shell: boolean
  readonly network: boolean
  readonly conversationMode: "stateless" | "threaded"
  /**
   * It takes file and data parts (`TaskInput.attachments`); without it the door refuses them
   * with -32005, since the capsule would only see the text.
   */
  readonly attachments?: boolean
}

export interface TaskInput {
  readonly taskId: string
  readonly contextId: string
  readonly messageId: string
  readonly text: string
  /** The file and data parts of the task's first message, in order (the text is `text`). */
  readonly attachments: ReadonlyArray<DataPart | FilePart>
  readonly provenance: Provenance
  /** How long the task waited in the registry before it started, in whole ms (0: at once; absent: not known). */
  readonly queuedMs?: number
}

/** What a running task can do. Every call is tied to the task it was handed for. */
export interface TaskIO {
  readonly text: (chunk: string) => Effect.Effect<void>
  readonly thinking: (chunk: string) => Effect.Effect<void>
  /** An artifact: its text, or (with `files`) the files it carries and a summary of them as its text. */
  readonly artifact: (name: string, content: string, files?: ReadonlyArray<FilePart>) => Effect.Effect<void>
  /** A non-final `working` status line. */
  readonly status: (message: string) => Effect.Effect<void>
  /**
   * The model's turn is over: text streamed in it is closed (a `text` frame with `final: true`)
   * and recorded; the next chunk starts a new turn.
   */
  readonly endTurn: Effect.Effect<void>
  /** Puts the task in `input-required` with the prompt; resumes with the follow-up's text. */
  readonly requestInput: (prompt: string) => Effect.Effect<string, CapsuleFailure>
}

export interface CapsuleOutcome {
  readonly response: string
}

export class Capsule extends Context.Tag("capsule-runtime/services/Capsule")<Capsule, {
  readonly info: CapsuleInfo
  readonly run: (input: TaskInput, io: TaskIO) => Effect.Effect<CapsuleOutcome, CapsuleFailure>
}>() {}
