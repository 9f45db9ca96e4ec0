/**
 * `run <agent dir>`: one task through the agent session, the door listening while it runs, then
 * the session ends (`after_task: exit`). The task is `--task TEXT`, else an existing
 * `<workdir>/task.md`, else the first A2A task within the idle window (`--idle-timeout`, 30 s by
 * default; on expiry E-RUN-011 and no task runs). Under `task_acceptance: none` the door starts no
 * task, so only a local task runs. Exit 0 only when the task completed.
 *
 * Under `task_acceptance: queue` + `after_task: sleep` the session outlives that task, as the
 * reference's loop does: `task.md` is deleted, later tasks (A2A, detached-shell completions) run
 * as they come, and a signal ends the run, whose outcome is then the last task that settled.
 * `task.md` and `out/result.txt` are read without following links (../sandbox/WorkdirFs.ts).
 */
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Console, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import type { CapsuleProject } from "../project/CapsuleProject.js"
import { effectiveLifecycle, receivesBackgroundTasks } from "../project/manifest/Lifecycle.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { mintId } from "../services/Ids.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { isTerminal, type Task } from "../services/Task.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { TaskRunner } from "../services/TaskRunner.js"
import { callerSpan } from "../services/Tracing.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { awaitDelegations, delegationInputOf, reportToSpawner, spawnerOf } from "./DelegatedRun.js"
import { agentSession, type AgentSessionOptions } from "../layers/AgentSession.js"
import { warnPublicDoor } from "./DoorAccess.js"
import { bindFailureMessage, type DoorPort } from "./DoorPort.js"
import { exitWith } from "./Exit.js"
import { reportLaunchFailure } from "./LaunchFailure.js"

/** The reference's `MURMUR_A2A_TIMEOUT_SECS` default. */
export const defaultIdleTimeoutSecs = 30

export interface AgentRunOptions extends Omit<AgentSessionOptions, "acceptance"> {
  readonly task: string | undefined
  readonly idleTimeoutSecs: number
  readonly json: boolean
  /** Where `port` came from (`--port`, `network.internal_port`), named when it cannot be bound. */
  readonly portSource?: DoorPort["source"] | undefined
}

/** `--task`, else `<workdir>/task.md` when it exists. */
const localTask = (task: string | undefined, workdir: string): Effect.Effect<string | undefined, WorkdirFs.WorkdirPathRefused> =>
  task !== undefined ? Effect.succeed(task) : WorkdirFs.attempt(() => WorkdirFs.read(workdir, "task.md"))

type Settled = { readonly _tag: "Settled"; readonly task: Task }
type Outcome = Settled | { readonly _tag: "Idle" }

const settle = (registry: TaskRegistry["Type"], taskId: string) =>
  Effect.gen(function*() {
    for (;;) {
      const task = yield* registry.awaitSettled(taskId).pipe(Effect.orDie)
      if (isTerminal(task.state)) return { _tag: "Settled", task } satisfies Settled
      yield* Effect.sleep("100 millis")
    }
  })

const statusOf = (task: Task) => (task.state === "completed" ? "ok" : "failed")

/** `out/result.txt` (its first 2000 characters), when there is one. */
const resultOf = (workdir: string): string | undefined => {
  let text: string | undefined
  try {
    text = WorkdirFs.read(workdir, "out/result.txt")
  } catch (error) {
    if (error instanceof WorkdirFs.WorkdirPathRefused) return error.message
    throw error
  }
  if (text === undefined) return undefined
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text
}

/**
 * Whether `out/result.txt` only repeats the status message: a failed task's message already
 * carries the reason ("session ended: request to … failed") that the file holds as "error: …",
 * and printing both says it twice. A result that says more is still printed.
 */
const repeatsMessage = (message: string | undefined, result: string) => {
  const reason = result.trim().replace(/^error:\s*/, "")
  return message !== undefined && reason !== "" && message.includes(reason)
}

