/**
 * How a delegation ends, written down (door spec §8.1): the outcome record (`completion.json` in
 * the child's session directory, beside its trace), the completion text the parent's loop reads,
 * and the one POST that delivers it. The text and the record name the delegation, the child's
 * session, a status word, a duration and paths; never the child's output, which stays in its
 * result file for the parent to read (or not) with its own tools.
 */
import { join, relative } from "node:path"
import { Effect } from "effect"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { mintId } from "../services/Ids.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import type { Trust } from "../services/Task.js"
import { loopbackDoor } from "./SpawnerHandle.js"

export const COMPLETION_FILE = "completion.json"

export type DelegationStatus = "ok" | "error" | "crashed" | "terminated"

export interface DelegationOutcome {
  readonly delegation_id: string
  readonly capsule_name: string
  readonly capsule_version: string
  /** The child's own session, so its trace is findable. */
  readonly session_id: string
  readonly status: DelegationStatus
  /** Absolute; absent when the child left none. */
  readonly result_path?: string
  /** The child's accessible workdir, absolute. */
  readonly workdir: string
  readonly duration_ms: number
  /** For `crashed` / `terminated`: why, in one line (never output). */
  readonly detail?: string
  readonly reported_by: "child" | "launcher"
  readonly delivered: boolean
  readonly delivery_error?: string
  readonly completion_task_id?: string
}

/** The completion message's text: what the parent's loop reads as its task. */
export const outcomeText = (outcome: DelegationOutcome): string =>
  [
    `Delegation ${outcome.delegation_id} to ${outcome.capsule_name}@${outcome.capsule_version} finished: ${outcome.status}`,
    `child session: ${outcome.session_id}`,
    `duration: ${outcome.duration_ms} ms`,
    `workdir: ${outcome.workdir}`,
    outcome.result_path === undefined ? "result: none" : `result: ${outcome.result_path}`,
    ...(outcome.detail === undefined ? [] : [`detail: ${outcome.detail}`])
  ].join("\n")

/**
 * Where a session's records are (its `trace.jsonl`, its `completion.json`): `directory`, reached
 * from `within` without following a link (../sandbox/WorkdirFs.ts), as the trace is.
 */
export interface RecordsPlace {
  readonly within: string
  readonly directory: string
}

const completionPath = (place: RecordsPlace) => join(relative(place.within, place.directory), COMPLETION_FILE)

/** Writes the record whole (renamed into place), never through a link; a refused path throws. */
export const writeCompletionFile = (place: RecordsPlace, outcome: DelegationOutcome): void =>
  WorkdirFs.replace(place.within, completionPath(place), `${JSON.stringify(outcome, null, 2)}\n`)

/** The record, when there is a readable one; a link where it should be reads as none. */
export const readCompletionFile = (place: RecordsPlace): DelegationOutcome | undefined => {
  try {
    const text = WorkdirFs.read(place.within, completionPath(place))
    if (text === undefined) return undefined
    const parsed = JSON.parse(text) as DelegationOutcome
    return typeof parsed.delegation_id === "string" && typeof parsed.status === "string" ? parsed : undefined
  } catch {
    return undefined
  }
}

export interface CompletionTarget {
  /** The parent's door (`http://127.0.0.1:PORT/`), loopback only. */
  readonly url: string
  readonly parentSessionId: string
  readonly contextId: string
  readonly delegationId: string
  /** The trust of the task that delegated, inherited by its completion. */
  readonly trust: Trust
  /** The parent door's bearer token, when it has one (`serve --auth-token`). */
  readonly token?: string | undefined
  /** The delegation's completion secret (the parent's door refuses a completion without it). */
  readonly secret?: string | undefined
}

export type Delivery =
  | { readonly delivered: true; readonly taskId: string | undefined }
  | { readonly delivered: false; readonly error: string }

const ATTEMPT_TIMEOUT_MS = 5000

const attempt = async (target: CompletionTarget, text: string, traceHeaders: Readonly<Record<string, string>>): Promise<Delivery> => {
  const door = loopbackDoor(target.url)
  if (door === undefined) return { delivered: false, error: `the completion url ${target.url} is not an http address on loopback` }
  const body = {
    jsonrpc: "2.0",
    id: mintId("req"),
    method: "message/send",
    params: { message: { messageId: mintId("msg"), contextId: target.contextId, role: "user", parts: [{ text }] } }
  }
  try {
    const response = await fetch(door, {
      method: "POST",
      // A parent door never redirects; one that does is not the parent's door.
      redirect: "manual",
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      headers: {
        ...traceHeaders,
        "content-type": "application/json",
        "x-murmur-task-origin": "completion",
        "x-murmur-task-trust": target.trust,
        "x-murmur-delegation-id": target.delegationId,
        "x-murmur-completion-session": target.parentSessionId,
        ...(target.secret === undefined ? {} : { "x-murmur-completion-secret": target.secret }),
        ...(target.token === undefined ? {} : { authorization: `Bearer ${target.token}` })
      },
      body: JSON.stringify(body)
    })
    if (response.status !== 200) return { delivered: false, error: `the parent's door answered HTTP ${response.status}` }
    const answer = await response.json() as { error?: { code?: number; message?: string }; result?: { id?: unknown; status?: { state?: unknown } } }
    if (answer.error !== undefined) return { delivered: false, error: `the parent answered ${answer.error.code ?? "?"}: ${answer.error.message ?? ""}` }
    if (answer.result?.status?.state === "rejected") return { delivered: false, error: "the parent rejected the completion: its queue is full" }
    return { delivered: true, taskId: typeof answer.result?.id === "string" ? answer.result.id : undefined }
  } catch (error) {
    return { delivered: false, error: `the parent's door did not answer: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/** Posts the completion; a non-delivery is retried once (spec §8.1), and the last one is returned. */
export const postCompletion = (target: CompletionTarget, text: string): Effect.Effect<Delivery> =>
  Effect.flatMap(outgoingTraceHeaders, (traceHeaders) => Effect.promise(async () => {
    const first = await attempt(target, text, traceHeaders)
    if (first.delivered) return first
    await new Promise((resolve) => setTimeout(resolve, 250))
    return attempt(target, text, traceHeaders)
  }))

/**
 * Delivers an outcome and records it, delivery included. A record that cannot be written (a
 * link planted where it goes) is logged, never fatal: the delivery has happened either way.
 */
export const deliverOutcome = (target: CompletionTarget | undefined, place: RecordsPlace, outcome: DelegationOutcome) =>
  Effect.gen(function*() {
    const delivery: Delivery = target === undefined ? { delivered: false, error: "the spawner asked for no completion" } : yield* postCompletion(target, outcomeText(outcome))
    const recorded: DelegationOutcome = delivery.delivered
      ? { ...outcome, delivered: true, ...(delivery.taskId === undefined ? {} : { completion_task_id: delivery.taskId }) }
      : { ...outcome, delivered: false, delivery_error: delivery.error }
    yield* Effect.try(() => writeCompletionFile(place, recorded)).pipe(
      Effect.catchAll((error) => Effect.logWarning(`${COMPLETION_FILE} of ${outcome.delegation_id} not written: ${error.error instanceof Error ? error.error.message : String(error.error)}`))
    )
    return recorded
  })
