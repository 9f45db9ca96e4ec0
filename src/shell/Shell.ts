/**
 * Native shell commands under the shell grant (reference §3.5). A command runs only if its binary
 * is in `shell.allow`; it is spawned directly (`shell: false`, so nothing is expanded but what an
 * interpreter's own `-c` does) with stdin ignored, cwd = the accessible workdir and an environment
 * built from nothing (`shellEnv`). A command that outlives `graceSeconds` is detached: it is
 * recorded in the `DetachedRegistry`, keeps running when the task that started it is cancelled,
 * and its completion arrives later through the returned `completion` effect.
 *
 * Interrupting `run` before the command detached kills it: SIGTERM to its process group, SIGKILL
 * after `killGraceMs`. Each child leads its own process group (`detached: true` in Node's terms,
 * which is unrelated to detached work) so grandchildren such as `sh -c "sleep 9 & wait"` go too.
 *
 * Output is never held whole (./ShellOutput.ts): the model reads each stream's start and end, the
 * log gets the rest up to `maxOutputBytes` per call, and a command writing past that is killed
 * (SIGKILL to its group) and no longer read.
 *
 * Enforced here: the allowlist, the cleared environment with credential stripping, the synthetic
 * `HOME`, cwd, the output caps, and the request's `containment` (../sandbox/containment/
 * ShellContainment.ts): sealed = bwrap with every namespace, a composed root, noexec workdir,
 * seccomp and rlimits, and with `network.allow` egress only through the session's checking proxy
 * (./egress/ShellEgress.ts, when the layer has one); advisory = rlimits and pdeathsig (and the
 * host's network), and the workdir's size budget before each start (./WorkdirQuota.ts). NOT
 * enforced: cgroup v2 limits. See docs/shell.md.
 */
import { type ChildProcess, spawn } from "node:child_process"
import type { Readable, Writable } from "node:stream"
import { Context, Deferred, Duration, Effect, Exit, FiberId, FiberSet, Layer, Option, Schema } from "effect"
import { writeIdMaps } from "./containment/SandboxUid.js"
import { type CommandLine, containedCommand, type ShellContainment } from "./containment/ShellContainment.js"
import { type EgressEndpoint, ShellEgress } from "./egress/ShellEgress.js"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../project/manifest/Capabilities.js"
import {
  argvFor,
  type DetachedCompletion,
  demotionResult,
  errorResult,
  exitCodeOf,
  finishedResult,
  resolveBinary,
  shellEnv,
  SYNTHETIC_HOME_DIR_NAME,
  syntheticHome
} from "./ShellGrant.js"
import { OutputCapture } from "./ShellOutput.js"
import type { WorkdirQuota } from "./WorkdirQuota.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"

/** A command that could not be started; the turn sees it as an `error` result. */
export class ShellError extends Schema.TaggedError<ShellError>()("ShellError", {
  reason: Schema.Literal("NotAllowed", "Setup", "Spawn"),
  binary: Schema.String,
  message: Schema.String
}) {
  /** The reference's result for a refused or failed spawn. */
  get toolResult(): ToolResultData {
    return errorResult("shell execution failed", this.message)
  }
}

export interface ShellRequest {
  /** The binary as the model named it (the tool name). */
  readonly binary: string
  /** The model's `command` text, without the binary. */
  readonly command: string
  /** Absolute path of the accessible workdir. */
  readonly workdir: string
  /** `capabilities.shell.allow`. */
  readonly allow: ReadonlyArray<string>
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** `capabilities.shell.baseline_env`. */
  readonly baselineEnv: ReadonlyArray<string>
  /** `capabilities.shell.strip_env`. */
  readonly stripPatterns: ReadonlyArray<string>
  /** Inference and identity variables. */
  readonly runtimeVars: Readonly<Record<string, string>>
  /** `lifecycle.shell_grace_secs`; absent = never detach (no task in scope to receive a completion). */
  readonly graceSeconds?: number | undefined
  /** OS containment (src/shell/containment/ShellContainment.ts); absent = a plain spawn. */
  readonly containment?: ShellContainment | undefined
  /** The task the call belongs to, named on the command's `egress` trace lines. */
  readonly taskId?: string | undefined
  /** `capabilities.shell.max_output_bytes`: most output kept per call; past it the command is killed. */
  readonly maxOutputBytes?: number | undefined
  /** The workdir's size budget (./WorkdirQuota.ts): past it no command starts; absent: none. */
  readonly quota?: WorkdirQuota | undefined
}

