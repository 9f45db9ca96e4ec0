/**
 * Starting child capsules for `delegate-task` (door spec §8.1), scoped to the parent session.
 * Each child is this runtime's own `run <child dir> --task …` in a process (and process group) of
 * its own, with its own door on a free loopback port, its workdir under the parent's
 * (`delegations/<dlg id>/`) and `MURMUR_SPAWNER` naming the parent. `start` returns once the
 * child's door is listening; a watcher then waits for the child to end. A child that reported
 * its own outcome (its `completion.json`) is only traced; one that died without reporting is
 * reported `crashed`, and one that outlives `delegation_deadline_secs` is killed and reported
 * `terminated`, both posted to the parent's own door as the child would have. When the session
 * ends, every child still running is killed (SIGTERM to its group, SIGKILL 3 s later): no child
 * outlives the session that started it.
 */
import { Command, type CommandExecutor } from "@effect/platform"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Context, Deferred, Duration, Effect, Either, Fiber, FiberMap, Layer, Redacted, Schema, Stream } from "effect"
import { parse } from "yaml"
import { executableOnPath, SYSTEM_DIRS } from "../sandbox/containment/HostProbe.js"
import * as WorkdirFs from "../sandbox/WorkdirFs.js"
import { sessionRecords } from "../sandbox/SessionWorkdirs.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { mintId } from "../services/Ids.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import type { Trust } from "../services/Task.js"
import { Trace } from "./Trace.js"
import { type CompletionTarget, deliverOutcome, type DelegationOutcome, readCompletionFile } from "./DelegationOutcome.js"
import { encodeSpawnerHandle, SPAWNER_ENV, SPAWNER_TOKEN_ENV } from "./SpawnerHandle.js"

/** Why `delegate-task` refused or failed; the message is what the model reads. */
export class DelegationError extends Schema.TaggedError<DelegationError>()("DelegationError", {
  reason: Schema.Literal("NotAllowed", "NotFound", "Launch"),
  message: Schema.String
}) {}

export interface DelegationRequest {
  /** A name from `capabilities.spawn.allow`. */
  readonly capsule: string
  readonly task: string
  /** The delegating task: its id, context (the completion joins it) and trust (inherited). */
  readonly taskId: string
  readonly contextId: string
  readonly trust: Trust
}

export interface StartedDelegation {
  readonly delegationId: string
  readonly capsule: string
  readonly version: string
  readonly childSessionId: string
  /** Relative to the parent's accessible workdir. */
  readonly childWorkdir: string
  readonly childUrl: string
  readonly pid: number
  /** From the launch to the child's door listening. */
  readonly startupMs: number
}

export interface LauncherOptions {
  /** The parent capsule's directory: names resolve beside it (see `resolveCapsule`). */
  readonly capsuleDirectory: string
  /** The parent's accessible workdir. */
  readonly workdir: string
  readonly sessionId: string
  readonly allow: ReadonlyArray<string>
  readonly deadlineSecs: number
  /** How to start this runtime: `[node, dist/main.js]`. */
  readonly runtime: ReadonlyArray<string>
  /** The parent door's bearer token: completions (the child's and the launcher's) carry it. */
  readonly doorToken?: Redacted.Redacted<string> | undefined
}

/**
 * This runtime's own entry point, from src/agent or dist/agent alike. Under util-linux `setpriv
 * --pdeathsig KILL` where it exists, so a child ends even when the parent is killed with SIGKILL
 * and cannot run its finalizers. KILL, not TERM: with its parent gone there is nobody to report
 * to, and its own commands and children go with it regardless (bwrap `--die-with-parent`, their
 * own pdeathsig).
 */
export const defaultRuntime = (
  execPath: string,
  setpriv: string | undefined = executableOnPath("setpriv", undefined, SYSTEM_DIRS)
): ReadonlyArray<string> => [
  ...(setpriv === undefined ? [] : [setpriv, "--pdeathsig", "KILL", "--"]),
  execPath,
  new URL("../../dist/main.js", import.meta.url).pathname
]

const STARTUP_TIMEOUT = Duration.seconds(30)
const KILL_GRACE = Duration.seconds(3)
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/**
 * A `spawn.allow` name is a capsule directory: `<parent>/.murmur/capsules/<name>/` first, else a
 * sibling of the parent's directory, `<parent>/../<name>/`. Nothing else is searched.
 */
