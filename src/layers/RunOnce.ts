/**
 * `run <agent dir>` composed: one task through the agent session, the door listening while it
 * runs, then the session ends (`after_task: exit`). The task is `--task TEXT`, else an existing
 * `<workdir>/task.md`, else the first A2A task within the idle window (`E-RUN-011` on expiry,
 * and no task runs). Under `task_acceptance: none` the door starts no task, so only a local task
 * runs. When the run ends is `SessionLifecycle.runOnce`'s to say; a delegated child's report to
 * its spawner is the `ChildReport` layer's. What the run says is the caller's (`RunPrinter`).
 *
 * Under `task_acceptance: queue` + `after_task: sleep` the session outlives that task, as the
 * reference's loop does: `task.md` is deleted, later tasks (A2A, detached-shell completions) run
 * as they come, and a signal ends the run, whose outcome is then the last task that settled.
 * `task.md` and `out/result.txt` are read without following links (../records/WorkdirFs.ts).
 */
import { rmSync } from "node:fs"
import { join } from "node:path"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Duration, Effect, Either, Layer, Redacted, Schema } from "effect"
import { ChildReport, readDelegated } from "../delegation/ChildReport.js"
import { watchLifeline } from "../delegation/DelegationInput.js"
import type { CapsuleProject } from "../project/CapsuleProject.js"
import { effectiveLifecycle, receivesBackgroundTasks } from "../project/manifest/Lifecycle.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { type RunOutcome, SessionLifecycle } from "../services/SessionLifecycle.js"
import type { Task } from "../services/Task.js"
import { callerSpan } from "../services/Tracing.js"
import { prepareScript, runScriptOnce } from "../script/ScriptLaunch.js"
import { agentSession, type AgentSessionOptions } from "./AgentSession.js"
import { publicDoorWarning } from "./DoorWarning.js"
import { registerSession } from "./LocalSessions.js"

/** The reference's `MURMUR_A2A_TIMEOUT_SECS` default. */
export const defaultIdleTimeoutSecs = 30

export interface AgentRunOptions extends Omit<AgentSessionOptions, "acceptance"> {
  readonly task: string | undefined
  readonly idleTimeoutSecs: number
}

/** A run that could not start or got no task: `error[code]: message` (the workdir when there is one). */
export class RunFailure extends Schema.TaggedError<RunFailure>()("RunFailure", {
  code: Schema.String,
  message: Schema.String,
  workdir: Schema.optional(Schema.String),
  /** A script guest's stderr, when it wrote any. */
  stderr: Schema.optional(Schema.String)
}) {}

/** How the run's task ended, with what the caller prints about it. */
export interface RunReport {
  readonly task: Task
  readonly workdir: string
  readonly records: string
  /** A failed task's `out/result.txt` (its first 2000 characters), when there is one. */
  readonly result: string | undefined
}

export interface Listening {
  readonly url: string
  readonly sessionId: string
  readonly capsule: { readonly name: string; readonly version: string }
  readonly workdir: string
  readonly records: string
  /** The `W-SEC-032` line when the door is bound beyond loopback with no token. */
  readonly doorWarning: string | undefined
}

/** What the run tells its caller as it goes; the caller says it. */
export interface RunPrinter {
  readonly warning: (text: string) => Effect.Effect<void>
  readonly listening: (listening: Listening) => Effect.Effect<void>
  /** A sleeping run's first task settled; it now waits for the next. */
  readonly sleeping: (task: Task) => Effect.Effect<void>
  /** The run's outcome; for a sleeping run, told when a signal ends it. */
  readonly outcome: (report: RunReport) => Effect.Effect<void>
  /** The door could not bind: the E-RUN-010 message. */
  readonly bindFailure: (error: ServeError) => string
}

/** `--task`, else `<workdir>/task.md` when it exists. */
const localTask = (task: string | undefined, workdir: string): Effect.Effect<string | undefined, WorkdirFs.WorkdirPathRefused> =>
  task !== undefined ? Effect.succeed(task) : WorkdirFs.attempt(() => WorkdirFs.read(workdir, "task.md"))

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