export interface DetachedInfo {
  readonly workId: string
  readonly binary: string
  readonly command: string
  readonly startedAtMs: number
  readonly graceMs: number
}

export type ShellOutcome =
  | {
    readonly _tag: "Finished"
    /** The resolved program that ran. */
    readonly binary: string
    readonly exitCode: number
    readonly durationMs: number
    /** Bytes read from the command, dropped ones included. */
    readonly stdoutBytes: number
    readonly stderrBytes: number
    /** Where the full (capped) output went, when the model's view leaves some out. */
    readonly outputPath?: string | undefined
    /** Set when `maxOutputBytes` stopped the command: bytes read past it and dropped. */
    readonly droppedBytes?: number | undefined
    readonly result: ToolResultData
  }
  | {
    readonly _tag: "Detached"
    readonly detached: DetachedInfo
    /** The constant-size result the turn receives now. */
    readonly result: ToolResultData
    /** Resolves when the command ends (after its log is written and its registry entry removed). */
    readonly completion: Effect.Effect<DetachedCompletion>
  }

export interface ShellConfig {
  /** Between SIGTERM and SIGKILL when an undetached command is interrupted. */
  readonly killGraceMs: number
  /** What closing the layer does to detached commands still running. */
  readonly onClose: "abandon" | "kill"
}

export class Shell extends Context.Tag("capsule-runtime/sandbox/Shell")<Shell, {
  /** Runs one command to completion, or until it detaches. */
  readonly run: (request: ShellRequest) => Effect.Effect<ShellOutcome, ShellError>
}>() {
  static readonly layer = (config: Partial<ShellConfig> = {}) =>
    Layer.scoped(Shell, makeShell({ killGraceMs: 500, onClose: "abandon", ...config }))
}

interface Running {
  readonly proc: ChildProcess
  readonly pid: number
  /**
   * The sealed sandbox's first process (host pid), once bwrap reports it. With `--new-session` it is
   * not in bwrap's group, and its parent-death signal is off for a moment while the launcher
   * changes uid: a bwrap killed then would leave it behind, so kills reach it by pid as well.
   */
  sandboxPid: number | undefined
  readonly startedAt: number
  readonly output: OutputCapture
  /** The direct child exited. */
  readonly exited: Deferred.Deferred<void>
  /** Exited and both pipes reached EOF. */
  readonly closed: Deferred.Deferred<number>
}

const spawnChild = (binary: string, line: CommandLine, env: Record<string, string>, cwd: string, output: OutputCapture) =>
  Effect.async<Running, ShellError>((resume) => {
    let proc: ChildProcess
    try {
      const idMapFds = line.idMap === undefined ? [] : ["pipe" as const, "pipe" as const]
      const stdio: Array<"ignore" | "pipe"> = ["ignore", "pipe", "pipe", ...line.fds.map(() => "pipe" as const), ...idMapFds]
      proc = spawn(line.file, line.args, { cwd, env, shell: false, detached: true, stdio })
    } catch (error) {
      return resume(Effect.fail(new ShellError({ reason: "Spawn", binary, message: (error as Error).message })))
    }
    // Data fds (bwrap's launcher copy, the seccomp program): written whole, then closed.
    line.fds.forEach((data, index) => {
      const stream = proc.stdio[3 + index] as Writable | null
      stream?.on("error", () => {})
      stream?.end(data)
    })
    const exited = Deferred.unsafeMake<void>(FiberId.none)
    const closed = Deferred.unsafeMake<number>(FiberId.none)
    const running: Running = { proc, pid: proc.pid ?? -1, sandboxPid: undefined, startedAt: performance.now(), output, exited, closed }
    if (line.idMap !== undefined) {
      writeIdMaps(line.idMap, proc.stdio[line.idMap.infoFd] as Readable, proc.stdio[line.idMap.blockFd] as Writable, () => signalGroup(running, "SIGKILL"), (pid) => {
        running.sandboxPid = pid
      })
    }
    const take = (name: "stdout" | "stderr") => (chunk: Buffer) => {
      if (output.take(name, chunk)) return
      // Past the cap: the command goes, and a writer that left its group meets a closed pipe.
      signalGroup(running, "SIGKILL")
      releasePipes(running)
    }
    proc.stdout!.on("data", take("stdout"))
    proc.stderr!.on("data", take("stderr"))
    proc.once("exit", () => Deferred.unsafeDone(exited, Exit.void))
    proc.once("close", (code, signal) => Deferred.unsafeDone(closed, Exit.succeed(exitCodeOf(code, signal))))
    proc.once("spawn", () => resume(Effect.succeed(running)))
    proc.on("error", (error) => {
      // Before `spawn` this is a spawn failure; later ones (a failed kill) are not ours to report.
      if (proc.pid === undefined) resume(Effect.fail(new ShellError({ reason: "Spawn", binary, message: error.message })))
    })
  })

