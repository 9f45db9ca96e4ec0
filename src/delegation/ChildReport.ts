/**
 * A delegated child's side of delegation. The child is one whose host environment carries
 * `MURMUR_SPAWNER` (set by a delegating parent): the handle, and the task and secrets on stdin
 * when it says so (./DelegationInput.ts), are read before anything starts (`E-RUN-020` when
 * unreadable). Once the run has its outcome, the `ChildReport` layer's finalizer posts it to the
 * parent's door with the delegation's secret and records it in `completion.json` beside the
 * child's trace (in its records, outside every workdir). The finalizer runs after the session's
 * own (the layer is built before it), so the parent hears of the child once the child's session
 * has closed. For a capsule nobody delegated to, `ChildReport.none` records nothing.
 */
import { existsSync, realpathSync } from "node:fs"
import { join, relative } from "node:path"
import type { Readable } from "node:stream"
import { Context, Effect, Either, Layer, Option, Ref, type Tracer } from "effect"
import { type DelegationInput, readDelegationInput } from "./DelegationInput.js"
import { deliverOutcome, type DelegationOutcome } from "./DelegationOutcome.js"
import { parseSpawnerHandle, SPAWNER_ENV, type SpawnerHandle } from "./SpawnerHandle.js"
import type { Task } from "../services/Task.js"

/** What a delegating parent handed this child. */
export interface Delegated {
  readonly handle: SpawnerHandle
  /** The task and secrets read from stdin, when the handle said they come there. */
  readonly input: DelegationInput | undefined
}

/** The spawner handle and its stdin input; `undefined` for a capsule nobody delegated to; `Left`: the launch error. */
export const readDelegated = (hostEnv: Readonly<Record<string, string | undefined>>, stdin: Readable): Effect.Effect<Either.Either<Delegated | undefined, string>> =>
  Effect.gen(function*() {
    const value = hostEnv[SPAWNER_ENV]
    if (value === undefined) return Either.right(undefined)
    const handle = parseSpawnerHandle(value)
    if (Either.isLeft(handle)) return Either.left(handle.left)
    if (handle.right.input !== "stdin") return Either.right({ handle: handle.right, input: undefined })
    const input = yield* readDelegationInput(stdin)
    return Either.map(input, (read) => ({ handle: handle.right, input: read }))
  })

/**
 * The workdir as the parent names it. A launcher of this runtime hands its child a path through
 * a directory only it holds (./DelegationLauncher.ts); the directory itself sits in the
 * parent's workdir, where the parent's own tools find the result.
 */
const asNamed = (workdir: string, path: string): string => {
  try {
    const real = realpathSync(workdir)
    const rest = relative(workdir, path)
    return rest === "" ? real : `${real}/${rest}`
  } catch {
    return path
  }
}

export interface ChildRecord {
  readonly capsuleName: string
  readonly capsuleVersion: string
  readonly sessionId: string
  /** The accessible workdir (its `out/result.txt` is the result). */
  readonly workdir: string
  /** The session's records (../records/SessionWorkdirs.ts): the trace is there, and `completion.json` goes beside it. */
  readonly records: string
  /** The capsule directory the records sit beneath: nothing between is reached through a link. */
  readonly capsuleDirectory: string
  readonly startedAtMs: number
}

/** Posts the child's outcome (retried once) and records it; delivery problems are recorded, never fatal. */
const reportToSpawner = ({ handle, input }: Delegated, child: ChildRecord, task: Task) =>
  Effect.gen(function*() {
    const resultPath = join(child.workdir, "out", "result.txt")
    const outcome: DelegationOutcome = {
      delegation_id: handle.delegationId,
      capsule_name: child.capsuleName,
      capsule_version: child.capsuleVersion,
      session_id: child.sessionId,
      status: task.state === "completed" ? "ok" : "error",
      ...(existsSync(resultPath) ? { result_path: asNamed(child.workdir, resultPath) } : {}),
      workdir: asNamed(child.workdir, child.workdir),
      duration_ms: Date.now() - child.startedAtMs,
      ...(task.state === "completed" ? {} : { detail: `the task ended ${task.state}` }),
      reported_by: "child",
      delivered: false
    }
    const target = handle.completion === undefined ? undefined : {
      url: handle.completion.url,
      parentSessionId: handle.sessionId,
      contextId: handle.contextId,
      delegationId: handle.delegationId,
      trust: handle.completion.trust,
      token: input?.token,
      secret: input?.secret
    }
    const recorded = yield* deliverOutcome(target, { within: child.capsuleDirectory, directory: child.records }, outcome)
    if (!recorded.delivered) yield* Effect.logWarning(`completion of ${handle.delegationId} not delivered: ${recorded.delivery_error ?? ""}`)
  })

export class ChildReport extends Context.Tag("capsule-runtime/delegation/ChildReport")<ChildReport, {
  /** The run ended by itself with this task: the spawner hears of it when the layer closes. */
  readonly settled: (task: Task) => Effect.Effect<void>
}>() {
  /** For a capsule nobody delegated to. */
  static readonly none: Layer.Layer<ChildReport> = Layer.succeed(ChildReport, ChildReport.of({ settled: () => Effect.void }))

  /** Reports to `delegated`'s spawner, in the parent's trace (`parentSpan`, from TRACEPARENT) when there is one. */
  static readonly layer = (delegated: Delegated, child: ChildRecord, parentSpan: Tracer.AnySpan | undefined): Layer.Layer<ChildReport> =>
    Layer.scoped(
      ChildReport,
      Effect.gen(function*() {
        const outcome = yield* Ref.make(Option.none<Task>())
        // A run that was interrupted, or never got a task, reports nothing: the launcher reports for it.
        yield* Effect.addFinalizer(() =>
          Effect.flatMap(Ref.get(outcome), Option.match({
            onNone: () => Effect.void,
            onSome: (task) => {
              const report = reportToSpawner(delegated, child, task)
              return parentSpan === undefined ? report : Effect.withParentSpan(report, parentSpan)
            }
          }))
        )
        return ChildReport.of({ settled: (task) => Ref.set(outcome, Option.some(task)) })
      })
    )
}
