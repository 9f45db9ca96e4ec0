/**
 * Runs one guest (a script capsule's `run()` or a tool's `run(input)`) in a worker thread of
 * its own. The run is an Effect whose scope owns the worker: completion, failure, deadline,
 * cancel and shutdown all end in `worker.terminate()`, so no worker outlives its run. Host
 * calls the guest makes synchronously (request-input, message/send) are served here, on the
 * main thread, while the worker sleeps on a shared flag.
 */
import { MessageChannel, Worker } from "node:worker_threads"
import { Context, Duration, Effect, Layer, Option, Queue } from "effect"
import type { CompiledComponent } from "./ComponentCache.js"
import type { ArtifactData, GuestGrant, GuestJob, HostCall, HostReply, ToolInputData, ToolResultData, WorkerMessage } from "./GuestJob.js"
import { capMessage, isMemoryLimit } from "./MemoryVerdict.js"
import { deadlineMessage, type GuestRole, limitMessage, SandboxError, trapMessage } from "./SandboxError.js"

/** What the host does for a guest that talks back. Every effect runs in the run's scope. */
export interface GuestHost {
  readonly text: (chunk: string) => Effect.Effect<void>
  readonly thinking: (chunk: string) => Effect.Effect<void>
  /** The follow-up's text; a failure's message (e.g. `input-timeout`) traps the guest. */
  readonly requestInput: (prompt: string) => Effect.Effect<string, { readonly message: string }>
  /** `message/send` to a peer; a failure's message is the guest's `err`. */
  readonly sendMessage: (call: Extract<HostCall, { method: "sendMessage" }>) => Effect.Effect<unknown, { readonly message: string }>
  readonly stdout: (text: string) => Effect.Effect<void>
  readonly stderr: (text: string) => Effect.Effect<void>
}

export const silentHost: GuestHost = {
  text: () => Effect.void,
  thinking: () => Effect.void,
  requestInput: () => Effect.fail({ message: "request-input is not available outside an A2A task context" }),
  sendMessage: () => Effect.fail({ message: "message/send is not available here" }),
  stdout: () => Effect.void,
  stderr: () => Effect.void
}

export interface ToolSpec {
  readonly component: CompiledComponent
  readonly grant: GuestGrant
  readonly deadlineSeconds: number
}

export interface GuestRun {
  readonly role: GuestRole
  readonly component: CompiledComponent
  readonly grant: GuestGrant
  readonly deadlineSeconds: number
  /** For a tool run: its input. */
  readonly input?: ToolInputData
  readonly allowlist: ReadonlyArray<string>
  readonly tools: Readonly<Record<string, ToolSpec>>
  readonly inTask: boolean
  readonly sessionId: string
  readonly artifacts: ReadonlyArray<ArtifactData>
  readonly host: GuestHost
}

export interface GuestOutcome {
  /** A tool's result (a capsule returns nothing). */
  readonly result: ToolResultData | undefined
  readonly stderr: string
}

export interface SandboxConfig {
  /** JS heap cap per worker (Wasm memory is capped separately, in the modules). */
  readonly workerHeapMb: number
  /**
   * Workers started ahead of need (booted, host modules loaded, no guest yet). Each still
   * serves exactly one run and is terminated after it; the pool only moves the start-up cost
   * off the run's path, for about 17 MiB per idle worker (docs/benchmarks.md).
   */
  readonly prestart: number
}

/** Keeps the last `limit` characters a guest wrote to a stream. */
const tail = (limit: number) => {
  let text = ""
  return {
    push: (chunk: string) => {
      text = (text + chunk).slice(-limit)
    },
    get: () => text
  }
}

const workerUrl = () => {
  const here = import.meta.url
  // Under the test runner this module is TypeScript source; workers run the compiled build.
  return here.endsWith(".ts")
    ? new URL("../../dist/sandbox/worker/GuestWorker.js", here)
    : new URL("./worker/GuestWorker.js", here)
}

type Incoming = WorkerMessage | { readonly type: "exit"; readonly code: number } | { readonly type: "error"; readonly message: string }

export class Sandbox extends Context.Tag("capsule-runtime/sandbox/Sandbox")<Sandbox, {
  /** Runs a guest to completion in a worker of its own; interruption terminates the worker. */
  readonly run: (job: GuestRun) => Effect.Effect<GuestOutcome, SandboxError>
  /** Workers serving a run right now (each run owns exactly one; idle pre-started ones are not counted). */
  readonly liveWorkers: () => Effect.Effect<number>
  /** Pre-started workers waiting for a run. */
  readonly idleWorkers: () => Effect.Effect<number>
}>() {
  static readonly layer = (config: Partial<SandboxConfig> = {}) =>
    Layer.scoped(Sandbox, makeSandbox({ workerHeapMb: 256, prestart: 0, ...config }))
}

const decoder = () => new TextDecoder()