export const capsuleCandidates = (parentDirectory: string, name: string): ReadonlyArray<string> => [
  join(parentDirectory, ".murmur", "capsules", name),
  join(dirname(parentDirectory), name)
]

const resolveCapsule = (parentDirectory: string, name: string) =>
  Effect.gen(function*() {
    const candidates = capsuleCandidates(parentDirectory, name)
    const directory = NAME.test(name) ? candidates.find((candidate) => existsSync(join(candidate, "murmur.yaml"))) : undefined
    if (directory === undefined) {
      return yield* new DelegationError({
        reason: "NotFound",
        message: `capsule '${name}' resolves to no capsule directory: looked for murmur.yaml in ${candidates.join(" and ")}`
      })
    }
    const manifest = yield* Effect.try(() => parse(readFileSync(join(directory, "murmur.yaml"), "utf8")) as { name?: unknown; version?: unknown }).pipe(
      Effect.mapError(() => new DelegationError({ reason: "NotFound", message: `capsule '${name}': ${directory}/murmur.yaml is not YAML` }))
    )
    const version = typeof manifest?.version === "string" ? manifest.version : "0.0.0"
    return { directory, version }
  })

interface ChildLine {
  readonly event?: string
  readonly session_id?: string
  readonly url?: string
  readonly error?: { readonly code?: string; readonly message?: string }
}

const jsonLine = (line: string): ChildLine | undefined => {
  try {
    const value = JSON.parse(line) as unknown
    return typeof value === "object" && value !== null ? value as ChildLine : undefined
  } catch {
    return undefined
  }
}

export class DelegationLauncher extends Context.Tag("capsule-runtime/agent/DelegationLauncher")<DelegationLauncher, {
  /** The names `capabilities.spawn.allow` grants (empty: `delegate-task` is not offered). */
  readonly allowed: ReadonlyArray<string>
  /** Starts a child and returns once its door listens. */
  readonly start: (request: DelegationRequest) => Effect.Effect<StartedDelegation, DelegationError>
}>() {
  /** A completion goes to the parent's own door, its `DoorAddress`. */
  static readonly layer = (options: LauncherOptions): Layer.Layer<DelegationLauncher, never, DelegationTracker | Trace | DoorAddress | CommandExecutor.CommandExecutor> =>
    Layer.scoped(DelegationLauncher, make(options))
}

