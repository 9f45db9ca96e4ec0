/**
 * What a running task emits. Events are structured (never substring-matched, unlike the
 * reference); the door encodes them per dialect. A `Frame` is an event with its session-wide id.
 */
import type { FilePart, TaskState } from "./Task.js"

export type TaskEvent =
  | {
    readonly _tag: "Status"
    readonly state: TaskState
    readonly message?: string
    readonly response?: string
    readonly final: boolean
  }
  | { readonly _tag: "Text"; readonly text: string; readonly final: boolean; readonly turn: number }
  | { readonly _tag: "Thinking"; readonly text: string }
  | {
    readonly _tag: "Artifact"
    readonly artifactId: string
    readonly name: string
    /** The artifact's text; with `files`, a summary of them for readers without file parts. */
    readonly content: string
    /** Files the artifact carries (a task's output files): A2A readers get these as its parts. */
    readonly files?: ReadonlyArray<FilePart>
  }

export interface Frame {
  /** Session-wide sequence number, from 1, strictly increasing. */
  readonly id: number
  readonly taskId: string
  readonly contextId: string
  readonly event: TaskEvent
  /**
   * The frame's wire encodings, filled lazily by the door the first time a stream of that dialect
   * carries the frame, then shared by every stream that carries it (one encoding per dialect,
   * however many readers). Nothing is encoded for a dialect no reader speaks.
   */
  wire?: FrameWire
}

export interface FrameWire {
  /** The reference SSE frame (`id:`, `event:`, `data:`), as bytes. */
  reference?: Uint8Array
  /** The A2A event's `result` JSON, without and with `append` (only text chunks differ). */
  a2aResult?: string
  a2aAppendResult?: string
  /** The same in A2A 1.0's spelling (a `StreamResponse`). */
  a2a1Result?: string
  a2a1AppendResult?: string
}

export const isFinal = (event: TaskEvent): boolean => event._tag === "Status" && event.final