const makeSandbox = (config: SandboxConfig) =>
  Effect.gen(function*() {
    let live = 0
    let closed = false
    const idle: Array<Worker> = []

    const startWorker = () =>
      new Worker(workerUrl(), {
        // The guest's realm gets no host environment and no host stdio.
        env: {},
        stdout: true,
        stderr: true,
        resourceLimits: { maxOldGenerationSizeMb: config.workerHeapMb }
      })

    const refill = () => {
      while (!closed && idle.length < config.prestart) {
        const worker = startWorker()
        worker.once("exit", () => {
          const at = idle.indexOf(worker)
          if (at >= 0) idle.splice(at, 1)
        })
        worker.on("error", () => undefined)
        idle.push(worker)
      }
    }

    refill()
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        closed = true
        return Promise.all(idle.splice(0).map((worker) => worker.terminate()))
      })
    )

    const spawn = (job: GuestRun, queue: Queue.Queue<Incoming>) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const channel = new MessageChannel()
          const flag = new SharedArrayBuffer(4)
          const data: GuestJob = {
            role: job.role.kind === "capsule" ? { kind: "capsule" } : { kind: "tool", name: job.role.name, input: job.input ?? {} },
            guest: job.component.guest,
            grant: job.grant,
            allowlist: job.allowlist,
            tools: Object.fromEntries(Object.entries(job.tools).map(([name, tool]) => [name, {
              guest: tool.component.guest,
              grant: tool.grant,
              deadlineMs: tool.deadlineSeconds * 1000
            }])),
            inTask: job.inTask,
            sessionId: job.sessionId,
            artifacts: job.artifacts,
            rpc: { port: channel.port2, flag }
          }
          const worker = idle.shift() ?? startWorker()
          live++
          worker.on("message", (message: WorkerMessage) => queue.unsafeOffer(message))
          worker.on("error", (error) => queue.unsafeOffer({ type: "error", message: error.message }))
          worker.on("exit", (code) => queue.unsafeOffer({ type: "exit", code }))
          // Anything the worker's JS writes to its own process.stdout/stderr is the guest's too.
          worker.stdout.on("data", (chunk: Buffer) => queue.unsafeOffer({ type: "stdout", bytes: chunk }))
          worker.stderr.on("data", (chunk: Buffer) => queue.unsafeOffer({ type: "stderr", bytes: chunk }))
          worker.postMessage({ job: data }, [channel.port2])
          // The replacement starts after the job is on its way, not in front of it.
          refill()
          return { worker, reply: channel.port1, flag: new Int32Array(flag) }
        }),
        ({ reply, worker }) =>
          Effect.promise(() => worker.terminate()).pipe(
            Effect.ensuring(Effect.sync(() => {
              live--
              reply.close()
            }))
          )
      )

    const run = (job: GuestRun) =>
      Effect.scoped(Effect.gen(function*() {
        const queue = yield* Queue.unbounded<Incoming>()
        const { flag, reply } = yield* spawn(job, queue)
        const out = decoder()
        const err = decoder()
        const stderr = tail(16_384)
        const answer = (message: HostReply) =>
          Effect.sync(() => {
            reply.postMessage(message)
            Atomics.store(flag, 0, 1)
            Atomics.notify(flag, 0)
          })
        const serve = (call: HostCall) =>
          (call.method === "requestInput"
            ? job.host.requestInput(call.prompt).pipe(Effect.match({ onFailure: (e): HostReply => ({ trap: e.message }), onSuccess: (ok): HostReply => ({ ok }) }))
            : job.host.sendMessage(call).pipe(Effect.match({ onFailure: (e): HostReply => ({ err: e.message }), onSuccess: (ok): HostReply => ({ ok }) }))
          ).pipe(Effect.flatMap(answer))
        const failure = (reason: SandboxError["reason"], message: string) =>
          new SandboxError({ reason, message, stderr: stderr.get() })

        let tool: { readonly name: string; readonly deadline: number; readonly seconds: number } | undefined
        while (true) {
          const next = tool === undefined
            ? Option.some(yield* Queue.take(queue))
            : yield* Queue.take(queue).pipe(Effect.timeout(Duration.millis(Math.max(0, tool.deadline - Date.now()))), Effect.option)
          if (Option.isNone(next)) {
            return yield* failure("Deadline", deadlineMessage({ kind: "tool", name: tool!.name }, tool!.seconds))
          }
          const message = next.value
          switch (message.type) {
            case "stdout": {
              const text = out.decode(message.bytes, { stream: true })
              yield* job.host.stdout(text)
              break
            }
            case "stderr": {
              const text = err.decode(message.bytes, { stream: true })
              stderr.push(text)
              yield* job.host.stderr(text)
              break
            }
            case "chunk":
              yield* message.kind === "text" ? job.host.text(message.text) : job.host.thinking(message.text)
              break
            case "call":
              yield* serve(message.call)
              break
            case "toolStart":
              tool = { name: message.name, deadline: Date.now() + message.deadlineMs, seconds: Math.round(message.deadlineMs / 1000) }
              break
            case "toolEnd":
              tool = undefined
              break
            case "done":
              return { result: message.result, stderr: stderr.get() } satisfies GuestOutcome
            case "failed":
              if (message.reason === "InstanceLimit") return yield* failure("InstanceLimit", limitMessage(job.role, message.message))
              if (message.reason !== "Trap") return yield* failure(message.reason, message.message)
              if (isMemoryLimit(message.memory, job.grant.memoryBytes, stderr.get())) {
                return yield* failure("MemoryLimit", limitMessage(job.role, capMessage(message.memory, job.grant.memoryBytes, stderr.get())))
              }
              return yield* failure("Trap", trapMessage(job.role, message.message))
            case "error":
              return yield* failure("WorkerCrashed", `${job.role.kind === "capsule" ? "capsule" : `tool '${job.role.name}'`} worker failed: ${message.message}`)
            case "exit":
              return yield* failure("WorkerCrashed", `${job.role.kind === "capsule" ? "capsule" : `tool '${job.role.name}'`} worker exited (code ${message.code}) before finishing`)
          }
        }
      })).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(job.deadlineSeconds),
          onTimeout: () => new SandboxError({ reason: "Deadline", message: deadlineMessage(job.role, job.deadlineSeconds) })
        }),
        Effect.withSpan("Sandbox.run", { attributes: { role: job.role.kind === "capsule" ? "capsule" : job.role.name } })
      )

    return Sandbox.of({ run, liveWorkers: () => Effect.sync(() => live), idleWorkers: () => Effect.sync(() => idle.length) })
  })

export type { ToolResultData }
