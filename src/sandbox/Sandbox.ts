/**
 * Runs one guest (a script capsule's `run()` or a tool's `run(input)`) in a worker thread of
 * its own. The run is an Effect whose scope owns the worker: completion, failure, deadline,
 * cancel and shutdown all end in `worker.terminate()`, so no worker outlives its run. Host
 * calls the guest makes synchronously (request-input, message/send) are served here, on the
 * main thread, while the worker sleeps on a shared flag.
 *
 * Warm pools (`warm`) hold workers that have already instantiated one particular guest, with
 * the grant and context of the runs it expects; a matching run takes one, hands it its input
 * and skips boot, glue import and instantiation. Each held worker still serves exactly one
 * run with an instance made for it alone (docs/benchmarks.md, "Agent").
 */
import { pathToFileURL } from "node:url"
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads"
import { Context, Deferred, Duration, Effect, Exit, Layer, Option, Queue, type Scope } from "effect"
import { packageFile } from "../project/PackageRoot.js"
import type { CompiledComponent } from "./component/ComponentCache.js"
import type { ArtifactData, CodeCacheUse, GuestGrant, GuestJob, GuestStart, HookAnswer, HookCallData, HookHostCall, HostCall, HostReply, RunGo, ToolInputData, ToolResultData, WorkerMessage } from "./GuestJob.js"
import { capMessage, isMemoryLimit } from "./wasm/MemoryVerdict.js"
import { deadlineMessage, type GuestRole, limitMessage, SandboxError, subject, trapMessage } from "./SandboxError.js"

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
  /** A hook's own imports (inference, tokens, task-io, conversation); a failure's message is the guest's `err`. */
  readonly hook?: ((call: HookHostCall) => Effect.Effect<unknown, { readonly message: string }>) | undefined
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
  /** For a hook run: the lifecycle call. */
  readonly hookCall?: HookCallData
  readonly allowlist: ReadonlyArray<string>
  readonly tools: Readonly<Record<string, ToolSpec>>
  readonly inTask: boolean
  readonly sessionId: string
  readonly artifacts: ReadonlyArray<ArtifactData>
  readonly host: GuestHost
  /**
   * The run's W3C trace context, for what the inference gateway forwards. Per run, not per
   * template: a held worker learns it with its input, so tracing never splits a warm pool.
   */
  readonly traceparent?: string | undefined
}

/** A run known before its call: everything but its input, its host, its deadline and its trace context. */
export type GuestTemplate = Omit<GuestRun, "input" | "host" | "deadlineSeconds" | "traceparent" | "hookCall">

