/**
 * What a running task emits. Events are structured (never substring-matched, unlike the
 * reference); the door encodes them per dialect. A `Frame` is an event with its session-wide id.
 */
import type { TaskState } from "./Task.js"

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
  | { readonly _tag: "Artifact"; readonly artifactId: string; readonly name: string; readonly content: string }

export interface Frame {
  /** Session-wide sequence number, from 1, strictly increasing. */
  readonly id: number
  readonly taskId: string
  readonly contextId: string
  readonly event: TaskEvent
}

export const isFinal = (event: TaskEvent): boolean => event._tag === "Status" && event.final
