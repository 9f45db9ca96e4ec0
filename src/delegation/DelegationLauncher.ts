/**
 * Starting child capsules for `delegate-task` (door spec §8.1), scoped to the parent session.
 * Each child is this runtime's own `run <child dir>` in a process (and process group) of its
 * own, with its own door on a free loopback port, its workdir under the parent's
 * (`delegations/<dlg id>/`) and `MURMUR_SPAWNER` naming the parent. The task, the parent door's
 * token and the delegation's completion secret go on the child's stdin (./DelegationInput.ts),
 * never in its argv or environment; the parent's own token variable is left out of the child's
 * environment. `start` returns once the child's door is listening; a watcher then waits for the
 * child to end. A child that reported its own outcome is only traced; one that died without
 * reporting is reported `crashed`, and one that outlives `delegation_deadline_secs` is killed
 * and reported `terminated`, both posted to the parent's own door with the delegation's secret,
 * which takes one completion per delegation (../services/DelegationTracker.ts). When the session
 * ends, every child still running is killed (SIGTERM to its group, SIGKILL 3 s later): no child
 * outlives the session that started it.
 *
 * The child's workdir is made beneath the parent's without following a link and held open; the
 * child is handed a path that reaches that very directory through the held descriptor
 * (`<private dir>/<dlg id>` → `/proc/<parent pid>/fd/<n>`), never by its name in the parent's
 * workdir, which the parent's own tools and commands can rename or swap for a link at any time.
 *
 * Limits: a chain of delegations grows at most `lifecycle.delegation_max_depth` deep (the depth
 * travels in the spawner handle, and a child keeps the smaller ceiling), and one session runs at
 * most `lifecycle.delegation_max_children` children at once; past either `delegate-task` is
 * refused with a tool error the model reads.
 */
import { Command, type CommandExecutor } from "@effect/platform"
import { randomBytes } from "node:crypto"
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Context, Deferred, Duration, Effect, Either, Fiber, FiberMap, Layer, Option, Redacted, Schema, Stream } from "effect"
import { readManifestOutline } from "../project/ManifestOutline.js"
import { packageFile } from "../project/PackageRoot.js"
import { executableOnPath, SYSTEM_DIRS } from "../shell/containment/HostProbe.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { sessionRecords } from "../records/SessionWorkdirs.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { mintId } from "../services/Ids.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import type { Trust } from "../services/Task.js"
import { Trace } from "../records/Trace.js"
import { encodeDelegationInput, MAX_INPUT_BYTES } from "./DelegationInput.js"
import { type CompletionTarget, deliverOutcome, type DelegationOutcome, type DelegationStatus, readCompletionFile, type RecordsPlace } from "./DelegationOutcome.js"
import { encodeSpawnerHandle, SPAWNER_ENV } from "./SpawnerHandle.js"

