/**
 * `run` and delegation, both ways. As a child (`MURMUR_SPAWNER` set by a delegating parent): the
 * handle, and the task and secrets on stdin when it says so (../agent/DelegationInput.ts), are
 * read before anything starts (`E-RUN-020` when unreadable), the lineage goes into
 * `session_start`, and once the task settles the outcome is posted to the parent's door with the
 * delegation's secret and recorded in `completion.json` beside the child's trace (in its records,
 * outside every workdir). As a parent: a capsule that may
 * delegate does not end its run with its first task while a child it started is still running
 * or a completion is still queued; the run's outcome is then the last task that settled (the
 * completion task that used the child's result, in examples/delegation).
 */
import { realpathSync } from "node:fs"
import { relative } from "node:path"
import type { Readable } from "node:stream"
import { Effect, Either, Option } from "effect"
import { type DelegationInput, readDelegationInput } from "../delegation/DelegationInput.js"
import { deliverOutcome, type DelegationOutcome } from "../delegation/DelegationOutcome.js"
import { parseSpawnerHandle, SPAWNER_ENV, type SpawnerHandle } from "../delegation/SpawnerHandle.js"
import type { DelegationTracker } from "../services/DelegationTracker.js"
import { isTerminal, type Task } from "../services/Task.js"
import type { TaskRegistry } from "../services/TaskRegistry.js"

/** The spawner handle, `undefined` for a capsule nobody delegated to; `Left`: the launch error. */
export const spawnerOf = (hostEnv: Readonly<Record<string, string | undefined>>): Either.Either<SpawnerHandle | undefined, string> => {
  const value = hostEnv[SPAWNER_ENV]
  return value === undefined ? Either.right(undefined) : parseSpawnerHandle(value)
}

/** What arrives on stdin for a handle that says so; `undefined` for one that does not. */
export const delegationInputOf = (handle: SpawnerHandle | undefined, stdin: Readable): Effect.Effect<Either.Either<DelegationInput | undefined, string>> =>
  handle?.input === "stdin" ? readDelegationInput(stdin) : Effect.succeed(Either.right(undefined))

/**
 * The workdir as the parent names it. A launcher of this runtime hands its child a path through
 * a directory only it holds (../agent/DelegationLauncher.ts); the directory itself sits in the
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
  /** The session's records (../sandbox/SessionWorkdirs.ts): the trace is there, and `completion.json` goes beside it. */
  readonly records: string
  /** The capsule directory the records sit beneath: nothing between is reached through a link. */
  readonly capsuleDirectory: string
  readonly startedAtMs: number
}

/** Posts the child's outcome (retried once) and records it; delivery problems are recorded, never fatal. */
export const reportToSpawner = (handle: SpawnerHandle, child: ChildRecord, task: Task | undefined, resultPath: string | undefined, input: DelegationInput | undefined) =>
  Effect.gen(function*() {
    const outcome: DelegationOutcome = {
      delegation_id: handle.delegationId,
      capsule_name: child.capsuleName,
      capsule_version: child.capsuleVersion,
      session_id: child.sessionId,
      status: task?.state === "completed" ? "ok" : "error",
      ...(resultPath === undefined ? {} : { result_path: asNamed(child.workdir, resultPath) }),
      workdir: asNamed(child.workdir, child.workdir),
      duration_ms: Date.now() - child.startedAtMs,
      ...(task === undefined || task.state === "completed" ? {} : { detail: `the task ended ${task.state}` }),
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
    return recorded
  })

/**
 * After a delegating capsule's first task: settles every later task (completions) until no
 * delegation is live and no task is queued or running, and returns the last one that settled.
 */
export const awaitDelegations = (registry: TaskRegistry["Type"], tracker: DelegationTracker["Type"], first: Task) =>
  Effect.gen(function*() {
    let last = first
    for (;;) {
      const current = yield* registry.current()
      if (Option.isSome(current) && current.value.id !== last.id) {
        const settled = yield* registry.awaitSettled(current.value.id).pipe(Effect.orDie)
        if (isTerminal(settled.state)) last = settled
        else yield* Effect.sleep("100 millis")
        continue
      }
      const live = yield* registry.live()
      const children = yield* tracker.list()
      if (live.length === 0 && children.length === 0) return last
      yield* Effect.sleep("100 millis")
    }
  })