const signalGroup = (running: Pick<Running, "pid" | "sandboxPid">, signal: NodeJS.Signals) => {
  try {
    process.kill(-running.pid, signal)
  } catch {
    // the group is gone
  }
  // A pid namespace's first process takes only SIGKILL from outside; its end ends the namespace.
  if (signal === "SIGKILL" && running.sandboxPid !== undefined) {
    try {
      process.kill(running.sandboxPid, signal)
    } catch {
      // gone already
    }
  }
}

const releasePipes = (running: Running) => {
  running.proc.stdout?.destroy()
  running.proc.stderr?.destroy()
}

/** SIGTERM to the group, SIGKILL if its pipes are still open after the grace. */
const terminate = (running: Running, killGraceMs: number) =>
  Effect.gen(function*() {
    signalGroup(running, "SIGTERM")
    // Run from interrupt handlers: an uninterruptible await would make the timeout wait for it.
    const closed = yield* Effect.interruptible(Deferred.await(running.closed)).pipe(Effect.timeoutOption(Duration.millis(killGraceMs)))
    if (Option.isSome(closed)) return
    signalGroup(running, "SIGKILL")
    yield* Deferred.await(running.exited)
    releasePipes(running)
  })

const writeLog = (request: ShellRequest, argv: ReadonlyArray<string>, running: Running, name: string, exitCode: number) =>
  Effect.try({
    try: () => running.output.writeLog(name, request.binary, argv, exitCode),
    catch: (error) => `failed to write shell log logs/${name}: ${(error as Error).message}`
  })