/** Runs the agent capsule's one task (or, sleeping, its tasks); the task the run is about. */
export const agentRun = (project: CapsuleProject, options: AgentRunOptions, printer: RunPrinter) =>
  Effect.gen(function*() {
    const lifecycle = effectiveLifecycle(project.manifest)
    // `queue` + `sleep`: the session outlives its first task and keeps taking tasks until stopped.
    const sleeps = receivesBackgroundTasks(lifecycle)
    // A capsule that may delegate takes its children's completions as tasks.
    const delegating = (project.manifest.capabilities.spawn?.allow.length ?? 0) > 0
    const door = lifecycle.taskAcceptance === "none" ? "none" as const : sleeps || delegating ? "queue" as const : "single" as const
    const read = yield* readDelegated(options.hostEnv, process.stdin)
    if (Either.isLeft(read)) return yield* new RunFailure({ code: "E-RUN-020", message: read.left })
    const delegated = read.right
    const handle = delegated?.handle
    const input = delegated?.input
    // A child stops when its parent's pipe closes, however the parent ended: a SIGTERM to itself
    // runs the same shutdown as an operator's would (its own children, workers and shells end too).
    if (input !== undefined) watchLifeline(process.stdin, () => process.kill(process.pid, "SIGTERM"))
    const startedAtMs = Date.now()
    const agent = yield* agentSession(project, {
      ...options,
      // A delegated child's door asks for its parent's token, as the parent's does.
      authToken: options.authToken ?? (input?.token === undefined ? undefined : Redacted.make(input.token)),
      ...(handle === undefined ? {} : { spawnDepth: { depth: handle.depth ?? 1, maxDepth: handle.maxDepth } }),
      acceptance: { door, registry: door === "queue" ? "queue" : "single" },
      lineage: handle === undefined ? undefined : { spawnedBy: handle.sessionId, delegationId: handle.delegationId }
    })
    for (const warning of agent.warnings) yield* printer.warning(warning)
    const { records, workdir } = agent
    const local = yield* localTask(input?.task ?? options.task, workdir).pipe(
      Effect.mapError((refused) => new RunFailure({ code: "E-RUN-002", message: refused.message, workdir }))
    )
    if (local === undefined && door === "none") {
      return yield* new RunFailure({
        code: "E-RUN-011",
        message: `${project.manifest.name} has task_acceptance: none and no local task (--task or task.md) was given`,
        workdir
      })
    }
    const reportOf = (task: Task): RunReport => ({ task, workdir, records, result: task.state === "completed" ? undefined : resultOf(workdir) })
    // A delegated child continues its parent's trace (TRACEPARENT, set by the launcher).
    const parentTrace = callerSpan(options.hostEnv["TRACEPARENT"])
    const childReport = delegated === undefined ? ChildReport.none : ChildReport.layer(delegated, {
      capsuleName: project.manifest.name,
      capsuleVersion: project.manifest.version,
      sessionId: options.sessionId,
      workdir,
      records,
      capsuleDirectory: project.directory,
      startedAtMs
    }, parentTrace)

    const session = Effect.gen(function*() {
      const identity = yield* SessionIdentity
      yield* printer.listening({
        url: identity.url,
        sessionId: identity.sessionId,
        capsule: identity.capsule,
        workdir,
        records,
        doorWarning: yield* publicDoorWarning
      })
      // Listed for `ps` (and `stop`) while the run lasts.
      yield* registerSession({ command: "run", directory: project.directory })
      const outcome: RunOutcome = yield* (yield* SessionLifecycle).runOnce({
        task: local,
        idle: Duration.seconds(options.idleTimeoutSecs),
        afterTask: sleeps ? "sleep" : "exit",
        awaitDelegations: delegating,
        onSleep: (first) =>
          Effect.zipRight(Effect.sync(() => rmSync(join(workdir, "task.md"), { force: true })), printer.sleeping(first)),
        onInterrupt: (outcome) => outcome._tag === "Settled" ? printer.outcome(reportOf(outcome.task)) : Effect.void
      })
      if (outcome._tag === "Idle") return outcome
      yield* (yield* ChildReport).settled(outcome.task)
      return outcome
    }).pipe(Effect.scoped)

    const outcome = yield* session.pipe(
      (effect) => parentTrace === undefined ? effect : Effect.withParentSpan(effect, parentTrace),
      // The child's report is built first and closed last: the spawner hears once the session has closed.
      Effect.provide(Layer.fresh(SessionLifecycle.layer.pipe(Layer.provideMerge(agent.layer), Layer.provideMerge(childReport)))),
      Effect.catchTags({
        ServeError: (error) => new RunFailure({ code: "E-RUN-010", message: printer.bindFailure(error), workdir }),
        TraceWriteFailed: (error) => new RunFailure({ code: error.code, message: error.message, workdir })
      })
    )
    if (outcome._tag === "Idle") {
      return yield* new RunFailure({ code: "E-RUN-011", message: `no task arrived within ${options.idleTimeoutSecs} s`, workdir })
    }
    yield* printer.outcome(reportOf(outcome.task))
    return outcome.task
  })

/** Runs a script capsule's `run()` once, as the reference's `mur run` does; its workdir and records. */
export const scriptRun = (
  project: CapsuleProject,
  options: { readonly sessionId: string; readonly workdir: string | undefined; readonly hostEnv: Readonly<Record<string, string | undefined>> },
  warning: (text: string) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const prepared = yield* prepareScript(project, options)
    for (const text of prepared.warnings) yield* warning(text)
    yield* runScriptOnce(prepared, {
      inTask: false,
      trust: "untrusted",
      host: {
        text: () => Effect.void,
        thinking: () => Effect.void,
        requestInput: () => Effect.fail({ message: "request-input is not available outside an A2A task context" })
      }
    }).pipe(Effect.mapError((error) =>
      new RunFailure({
        code: error._tag === "TraceWriteFailed" ? error.code : "E-RUN-001",
        message: error.message,
        workdir: prepared.workdir,
        ...(error._tag === "SandboxError" && error.stderr !== undefined ? { stderr: error.stderr } : {})
      })
    ))
    return { workdir: prepared.workdir, records: prepared.records }
  })