/** Why `delegate-task` refused or failed; the message is what the model reads. */
export class DelegationError extends Schema.TaggedError<DelegationError>()("DelegationError", {
  reason: Schema.Literal("NotAllowed", "NotFound", "Limit", "Launch"),
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
  /** This session's depth in its chain (0: nobody delegated to it). */
  readonly depth: number
  /** The chain's ceiling: children are refused at this depth. */
  readonly maxDepth: number
  /** Children running at once. */
  readonly maxChildren: number
  /** How to start this runtime: `[node, dist/main.js]`. */
  readonly runtime: ReadonlyArray<string>
  /** The environment the child starts from (the parent's, less its door token). */
  readonly hostEnv: Readonly<Record<string, string | undefined>>
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
  packageFile("dist", "main.js")
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
    const manifest = yield* readManifestOutline(join(directory, "murmur.yaml")).pipe(
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
  /** A capsule without `capabilities.spawn.allow`: `delegate-task` is not offered, and nothing starts. */
  static readonly disabled: Layer.Layer<DelegationLauncher> = Layer.succeed(DelegationLauncher, {
    allowed: [],
    start: (request) =>
      Effect.fail(new DelegationError({ reason: "NotAllowed", message: `capsule '${request.capsule}' is not in capabilities.spawn.allow (allowed: none)` }))
  })

  /** A completion goes to the parent's own door, its `DoorAddress`. */
  static readonly layer = (options: LauncherOptions): Layer.Layer<DelegationLauncher, never, DelegationTracker | Trace | DoorAddress | CommandExecutor.CommandExecutor> =>
    Layer.scoped(DelegationLauncher, make(options))
}

/** The parent's door token variables: a child never starts with them in its environment. */
const WITHHELD_ENV = ["CAPSULE_RUNTIME_AUTH_TOKEN", "MURMUR_SPAWNER_TOKEN", SPAWNER_ENV, "TRACEPARENT"]

export const childEnvironment = (hostEnv: Readonly<Record<string, string | undefined>>): Record<string, string> =>
  Object.fromEntries(Object.entries(hostEnv).filter((entry): entry is [string, string] => entry[1] !== undefined && !WITHHELD_ENV.includes(entry[0])))

const viaProc = existsSync("/proc/self/fd")

const ANCHORS = "murmur-delegations-"

/**
 * Removes the link directories of runtimes that are gone (a parent killed with SIGKILL runs no
 * finalizer): each is named after its process, and only this user's are touched.
 */
const sweepAnchors = () => {
  try {
    for (const name of readdirSync(tmpdir())) {
      const pid = new RegExp(`^${ANCHORS}(\\d+)-`).exec(name)?.[1]
      if (pid === undefined || Number(pid) === process.pid) continue
      const path = join(tmpdir(), name)
      if (lstatSync(path).uid !== process.getuid?.()) continue
      try {
        process.kill(Number(pid), 0)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ESRCH") rmSync(path, { recursive: true, force: true })
      }
    }
  } catch {
    // a tmpdir that cannot be listed leaves old directories, nothing worse
  }
}

/** What a child's life needs of the launcher that started it. */
interface LauncherEnv {
  readonly options: LauncherOptions
  readonly tracker: DelegationTracker["Type"]
  readonly trace: Trace["Type"]
}

interface Launch {
  readonly directory: string
  readonly version: string
  readonly delegationId: string
  readonly relativeWorkdir: string
  /** The path the child is given (through the held descriptor where there is `/proc`). */
  readonly workdir: string
  /** The held child workdir, for the launcher's own reads and writes in it. */
  readonly held: string
  readonly target: CompletionTarget
}

/** A child process once started, and what its output has said so far. */
interface RunningChild {
  readonly proc: CommandExecutor.Process
  /** SIGTERM to its group, SIGKILL after the grace. */
  readonly killGroup: Effect.Effect<void>
  readonly listening: Deferred.Deferred<ChildLine>
  /** Its `exit` line, once read. */
  readonly said: { exitLine: ChildLine | undefined }
  /** The last lines of its stderr. */
  readonly stderrTail: Array<string>
  readonly stdoutDone: Fiber.Fiber<void>
  readonly exited: Fiber.Fiber<Either.Either<number, { readonly message: string }>>
  readonly began: number
}

const endedHow = (exit: Either.Either<number, { readonly message: string }>) =>
  Either.isRight(exit) ? `exit code ${exit.right}` : exit.left.message.replace(/^.*receipt of signal: /, "killed by ")

const launchFailed = (request: DelegationRequest, message: string) =>
  new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${message}` })

/** Starts `run <child dir>` with its task on stdin, and reads its stdout and stderr as they come. */
const launch = (env: LauncherEnv, request: DelegationRequest, launch: Launch) =>
  Effect.gen(function*() {
    const { options } = env
    const traceHeaders = yield* outgoingTraceHeaders
    const began = Date.now()
    const [program, ...leading] = options.runtime
    const released = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Deferred.succeed(released, undefined))
    const command = Command.make(
      program!,
      ...leading,
      "run",
      launch.directory,
      "--json",
      "--workdir",
      launch.workdir,
      "--host",
      "127.0.0.1",
      "--port",
      "0"
    ).pipe(
      Command.env({
        ...childEnvironment(options.hostEnv),
        [SPAWNER_ENV]: encodeSpawnerHandle({
          sessionId: options.sessionId,
          contextId: request.contextId,
          delegationId: launch.delegationId,
          completion: { url: launch.target.url, trust: request.trust },
          depth: options.depth + 1,
          maxDepth: options.maxDepth,
          input: "stdin"
        }),
        // W3C trace context: the child's task continues this trace (src/layers/RunOnce.ts).
        ...(traceHeaders.traceparent === undefined ? {} : { TRACEPARENT: traceHeaders.traceparent })
      }, { extendEnv: false }),
      // The document, then the pipe held open for the child's life: its lifeline
      // (./DelegationInput.ts). It ends when this delegation's scope does (or with this process).
      Command.stdin(Stream.concat(
        Stream.make(new TextEncoder().encode(encodeDelegationInput({
          task: request.task,
          secret: launch.target.secret!,
          ...(launch.target.token === undefined ? {} : { token: launch.target.token })
        }))),
        Stream.drain(Stream.fromEffect(Deferred.await(released)))
      ))
    )
    const proc = yield* Command.start(command)
    const killGroup = proc.kill("SIGTERM").pipe(
      Effect.timeoutFail({ duration: KILL_GRACE, onTimeout: () => "grace" }),
      Effect.catchAll(() => proc.kill("SIGKILL")),
      Effect.ignore
    )
    // Runs before the Process's own finalizer (which signals once and waits without bound).
    yield* Effect.addFinalizer(() => Effect.flatMap(proc.isRunning, (running) => running ? killGroup : Effect.void).pipe(Effect.ignore))
    const listening = yield* Deferred.make<ChildLine>()
    const said: RunningChild["said"] = { exitLine: undefined }
    const stderrTail: Array<string> = []
    const stdoutDone = yield* proc.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) => {
        const parsed = jsonLine(line)
        if (parsed?.event === "listening") return Deferred.succeed(listening, parsed)
        if (parsed?.event === "exit") said.exitLine = parsed
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
    return { proc, killGroup, listening, said, stderrTail, stdoutDone, exited, began } satisfies RunningChild
  })

/**
 * Waits for the child's door to listen: then records and traces the delegation and answers
 * `ready` with it. A child that ends first, or is not listening in time, fails `ready` instead
 * (and `undefined` comes back).
 */
const awaitListening = (env: LauncherEnv, request: DelegationRequest, launch: Launch, child: RunningChild, ready: Deferred.Deferred<StartedDelegation, DelegationError>) =>
  Effect.gen(function*() {
    const failLaunch = (message: string) => Effect.as(Deferred.fail(ready, launchFailed(request, message)), undefined)
    const first = yield* Effect.raceFirst(
      Deferred.await(child.listening).pipe(Effect.map((line) => Either.right<ChildLine>(line))),
      Fiber.join(child.exited).pipe(Effect.map((exit) => Either.left(exit)))
    ).pipe(Effect.timeoutOption(STARTUP_TIMEOUT))
    if (first._tag === "None") {
      yield* child.killGroup
      return yield* failLaunch(`its door was not listening after ${Duration.toSeconds(STARTUP_TIMEOUT)} s`)
    }
    if (Either.isLeft(first.value)) {
      // Let the last stdout line (the child's `exit` event) arrive before reading it.
      yield* Effect.sleep("50 millis")
      const error = child.said.exitLine?.error
      return yield* failLaunch(error?.message === undefined
        ? `${endedHow(first.value.left)}${child.stderrTail.length > 0 ? `: ${child.stderrTail.slice(-3).join(" / ")}` : ""}`
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
      pid: child.proc.pid,
      startupMs: Date.now() - child.began
    }
    yield* env.tracker.record({
      delegation_id: launch.delegationId,
      capsule: request.capsule,
      version: launch.version,
      child_session_id: childSessionId,
      child_workdir: launch.relativeWorkdir
    })
    yield* env.trace.record("delegation_start", undefined, {
      task_id: request.taskId,
      delegation_id: launch.delegationId,
      capsule: request.capsule,
      version: launch.version,
      child_session_id: childSessionId,
      child_workdir: launch.relativeWorkdir,
      pid: child.proc.pid,
      deadline_secs: env.options.deadlineSecs,
      startup_ms: started.startupMs
    }).pipe(Effect.ignore)
    yield* Deferred.succeed(ready, started)
    return started
  })

/**
 * Waits for the child to end, or kills it at `delegation_deadline_secs`; then lets its last
 * stdout line (its `exit` event) be read. `None`: the deadline ended it.
 */
const superviseUntilDeadline = (env: LauncherEnv, launch: Launch, child: RunningChild) =>
  Effect.gen(function*() {
    const ended = yield* Fiber.join(child.exited).pipe(Effect.timeoutOption(Duration.seconds(env.options.deadlineSecs)))
    // The delegation stays live until its outcome is delivered: `run` ends when none is live.
    yield* Effect.addFinalizer(() => env.tracker.remove(launch.delegationId))
    if (ended._tag === "None") yield* child.killGroup
    yield* Fiber.join(child.stdoutDone).pipe(Effect.timeoutOption("2 seconds"))
    return ended
  })

/**
 * How the child's life ended, said once: a completion the child delivered itself is only traced
 * (as is one its parent could not take, which is not retried); otherwise the launcher reports
 * it `terminated` (the deadline), or by the child's own word, else `crashed`.
 */
const reportEnd = (
  env: LauncherEnv,
  request: DelegationRequest,
  launch: Launch,
  child: RunningChild,
  started: StartedDelegation,
  ended: Option.Option<Either.Either<number, { readonly message: string }>>
) =>
  Effect.gen(function*() {
    const { options, trace, tracker } = env
    const exit = Option.isNone(ended) ? "killed by the launcher" : endedHow(ended.value)
    // The child's records (its trace, and `completion.json` beside it), under its own capsule
    // directory, outside every workdir; read and written without following a link.
    const records: RecordsPlace = { within: launch.directory, directory: sessionRecords(launch.directory, started.childSessionId) }
    // Paths as the parent's own tools name them.
    const named = join(options.workdir, launch.relativeWorkdir)
    const base = () => ({
      delegation_id: launch.delegationId,
      capsule_name: request.capsule,
      capsule_version: launch.version,
      session_id: started.childSessionId,
      workdir: named,
      ...(existsSync(join(launch.held, "out", "result.txt")) ? { result_path: join(named, "out", "result.txt") } : {}),
      reported_by: "launcher" as const,
      delivered: false
    })
    const traceEnd = (outcome: DelegationOutcome) =>
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
    /** The child's own word on how its task ended: its `exit` line. */
    const childStatus = (): DelegationStatus | undefined => {
      const status = (child.said.exitLine as (ChildLine & { readonly status?: string }) | undefined)?.status
      return status === "ok" ? "ok" : status === "failed" ? "error" : undefined
    }
    const reported = readCompletionFile(records)
    const record = reported?.delegation_id === launch.delegationId && reported.reported_by === "child" ? reported : undefined
    // The door took the child's completion (one per delegation): only trace it.
    const taken = yield* tracker.completion(launch.delegationId)
    if (taken?._tag === "Completed") {
      return yield* traceEnd(record ?? {
        ...base(),
        status: childStatus() ?? "ok",
        duration_ms: Date.now() - child.began,
        reported_by: "child",
        delivered: true,
        ...(taken.taskId === undefined ? {} : { completion_task_id: taken.taskId })
      })
    }
    // The child reported and its parent could not take it (a full queue): recorded, not retried.
    if (record !== undefined && !record.delivered) return yield* traceEnd(record)
    const status = Option.isNone(ended) ? "terminated" : childStatus() ?? "crashed"
    const outcome = yield* deliverOutcome(launch.target, records, {
      ...base(),
      status,
      duration_ms: Date.now() - child.began,
      detail: Option.isNone(ended)
        ? `the parent ended it at the ${options.deadlineSecs} s delegation deadline`
        : status === "crashed"
        ? `the child ended (${exit}) without reporting an outcome`
        : `the child ended (${exit}, its task ${status === "ok" ? "completed" : "failed"}) and its own completion did not arrive`
    })
    return yield* traceEnd(outcome)
  })

/** One child's whole life: launch, wait for its door, then for its end or its deadline. */
const child = (env: LauncherEnv, request: DelegationRequest, launched: Launch, ready: Deferred.Deferred<StartedDelegation, DelegationError>) =>
  Effect.gen(function*() {
    const running = yield* launch(env, request, launched).pipe(Effect.tapError((error) => Deferred.fail(ready, launchFailed(request, error.message))))
    const started = yield* awaitListening(env, request, launched, running, ready)
    if (started === undefined) return
    const ended = yield* superviseUntilDeadline(env, launched, running)
    yield* reportEnd(env, request, launched, running, started, ended)
  }).pipe(
    Effect.scoped,
    // The session is ending: the child goes with it (the Process's own finalizer kills its
    // group too, but waits without a bound; this one escalates), and the parent's log says so.
    Effect.onInterrupt(() =>
      Effect.gen(function*() {
        yield* env.tracker.remove(launched.delegationId)
        yield* env.trace.record("delegation", undefined, {
          delegation_id: launched.delegationId,
          capsule: request.capsule,
          version: launched.version,
          status: "terminated",
          reported_by: "launcher",
          child_exit: "killed: the parent session ended",
          delivered: false
        }).pipe(Effect.ignore)
      })
    ),
    Effect.catchAll((error) => Deferred.fail(ready, launchFailed(request, error.message)))
  )

const make = (options: LauncherOptions) =>
  Effect.gen(function*() {
    const tracker = yield* DelegationTracker
    const trace = yield* Trace
    const door = yield* DoorAddress
    const context = yield* Effect.context<CommandExecutor.CommandExecutor>()
    const children = yield* FiberMap.make<string>()
    // Only this process writes here (mode 0700): each child's workdir path is a link in it to the
    // descriptor the launcher holds, so nothing in the parent's workdir can redirect it.
    const anchors = yield* Effect.acquireRelease(
      Effect.sync(() => {
        if (!viaProc) return undefined
        sweepAnchors()
        return mkdtempSync(join(tmpdir(), `${ANCHORS}${process.pid}-`))
      }),
      (directory) => Effect.sync(() => directory === undefined || rmSync(directory, { recursive: true, force: true }))
    )
    // Counted when a launch begins, released when its child's life ends: a burst of calls in
    // one turn sees the ones before it.
    let running = 0

    const start = Effect.fn("DelegationLauncher.start")(function*(request: DelegationRequest) {
      if (!options.allow.includes(request.capsule)) {
        return yield* new DelegationError({
          reason: "NotAllowed",
          message: `capsule '${request.capsule}' is not in capabilities.spawn.allow (allowed: ${options.allow.join(", ")})`
        })
      }
      if (options.depth >= options.maxDepth) {
        return yield* new DelegationError({
          reason: "Limit",
          message: `delegate-task refused: this session is at delegation depth ${options.depth} and the chain may grow at most ${options.maxDepth} deep (lifecycle.delegation_max_depth); do the task here instead`
        })
      }
      if (Buffer.byteLength(request.task) > MAX_INPUT_BYTES - 4096) {
        return yield* new DelegationError({ reason: "Limit", message: `delegate-task refused: the task text is larger than ${MAX_INPUT_BYTES - 4096} bytes` })
      }
      const { directory, version } = yield* resolveCapsule(options.capsuleDirectory, request.capsule)
      const admitted = yield* Effect.sync(() => running < options.maxChildren && ++running > 0)
      if (!admitted) {
        return yield* new DelegationError({
          reason: "Limit",
          message: `delegate-task refused: ${running} children of this session are still running, the most at once (lifecycle.delegation_max_children: ${options.maxChildren}); wait for a completion before delegating again`
        })
      }
      const release = Effect.sync(() => void running--)
      const delegationId = mintId("dlg")
      const relativeWorkdir = `delegations/${delegationId}`
      // Made and opened beneath the parent's workdir without following a link (../sandbox/WorkdirFs.ts),
      // and held until the child's life ends.
      const held = yield* WorkdirFs.attempt(() => WorkdirFs.hold(options.workdir, relativeWorkdir)).pipe(
        Effect.tapError(() => release),
        Effect.mapError((refused) => new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${refused.message}` }))
      )
      const workdir = anchors === undefined || held.descriptor === undefined
        ? join(options.workdir, relativeWorkdir)
        : join(anchors, delegationId)
      const unhold = Effect.sync(() => {
        held.close()
        if (anchors !== undefined) rmSync(workdir, { force: true })
      })
      if (workdir !== join(options.workdir, relativeWorkdir)) {
        yield* Effect.try(() => symlinkSync(`/proc/${process.pid}/fd/${held.descriptor}`, workdir)).pipe(
          Effect.tapError(() => Effect.zipRight(unhold, release)),
          Effect.mapError((error) => new DelegationError({ reason: "Launch", message: `capsule '${request.capsule}' did not start: ${String(error.error)}` }))
        )
      }
      const secret = randomBytes(32).toString("base64url")
      yield* tracker.expect(delegationId, secret)
      const target: CompletionTarget = {
        url: door.url,
        parentSessionId: options.sessionId,
        contextId: request.contextId,
        delegationId,
        trust: request.trust,
        token: options.doorToken === undefined ? undefined : Redacted.value(options.doorToken),
        secret
      }
      const ready = yield* Deferred.make<StartedDelegation, DelegationError>()
      const life = child({ options, tracker, trace }, request, { directory, version, delegationId, relativeWorkdir, workdir, held: held.root, target }, ready).pipe(
        Effect.ensuring(Effect.zipRight(unhold, release)),
        Effect.ensuring(tracker.finish(delegationId)),
        Effect.provide(context)
      )
      yield* FiberMap.run(children, delegationId, life)
      return yield* Deferred.await(ready)
    })

    return DelegationLauncher.of({ allowed: options.allow, start })
  }).pipe(Effect.annotateLogs({ service: "DelegationLauncher" }))