const make = (options: LauncherOptions) =>
  Effect.gen(function*() {
    const tracker = yield* DelegationTracker
    const trace = yield* Trace
    const door = yield* DoorAddress
    const context = yield* Effect.context<CommandExecutor.CommandExecutor>()
    const children = yield* FiberMap.make<string>()

    const start = Effect.fn("DelegationLauncher.start")(function*(request: DelegationRequest) {
      if (!options.allow.includes(request.capsule)) {
        return yield* new DelegationError({
          reason: "NotAllowed",
          message: `capsule '${request.capsule}' is not in capabilities.spawn.allow (allowed: ${options.allow.join(", ")})`
        })
      }
      const { directory, version } = yield* resolveCapsule(options.capsuleDirectory, request.capsule)
      const delegationId = mintId("dlg")
      const relativeWorkdir = `delegations/${delegationId}`
      const workdir = join(options.workdir, relativeWorkdir)
      // Never through a link a guest or a command planted at delegations/ (../sandbox/WorkdirFs.ts).
      yield* WorkdirFs.attempt(() => WorkdirFs.makeDirectory(options.workdir, relativeWorkdir)).pipe(
        Effect.mapError((refused) => new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${refused.message}` }))
      )
      const url = door.url
      const target: CompletionTarget = {
        url,
        parentSessionId: options.sessionId,
        contextId: request.contextId,
        delegationId,
        trust: request.trust,
        token: options.doorToken === undefined ? undefined : Redacted.value(options.doorToken)
      }
      const ready = yield* Deferred.make<StartedDelegation, DelegationError>()
      yield* FiberMap.run(children, delegationId, child(request, { directory, version, delegationId, relativeWorkdir, workdir, target }, ready).pipe(Effect.provide(context)))
      return yield* Deferred.await(ready)
    })

    interface Launch {
      readonly directory: string
      readonly version: string
      readonly delegationId: string
      readonly relativeWorkdir: string
      readonly workdir: string
      readonly target: CompletionTarget
    }

    /** One child's whole life: launch, wait for its door, then for its end or its deadline. */
    const child = (request: DelegationRequest, launch: Launch, ready: Deferred.Deferred<StartedDelegation, DelegationError>) =>
      Effect.gen(function*() {
        const traceHeaders = yield* outgoingTraceHeaders
        const began = Date.now()
        const [program, ...leading] = options.runtime
        const command = Command.make(
          program!,
          ...leading,
          "run",
          launch.directory,
          "--task",
          request.task,
          "--json",
          "--workdir",
          launch.workdir,
          "--host",
          "127.0.0.1",
          "--port",
          "0"
        ).pipe(Command.env({
          [SPAWNER_ENV]: encodeSpawnerHandle({ sessionId: options.sessionId, contextId: request.contextId, delegationId: launch.delegationId, completion: { url: launch.target.url, trust: request.trust } }),
          ...(launch.target.token === undefined ? {} : { [SPAWNER_TOKEN_ENV]: launch.target.token }),
          // W3C trace context: the child's task continues this trace (src/cli/AgentRun.ts).
          ...(traceHeaders.traceparent === undefined ? {} : { TRACEPARENT: traceHeaders.traceparent })
        }))
        const failLaunch = (message: string) => Deferred.fail(ready, new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${message}` }))
        const proc = yield* Command.start(command).pipe(Effect.tapError((error) => failLaunch(error.message)))
        const killGroup = proc.kill("SIGTERM").pipe(
          Effect.timeoutFail({ duration: KILL_GRACE, onTimeout: () => "grace" }),
          Effect.catchAll(() => proc.kill("SIGKILL")),
          Effect.ignore
        )
        // Runs before the Process's own finalizer (which signals once and waits without bound).
        yield* Effect.addFinalizer(() => Effect.flatMap(proc.isRunning, (running) => running ? killGroup : Effect.void).pipe(Effect.ignore))
        const listening = yield* Deferred.make<ChildLine>()
        let exitLine: ChildLine | undefined
        const stderrTail: Array<string> = []
        yield* proc.stdout.pipe(
          Stream.decodeText(),
          Stream.splitLines,
          Stream.runForEach((line) => {
            const parsed = jsonLine(line)
            if (parsed?.event === "listening") return Deferred.succeed(listening, parsed)
            if (parsed?.event === "exit") exitLine = parsed
            return Effect.void
          }),
          Effect.ignore,
          Effect.forkScoped
        )
        yield* proc.stderr.pipe(
          Stream.decodeText(),
          Stream.splitLines,
          Stream.runForEach((line) => Effect.sync(() => void (stderrTail.push(line) > 20 && stderrTail.shift()))),
          Effect.ignore,
          Effect.forkScoped
        )
        const exited = yield* Effect.fork(Effect.either(proc.exitCode))
        const endedHow = (exit: Either.Either<number, { readonly message: string }>) =>
          Either.isRight(exit) ? `exit code ${exit.right}` : exit.left.message.replace(/^.*receipt of signal: /, "killed by ")
        const first = yield* Effect.raceFirst(
          Deferred.await(listening).pipe(Effect.map((line) => Either.right<ChildLine>(line))),
          Fiber.join(exited).pipe(Effect.map((exit) => Either.left(exit)))
        ).pipe(Effect.timeoutOption(STARTUP_TIMEOUT))
        if (first._tag === "None") {
          yield* killGroup
          return yield* failLaunch(`its door was not listening after ${Duration.toSeconds(STARTUP_TIMEOUT)} s`)
        }
        if (Either.isLeft(first.value)) {
          // Let the last stdout line (the child's `exit` event) arrive before reading it.
          yield* Effect.sleep("50 millis")
          const error = (exitLine as ChildLine | undefined)?.error
          return yield* failLaunch(error?.message === undefined
            ? `${endedHow(first.value.left)}${stderrTail.length > 0 ? `: ${stderrTail.slice(-3).join(" / ")}` : ""}`
            : `error[${error.code ?? "?"}]: ${error.message}`)
        }
        const line = first.value.right
        const childSessionId = line.session_id ?? "ses_unknown"
        const started: StartedDelegation = {
          delegationId: launch.delegationId,
          capsule: request.capsule,
          version: launch.version,
          childSessionId,
          childWorkdir: launch.relativeWorkdir,
          childUrl: line.url ?? "",
          pid: proc.pid,
          startupMs: Date.now() - began
        }
        yield* tracker.record({
          delegation_id: launch.delegationId,
          capsule: request.capsule,
          version: launch.version,
          child_session_id: childSessionId,
          child_workdir: launch.relativeWorkdir
        })
        yield* trace.record("delegation_start", undefined, {
          task_id: request.taskId,
          delegation_id: launch.delegationId,
          capsule: request.capsule,
          version: launch.version,
          child_session_id: childSessionId,
          child_workdir: launch.relativeWorkdir,
          pid: proc.pid,
          deadline_secs: options.deadlineSecs,
          startup_ms: started.startupMs
        }).pipe(Effect.ignore)
        yield* Deferred.succeed(ready, started)

        // The child's records (its trace, and `completion.json` beside it), under its own capsule directory.
        const records = sessionRecords(launch.directory, childSessionId)
        const resultPath = () => join(launch.workdir, "out", "result.txt")
        const base = () => ({
          delegation_id: launch.delegationId,
          capsule_name: request.capsule,
          capsule_version: launch.version,
          session_id: childSessionId,
          workdir: launch.workdir,
          ...(existsSync(resultPath()) ? { result_path: resultPath() } : {}),
          reported_by: "launcher" as const,
          delivered: false
        })
        const traceEnd = (outcome: DelegationOutcome, exit: string) =>
          trace.record("delegation", undefined, {
            delegation_id: outcome.delegation_id,
            capsule: outcome.capsule_name,
            version: outcome.capsule_version,
            child_session_id: outcome.session_id,
            status: outcome.status,
            reported_by: outcome.reported_by,
            duration_ms: outcome.duration_ms,
            child_exit: exit,
            delivered: outcome.delivered,
            ...(outcome.delivery_error === undefined ? {} : { delivery_error: outcome.delivery_error }),
            ...(outcome.completion_task_id === undefined ? {} : { completion_task_id: outcome.completion_task_id })
          }).pipe(Effect.ignore)

        const ended = yield* Fiber.join(exited).pipe(Effect.timeoutOption(Duration.seconds(options.deadlineSecs)))
        // The delegation stays live until its outcome is delivered: `run` ends when none is live.
        yield* Effect.addFinalizer(() => tracker.remove(launch.delegationId))
        if (ended._tag === "None") {
          yield* killGroup
          const outcome = yield* deliverOutcome(launch.target, records, {
            ...base(),
            status: "terminated",
            duration_ms: Date.now() - began,
            detail: `the parent ended it at the ${options.deadlineSecs} s delegation deadline`
          })
          return yield* traceEnd(outcome, "killed by the launcher")
        }
        const exit = endedHow(ended.value)
        const reported = readCompletionFile(records)
        if (reported !== undefined && reported.delegation_id === launch.delegationId) return yield* traceEnd(reported, exit)
        const outcome = yield* deliverOutcome(launch.target, records, {
          ...base(),
          status: "crashed",
          duration_ms: Date.now() - began,
          detail: `the child ended (${exit}) without reporting an outcome`
        })
        return yield* traceEnd(outcome, exit)
      }).pipe(
        Effect.scoped,
        // The session is ending: the child goes with it (the Process's own finalizer kills its
        // group too, but waits without a bound; this one escalates), and the parent's log says so.
        Effect.onInterrupt(() =>
          Effect.gen(function*() {
            yield* tracker.remove(launch.delegationId)
            yield* trace.record("delegation", undefined, {
              delegation_id: launch.delegationId,
              capsule: request.capsule,
              version: launch.version,
              status: "terminated",
              reported_by: "launcher",
              child_exit: "killed: the parent session ended",
              delivered: false
            }).pipe(Effect.ignore)
          })
        ),
        Effect.catchAll((error) => Deferred.fail(ready, new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${error.message}` })))
      )

    return DelegationLauncher.of({ allowed: options.allow, start })
  }).pipe(Effect.annotateLogs({ service: "DelegationLauncher" }))