const makeShell = (config: ShellConfig) =>
  Effect.gen(function*() {
    const registry = yield* DetachedRegistry
    const egress = yield* Effect.serviceOption(ShellEgress)
    const watchers = yield* FiberSet.make<void>()
    /** Detached commands still running, for the finalizer (a watcher may not have started yet). */
    const live = new Map<string, { readonly running: Running; readonly done: Deferred.Deferred<DetachedCompletion> }>()
    yield* Effect.addFinalizer(() =>
      Effect.forEach(live.values(), ({ done, running }) =>
        Effect.gen(function*() {
          // First: a command that ends while it is being killed must not still deliver a completion.
          yield* Deferred.interrupt(done)
          if (config.onClose === "kill") yield* terminate(running, config.killGraceMs)
          else {
            releasePipes(running)
            running.proc.unref()
          }
          running.output.dispose()
        }), { concurrency: "unbounded", discard: true })
    )

    const finish = (request: ShellRequest, binary: string, argv: ReadonlyArray<string>, running: Running, exitCode: number) =>
      Effect.gen(function*() {
        const durationMs = Math.round(performance.now() - running.startedAt)
        const output = running.output
        const name = `shell-${Date.now()}.log`
        const outputPath = output.truncated
          ? yield* writeLog(request, argv, running, name, exitCode).pipe(
            Effect.as(`logs/${name}`),
            Effect.mapError((message) => new ShellError({ reason: "Setup", binary: request.binary, message }))
          )
          : undefined
        const droppedBytes = output.capped ? output.droppedBytes : undefined
        const result = finishedResult({
          command: request.command,
          exitCode,
          stdout: output.stdout.view(),
          stderr: output.stderr.view(),
          fullOutputPath: outputPath,
          cap: droppedBytes === undefined ? undefined : { limit: output.limit, droppedBytes }
        })
        return {
          _tag: "Finished",
          binary,
          exitCode,
          durationMs,
          stdoutBytes: output.stdout.read,
          stderrBytes: output.stderr.read,
          outputPath,
          droppedBytes,
          result
        } as const
      }).pipe(Effect.ensuring(Effect.sync(() => running.output.dispose())))

    const watch = (
      request: ShellRequest,
      argv: ReadonlyArray<string>,
      running: Running,
      workId: string,
      binary: string,
      done: Deferred.Deferred<DetachedCompletion>
    ) =>
      Effect.gen(function*() {
        const exitCode = yield* Deferred.await(running.closed)
        const durationMs = Math.round(performance.now() - running.startedAt)
        const written = yield* Effect.either(writeLog(request, argv, running, `${workId}.log`, exitCode))
        running.output.dispose()
        const completion: DetachedCompletion = {
          workId,
          binary,
          command: request.command,
          exitCode,
          durationMs,
          outputPath: `logs/${workId}.log`,
          outputBytes: written._tag === "Right" ? written.right : 0,
          ...(running.output.capped ? { droppedBytes: running.output.droppedBytes } : {}),
          ...(written._tag === "Left" ? { error: written.left } : {})
        }
        live.delete(workId)
        yield* registry.remove(workId)
        yield* Deferred.succeed(done, completion)
      })

    const run = Effect.fn("Shell.run")(function*(request: ShellRequest) {
      yield* Effect.annotateCurrentSpan("binary", request.binary)
      if (!request.allow.includes(request.binary)) {
        return yield* new ShellError({
          reason: "NotAllowed",
          binary: request.binary,
          message: `binary '${request.binary}' is not in capabilities.shell.allow`
        })
      }
      const breach = request.quota === undefined ? undefined : yield* request.quota.check
      if (breach !== undefined) return yield* new ShellError({ reason: "Setup", binary: request.binary, message: breach.message })
      const home = syntheticHome(request.workdir)
      yield* Effect.try({
        // Made beneath the workdir without following a link a command may have planted there.
        try: () => WorkdirFs.makeDirectory(request.workdir, SYNTHETIC_HOME_DIR_NAME),
        catch: (error) =>
          new ShellError({
            reason: "Setup",
            binary: request.binary,
            message: `failed to create synthetic home directory ${home}: ${(error as Error).message}`
          })
      })
      const env = shellEnv(request)
      const argv = argvFor(request.binary, request.command)
      const binary = resolveBinary(request.binary, env.PATH)
      const graceMs = request.graceSeconds === undefined ? undefined : Math.max(0, request.graceSeconds * 1000)

      return yield* Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          // Sealed with network.allow: the command's own endpoint, closed when the command ends.
          const endpoint: EgressEndpoint | undefined = request.containment?.tier === "sealed" && request.containment.egress && Option.isSome(egress)
            ? yield* egress.value.open({ binary: request.binary, taskId: request.taskId ?? null }).pipe(
              Effect.mapError((error) => new ShellError({ reason: "Setup", binary: request.binary, message: error.message }))
            )
            : undefined
          const line = request.containment === undefined
            ? { file: request.binary, args: argv, fds: [] }
            : containedCommand(request.containment, {
              binary: request.binary,
              argv,
              workdir: request.workdir,
              allow: request.allow,
              path: env.PATH,
              egress: endpoint?.socketPath
            })
          if (line === undefined) {
            endpoint?.close()
            return yield* new ShellError({ reason: "Spawn", binary: request.binary, message: `spawn ${request.binary} ENOENT` })
          }
          const output = new OutputCapture(request.workdir, request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES)
          const running = yield* spawnChild(request.binary, line, endpoint === undefined ? env : { ...env, ...endpoint.env }, request.workdir, output).pipe(
            Effect.tapError(() => Effect.sync(() => endpoint?.close()))
          )
          if (endpoint !== undefined) running.proc.once("close", endpoint.close)
          const foreground = graceMs === undefined
            ? Effect.asSome(Deferred.await(running.closed))
            : Deferred.await(running.exited).pipe(
              Effect.timeoutOption(Duration.millis(graceMs)),
              Effect.flatMap(Option.match({
                onNone: () => Effect.succeedNone,
                onSome: () => Effect.asSome(Deferred.await(running.closed))
              }))
            )
          const exitCode = yield* restore(foreground).pipe(
            Effect.onInterrupt(() => terminate(running, config.killGraceMs).pipe(Effect.ensuring(Effect.sync(() => output.dispose()))))
          )
          if (Option.isSome(exitCode)) return yield* finish(request, binary, argv, running, exitCode.value)

          const work = yield* registry.record({ binary, command: request.command })
          const done = yield* Deferred.make<DetachedCompletion>()
          live.set(work.work_id, { running, done })
          // A fork inherits this region's uninterruptibility; closing the layer must be able to stop it.
          yield* FiberSet.run(watchers, Effect.interruptible(watch(request, argv, running, work.work_id, binary, done)))
          yield* Effect.logDebug("shell command detached").pipe(Effect.annotateLogs({ workId: work.work_id }))
          return {
            _tag: "Detached",
            detached: { workId: work.work_id, binary, command: request.command, startedAtMs: work.started_at_ms, graceMs: graceMs ?? 0 },
            result: demotionResult(work.work_id),
            completion: Deferred.await(done)
          } as const
        })
      )
    })

    return Shell.of({ run })
  }).pipe(Effect.annotateLogs({ service: "Shell" }))