export const agentRun = (project: CapsuleProject, options: AgentRunOptions) =>
  Effect.gen(function*() {
    const lifecycle = effectiveLifecycle(project.manifest)
    // `queue` + `sleep`: the session outlives its first task and keeps taking tasks until stopped.
    const sleeps = receivesBackgroundTasks(lifecycle)
    // A capsule that may delegate takes its children's completions as tasks (./DelegatedRun.ts).
    const delegating = (project.manifest.capabilities.spawn?.allow.length ?? 0) > 0
    const door = lifecycle.taskAcceptance === "none" ? "none" as const : sleeps || delegating ? "queue" as const : "single" as const
    const spawner = spawnerOf(options.hostEnv)
    if (Either.isLeft(spawner)) return yield* reportLaunchFailure("E-RUN-020", spawner.left, options.json)
    const handle = spawner.right
    const delegated = yield* delegationInputOf(handle, process.stdin)
    if (Either.isLeft(delegated)) return yield* reportLaunchFailure("E-RUN-020", delegated.left, options.json)
    const input = delegated.right
    const startedAtMs = Date.now()
    const agent = yield* agentSession(project, {
      ...options,
      // A delegated child's door asks for its parent's token, as the parent's does.
      authToken: options.authToken ?? (input?.token === undefined ? undefined : Redacted.make(input.token)),
      ...(handle === undefined ? {} : { spawnDepth: { depth: handle.depth ?? 1, maxDepth: handle.maxDepth } }),
      acceptance: { door, registry: door === "queue" ? "queue" : "single" },
      lineage: handle === undefined ? undefined : { spawnedBy: handle.sessionId, delegationId: handle.delegationId }
    })
    for (const warning of agent.warnings) yield* Console.error(warning)
    const { records, workdir } = agent
    /** The `exit` line (or the two human lines); exit status 1 unless the task completed. */
    const report = ({ task }: Settled) =>
      Effect.gen(function*() {
        const ok = task.state === "completed"
        // A failed task's frames say "session ended" (the reference's text); the reason is here.
        const result = ok ? undefined : resultOf(workdir)
        if (options.json) {
          yield* Console.log(JSON.stringify({
            event: "exit",
            status: statusOf(task),
            workdir,
            records,
            task_id: task.id,
            ...(ok ? {} : {
              state: task.state,
              ...(task.statusMessage === undefined ? {} : { message: task.statusMessage }),
              ...(result === undefined ? {} : { result })
            })
          }))
        } else {
          if (!ok) yield* Console.error(`task ${task.id} ${task.state}${task.statusMessage === undefined ? "" : `: ${task.statusMessage}`}`)
          if (result !== undefined && !repeatsMessage(task.statusMessage, result)) yield* Console.error(result)
          yield* Console.log(`status:  ${ok ? "ok" : "failed"}\nworkdir: ${workdir}`)
        }
        // A signal ends a sleeping run by interruption, which carries no status of its own.
        if (!ok) process.exitCode = 1
      })
    const read = yield* Effect.either(localTask(input?.task ?? options.task, workdir))
    if (Either.isLeft(read)) return yield* reportLaunchFailure("E-RUN-002", read.left.message, options.json, workdir)
    const local = read.right
    if (local === undefined && door === "none") {
      return yield* reportLaunchFailure(
        "E-RUN-011",
        `${project.manifest.name} has task_acceptance: none and no local task (--task or task.md) was given`,
        options.json,
        workdir
      )
    }

    const session = Effect.gen(function*() {
      const identity = yield* SessionIdentity
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      if (options.json) {
        yield* Console.log(JSON.stringify({ event: "listening", url: identity.url, session_id: identity.sessionId, workdir, records }))
      } else {
        yield* Console.log(`capsule ${identity.capsule.name}@${identity.capsule.version} running at ${identity.url}`)
      }
      yield* warnPublicDoor
      let taskId: string
      if (local !== undefined) {
        const acceptance = yield* runner.submit({
          message: { role: "user", messageId: mintId("msg"), parts: [{ kind: "text", text: local }] },
          provenance: { origin: "user", trust: "trusted", hostSource: "task_md" },
          dialect: "a2a"
        })
        // Rejected only when an A2A task won the single slot first: that one is the run's task.
        const first = acceptance._tag === "Accepted" ? Option.some(acceptance.task) : yield* registry.current()
        if (Option.isNone(first)) return { _tag: "Idle" } satisfies Outcome
        taskId = first.value.id
      } else {
        const waitFirst = Effect.gen(function*() {
          for (;;) {
            const current = yield* registry.current()
            if (Option.isSome(current)) return current.value
            yield* Effect.sleep("50 millis")
          }
        })
        const first = yield* waitFirst.pipe(Effect.timeoutOption(Duration.seconds(options.idleTimeoutSecs)))
        if (Option.isNone(first)) return { _tag: "Idle" } satisfies Outcome
        taskId = first.value.id
      }
      const settled = yield* settle(registry, taskId)
      if (!sleeps) return delegating ? { _tag: "Settled", task: yield* awaitDelegations(registry, yield* DelegationTracker, settled.task) } satisfies Settled : settled
      rmSync(join(workdir, "task.md"), { force: true })
      // The run's outcome is its last settled task when a signal ends the session.
      let last = settled
      yield* Console.log(options.json ? JSON.stringify({ event: "task", status: statusOf(last.task), task_id: last.task.id }) : `task ${last.task.id} ${last.task.state}; sleeping until the next task (Ctrl-C ends the session)`)
      return yield* Effect.gen(function*() {
        for (;;) {
          const current = yield* registry.current()
          if (Option.isSome(current) && current.value.id !== last.task.id) last = yield* settle(registry, current.value.id)
          yield* Effect.sleep("100 millis")
        }
      }).pipe(Effect.onInterrupt(() =>
        // The signal may beat the poll to a task that has just settled: ask the registry itself.
        Effect.flatMap(registry.current(), (current) =>
          report(Option.isSome(current) && isTerminal(current.value.state) ? { _tag: "Settled", task: current.value } : last))
      ))
    })

    // A delegated child continues its parent's trace (TRACEPARENT, set by the launcher).
    const parentTrace = callerSpan(options.hostEnv["TRACEPARENT"])
    const continueTrace = <A, E, R>(effect: Effect.Effect<A, E, R>) => parentTrace === undefined ? effect : Effect.withParentSpan(effect, parentTrace)
    const outcome: Outcome = yield* session.pipe(
      continueTrace,
      Effect.provide(Layer.fresh(agent.layer)),
      Effect.catchTags({
        ServeError: (error) =>
          reportLaunchFailure(
            "E-RUN-010",
            bindFailureMessage(options.host, { port: options.port, source: options.portSource ?? "--port" }, error),
            options.json,
            workdir
          ),
        TraceWriteFailed: (error) => reportLaunchFailure(error.code, error.message, options.json, workdir)
      })
    )
    if (outcome._tag === "Idle") {
      return yield* reportLaunchFailure("E-RUN-011", `no task arrived within ${options.idleTimeoutSecs} s`, options.json, workdir)
    }
    yield* report(outcome)
    if (handle !== undefined) {
      const resultPath = join(workdir, "out", "result.txt")
      yield* reportToSpawner(handle, {
        capsuleName: project.manifest.name,
        capsuleVersion: project.manifest.version,
        sessionId: options.sessionId,
        workdir,
        records,
        capsuleDirectory: project.directory,
        startedAtMs
      }, outcome.task, existsSync(resultPath) ? resultPath : undefined, input).pipe(continueTrace)
    }
    if (outcome.task.state !== "completed") return yield* exitWith(1)
  })