export interface GuestOutcome {
  /** A tool's result (a capsule returns nothing). */
  readonly result: ToolResultData | undefined
  /** A hook's answer (`undefined`: the hook exited through wasi:cli/exit, as good as `none`). */
  readonly hook?: HookAnswer | undefined
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
  /** Most held (pre-instantiated) workers across all warm pools, whatever they ask for. */
  readonly warmLimit: number
  /**
   * How long after a held worker's run its replacement starts booting. The run's follow-ups
   * (the tool call a driver asked for, the next turn) come within milliseconds, and a
   * replacement takes far longer than that to be ready: booting it at once would only take a
   * CPU from them.
   */
  readonly warmRefillDelayMs: number
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

// Workers always run the compiled build: under the test runner this module is TypeScript
// source, and in the CLI bundle it is not where dist/sandbox/ is.
const workerUrl = () => pathToFileURL(packageFile("dist", "sandbox", "host", "GuestWorker.js"))

/** A worker and the host channel of the one run it serves. */
interface Held {
  readonly worker: Worker
  readonly reply: MessagePort
  readonly flag: Int32Array
}

interface WarmPool {
  readonly template: GuestTemplate
  /** The sizes its holders asked for; the pool keeps the largest. */
  readonly sizes: Array<number>
  readonly idle: Array<Held>
}

type Incoming =
  | WorkerMessage
  | { readonly type: "exit"; readonly code: number }
  | { readonly type: "error"; readonly message: string }
  /** The run's deadline passed (offered by its timer). */
  | { readonly type: "deadline" }

/** Longest delay `setTimeout` honours (a longer one would fire at once); a later deadline is none. */
const MAX_TIMER_MS = 2 ** 31 - 1

export class Sandbox extends Context.Tag("capsule-runtime/sandbox/Sandbox")<Sandbox, {
  /** Runs a guest to completion in a worker of its own; interruption terminates the worker. */
  readonly run: (job: GuestRun) => Effect.Effect<GuestOutcome, SandboxError>
  /** Workers serving a run right now (each run owns exactly one; idle pre-started ones are not counted). */
  readonly liveWorkers: () => Effect.Effect<number>
  /** Pre-started workers waiting for a run: the generic ones and the warm pools' held ones. */
  readonly idleWorkers: () => Effect.Effect<number>
  /**
   * Keeps `size` workers instantiated ahead for runs matching `template` (same component,
   * role, grant, tools and context), refilled after each run, until the scope closes (which
   * terminates them). Runs that match nothing still get a generic or fresh worker.
   */
  readonly warm: (template: GuestTemplate, size: number) => Effect.Effect<void, never, Scope.Scope>
  /** How workers loaded glue scripts so far: with a code cache, without, or with a refused one. */
  readonly codeCacheStats: () => Effect.Effect<Readonly<Record<CodeCacheUse | "made", number>>>
  /** Replaces the code cache kept for a glue script (tests hand workers a bad one). */
  readonly putCodeCache: (scriptPath: string, data: Uint8Array) => Effect.Effect<void>
}>() {
  static readonly layer = (config: Partial<SandboxConfig> = {}) =>
    Layer.scoped(Sandbox, makeSandbox({ workerHeapMb: 256, prestart: 0, warmLimit: 8, warmRefillDelayMs: 50, ...config }))
}

/** What a worker is handed; a held worker's tool input is a placeholder until its `go`. */
const roleData = (role: GuestRole, input: ToolInputData, hookCall: HookCallData | undefined): GuestJob["role"] => {
  if (role.kind === "capsule") return { kind: "capsule" }
  if (role.kind === "tool") return { kind: "tool", name: role.name, input }
  if (hookCall === undefined) throw new Error(`hook '${role.name}' run without a lifecycle call`)
  return { kind: "hook", name: role.name, call: hookCall }
}

const jobData = (
  job: GuestTemplate,
  input: ToolInputData,
  rpc: GuestJob["rpc"],
  codeCaches: CodeCaches,
  hookCall?: HookCallData
): GuestJob => ({
  role: roleData(job.role, input, hookCall),
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
  rpc,
  codeCache: codeCacheFor(job, codeCaches.data),
  refreshCodeCache: guestsOf(job).map((guest) => guest.scriptPath)
    .filter((path) => codeCaches.data.has(path) && (codeCaches.generations.get(path) ?? 0) < CODE_CACHE_GENERATIONS)
})

/**
 * How many times a component's code cache is made: after its first run, then refreshed after
 * the next ones, so functions that only later runs compile (a driver's second turn) join it.
 */
const CODE_CACHE_GENERATIONS = 3

export interface CodeCaches {
  readonly data: Map<string, Uint8Array>
  readonly generations: Map<string, number>
}

const guestsOf = (job: GuestTemplate) => [job.component.guest, ...Object.values(job.tools).map((tool) => tool.component.guest)]

/** The kept code caches of the glue scripts a job loads (its guest and its tools'). */
const codeCacheFor = (job: GuestTemplate, codeCaches: ReadonlyMap<string, Uint8Array>) => {
  const found: Record<string, Uint8Array> = {}
  for (const guest of guestsOf(job)) {
    const data = codeCaches.get(guest.scriptPath)
    if (data !== undefined) found[guest.scriptPath] = data
  }
  return found
}

const guestIds = new WeakMap<object, number>()
let nextGuestId = 0
const guestId = (guest: object) => {
  let id = guestIds.get(guest)
  if (id === undefined) guestIds.set(guest, id = nextGuestId++)
  return id
}

/** Equal for runs a held worker can serve: everything its instance was built from. */
const templateKey = (job: GuestTemplate) =>
  JSON.stringify([
    job.role,
    guestId(job.component.guest),
    job.grant,
    job.allowlist,
    Object.entries(job.tools).map(([name, tool]) => [name, guestId(tool.component.guest), tool.grant, tool.deadlineSeconds]),
    job.inTask,
    job.sessionId,
    job.artifacts
  ])

const decoder = () => new TextDecoder()

const makeSandbox = (config: SandboxConfig) =>
  Effect.gen(function*() {
    let live = 0
    let closed = false
    /**
     * Per glue script, the V8 code cache the first successful run made (bytecode, no state);
     * handed to every later worker of that glue. In memory only: bounded by the components loaded.
     */
    const codeCaches: CodeCaches = { data: new Map(), generations: new Map() }
    const cacheUses: Record<CodeCacheUse | "made", number> = { accepted: 0, none: 0, rejected: 0, made: 0 }
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

    const pools = new Map<string, WarmPool>()
    let held = 0
    /** Workers that finished their run and are being terminated off the run's path. */
    const dying = new Set<Promise<number>>()

    const fill = (key: string, pool: WarmPool) => {
      while (!closed && pools.get(key) === pool && pool.idle.length < Math.max(0, ...pool.sizes) && held < config.warmLimit) {
        const worker = startWorker()
        const channel = new MessageChannel()
        const flag = new SharedArrayBuffer(4)
        const start: GuestStart = { job: jobData(pool.template, {}, { port: channel.port2, flag }, codeCaches), hold: true }
        worker.postMessage(start, [channel.port2])
        const entry: Held = { worker, reply: channel.port1, flag: new Int32Array(flag) }
        held++
        worker.once("exit", () => {
          const at = pool.idle.indexOf(entry)
          if (at >= 0) {
            pool.idle.splice(at, 1)
            held--
            entry.reply.close()
          }
        })
        worker.on("error", () => undefined)
        pool.idle.push(entry)
      }
    }

    const take = (pool: WarmPool): Held | undefined => {
      const entry = pool.idle.shift()
      if (entry !== undefined) held--
      return entry
    }

    const warm = (template: GuestTemplate, size: number) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const key = templateKey(template)
          const pool = pools.get(key) ?? { template, sizes: [], idle: [] }
          pools.set(key, pool)
          pool.sizes.push(size)
          fill(key, pool)
          return { key, pool }
        }),
        ({ key, pool }) =>
          Effect.promise(() => {
            pool.sizes.splice(pool.sizes.indexOf(size), 1)
            const extra = pool.idle.splice(Math.max(0, ...pool.sizes))
            held -= extra.length
            if (pool.sizes.length === 0) pools.delete(key)
            return Promise.all(extra.map((entry) => entry.worker.terminate()))
          })
      ).pipe(Effect.asVoid)

    refill()
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        closed = true
        const waiting = [...pools.values()].flatMap((pool) => pool.idle.splice(0).map((entry) => entry.worker))
        held = 0
        pools.clear()
        return Promise.all([...idle.splice(0), ...waiting].map((worker) => worker.terminate()).concat([...dying]))
      })
    )

    /** A generic or fresh worker, handed the whole job now. */
    const startRun = (job: GuestRun): Held => {
      const channel = new MessageChannel()
      const flag = new SharedArrayBuffer(4)
      const worker = idle.shift() ?? startWorker()
      const start: GuestStart = { job: { ...jobData(job, job.input ?? {}, { port: channel.port2, flag }, codeCaches, job.hookCall), traceparent: job.traceparent } }
      worker.postMessage(start, [channel.port2])
      return { worker, reply: channel.port1, flag: new Int32Array(flag) }
    }

    const spawn = (job: GuestRun, queue: Queue.Queue<Incoming>, expired: Deferred.Deferred<void>) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          // The run's deadline: a timer whose message the run fails on (Effect.timeoutFail would
          // run every guest run in two extra fibers; measured ≈ 0.6 ms of main thread per run).
          const deadlineMs = job.deadlineSeconds * 1000
          const deadline = deadlineMs > MAX_TIMER_MS ? undefined : setTimeout(() => {
            queue.unsafeOffer({ type: "deadline" })
            Deferred.unsafeDone(expired, Exit.void)
          }, deadlineMs)
          const key = pools.size === 0 ? undefined : templateKey(job)
          const pool = key === undefined ? undefined : pools.get(key)
          const entry = pool === undefined ? undefined : take(pool)
          const { worker, reply, flag } = entry ?? startRun(job)
          live++
          worker.on("message", (message: WorkerMessage) => queue.unsafeOffer(message))
          worker.on("error", (error) => queue.unsafeOffer({ type: "error", message: error.message }))
          worker.on("exit", (code) => queue.unsafeOffer({ type: "exit", code }))
          // Anything the worker's JS writes to its own process.stdout/stderr is the guest's too.
          worker.stdout.on("data", (chunk: Buffer) => queue.unsafeOffer({ type: "stdout", bytes: chunk }))
          worker.stderr.on("data", (chunk: Buffer) => queue.unsafeOffer({ type: "stderr", bytes: chunk }))
          if (entry !== undefined) {
            const go: RunGo = { input: job.input ?? {}, traceparent: job.traceparent }
            reply.postMessage(go)
            Atomics.store(flag, 0, 1)
            Atomics.notify(flag, 0)
          } else {
            // The replacement starts after the job is on its way, not in front of it.
            refill()
          }
          const refillPool = pool === undefined ? undefined : () => setTimeout(() => fill(key!, pool), config.warmRefillDelayMs).unref()
          return { worker, reply, flag, refillPool, deadline }
        }),
        ({ deadline, refillPool, reply, worker }, exit) => {
          const done = Effect.sync(() => {
            clearTimeout(deadline)
            live--
            reply.close()
            refillPool?.()
          })
          if (Exit.isFailure(exit)) return Effect.promise(() => worker.terminate()).pipe(Effect.ensuring(done))
          // The guest has answered and runs nothing more: its thread is torn down off the run's
          // path (shutdown still waits for it); a failure or an interruption waits for it here.
          return Effect.sync(() => {
            const ending = worker.terminate()
            dying.add(ending)
            const forget = () => void dying.delete(ending)
            ending.then(forget, forget)
          }).pipe(Effect.zipRight(done))
        }
      )

    const run = (job: GuestRun) =>
      Effect.scoped(Effect.gen(function*() {
        const queue = yield* Queue.unbounded<Incoming>()
        const expired = yield* Deferred.make<void>()
        const { flag, reply } = yield* spawn(job, queue, expired)
        const out = decoder()
        const err = decoder()
        const stderr = tail(16_384)
        const answer = (message: HostReply) =>
          Effect.sync(() => {
            reply.postMessage(message)
            Atomics.store(flag, 0, 1)
            Atomics.notify(flag, 0)
          })
        const asErr = Effect.match({ onFailure: (e: { readonly message: string }): HostReply => ({ err: e.message }), onSuccess: (ok: unknown): HostReply => ({ ok }) })
        const serve = (call: HostCall) =>
          (call.method === "requestInput"
            ? job.host.requestInput(call.prompt).pipe(Effect.match({ onFailure: (e): HostReply => ({ trap: e.message }), onSuccess: (ok): HostReply => ({ ok }) }))
            : call.method === "sendMessage"
            ? asErr(job.host.sendMessage(call))
            : asErr(job.host.hook?.(call) ?? Effect.fail({ message: "not available to this guest" }))
          ).pipe(Effect.flatMap(answer))
        const failure = (reason: SandboxError["reason"], message: string) =>
          new SandboxError({ reason, message, stderr: stderr.get() })
        const pastDeadline = new SandboxError({ reason: "Deadline", message: deadlineMessage(job.role, job.deadlineSeconds) })

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
            case "call": {
              // A host call may wait long (request-input waits for a person): the deadline ends it.
              const late = yield* Effect.raceFirst(Effect.as(serve(message.call), false), Effect.as(Deferred.await(expired), true))
              if (late) return yield* pastDeadline
              break
            }
            case "deadline":
              return yield* pastDeadline
            case "toolStart":
              tool = { name: message.name, deadline: Date.now() + message.deadlineMs, seconds: Math.round(message.deadlineMs / 1000) }
              break
            case "toolEnd":
              tool = undefined
              break
            case "glue":
              cacheUses[message.cache]++
              break
            case "codeCache":
              cacheUses.made++
              codeCaches.data.set(message.scriptPath, message.data)
              codeCaches.generations.set(message.scriptPath, (codeCaches.generations.get(message.scriptPath) ?? 0) + 1)
              break
            case "done":
              return { result: message.result, hook: message.hook, stderr: stderr.get() } satisfies GuestOutcome
            case "failed":
              if (message.reason === "InstanceLimit") return yield* failure("InstanceLimit", limitMessage(job.role, message.message))
              if (message.reason !== "Trap") return yield* failure(message.reason, message.message)
              if (isMemoryLimit(message.memory, job.grant.memoryBytes, stderr.get())) {
                return yield* failure("MemoryLimit", limitMessage(job.role, capMessage(message.memory, job.grant.memoryBytes, stderr.get())))
              }
              return yield* failure("Trap", trapMessage(job.role, message.message))
            case "error":
              return yield* failure("WorkerCrashed", `${job.role.kind === "capsule" ? "capsule" : subject(job.role)} worker failed: ${message.message}`)
            case "exit":
              return yield* failure("WorkerCrashed", `${job.role.kind === "capsule" ? "capsule" : subject(job.role)} worker exited (code ${message.code}) before finishing`)
          }
        }
      })).pipe(
        Effect.withSpan("Sandbox.run", { attributes: { role: job.role.kind === "capsule" ? "capsule" : job.role.name } })
      )

    return Sandbox.of({
      run,
      liveWorkers: () => Effect.sync(() => live),
      idleWorkers: () => Effect.sync(() => idle.length + held),
      warm,
      codeCacheStats: () => Effect.sync(() => ({ ...cacheUses })),
      putCodeCache: (scriptPath, data) => Effect.sync(() => void codeCaches.data.set(scriptPath, data))
    })
  })

export type { ToolResultData }
