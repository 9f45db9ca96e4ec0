/**
 * Entry point of a guest worker: one worker per guest run. It instantiates the capsule (or the
 * tool) from the compiled modules it was handed, with imports built from its grant, runs it
 * once, reports `done` or `failed`, and is then terminated by the main thread — which is also
 * how cancel, deadlines and shutdown end it at any moment.
 *
 * A held worker (`hold: true`, a Sandbox warm pool) gets its job before its run exists: it
 * imports the glue and instantiates ahead, then sleeps until the run's `go` (its input) arrives
 * on the host channel. The instance is still fresh for that one run: nothing of the guest has
 * executed but its instantiation, and the worker still serves exactly one run.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { readFileSync } from "node:fs"
import { Script } from "node:vm"
import { parentPort, receiveMessageOnPort } from "node:worker_threads"
import type { CodeCacheUse, FailureReason, GuestJob, GuestStart, LoadedGuest, RunGo, ToolInputData, ToolResultData, WorkerMessage } from "../GuestJob.js"
import { type Channel, HostTrap, makeChannel } from "./HostChannel.js"
import { callHook, hookMurmurImports } from "./HookImports.js"
import { capsuleMurmurImports, toolMurmurImports } from "./MurmurImports.js"
import { GROW_FAILED_EXPORT } from "../wasm/GrowFailedExport.js"
import { MAX_GUEST_OUTPUT_BYTES, runOutputCapNote } from "../GuestOutput.js"
import { capMessage, isMemoryLimit, type MemoryState } from "../wasm/MemoryVerdict.js"
import { GuestExit, wasiImports } from "./WasiImports.js"

// The imports above load while the worker waits in the pool; the job arrives when a run takes it
// (or, for a held worker, when its pool starts it).
const start: GuestStart = await new Promise((resolve) => parentPort!.once("message", (message: GuestStart) => resolve(message)))
const job: GuestJob = start.job
const direct = makeChannel(job.rpc)

/** Whether the run has started; a held worker's messages wait for it (nobody listens before). */
let started = start.hold !== true
const early: Array<WorkerMessage> = []
/** The run's input and trace context (a held worker learns them from `go`). */
let input: ToolInputData = job.role.kind === "tool" ? job.role.input : {}
let traceparent: string | undefined = job.traceparent

/** Sleeps until the run's `go` arrives, then lets the messages held so far out. */
const awaitGo = () => {
  if (started) return
  const flag = new Int32Array(job.rpc.flag)
  let go: RunGo | undefined
  while (go === undefined) {
    Atomics.wait(flag, 0, 0)
    go = receiveMessageOnPort(job.rpc.port)?.message as RunGo | undefined
    if (go === undefined) Atomics.store(flag, 0, 0)
  }
  input = go.input
  traceparent = go.traceparent
  started = true
  for (const message of early.splice(0)) direct.post(message)
}

const channel: Channel = {
  post: (message) => (started ? direct.post(message) : early.push(message)),
  // A host call made while instantiating ahead waits for the run, which is who answers it.
  call: (request) => {
    awaitGo()
    return direct.call(request)
  }
}

class Failure extends Error {
  constructor(readonly reason: FailureReason, message: string) {
    super(message)
  }
}

/**
 * What each core instance exposes about its memory: the memory itself and the grow probe that
 * ComponentCache instruments in (`__murmur_grow_failed`: pages of the last refused growth).
 */
interface MemoryWatch {
  readonly memory: WebAssembly.Memory
  readonly failedGrow: WebAssembly.Global | undefined
}

/** Instances created for the run so far; a nested tool call (its own store) collects its own. */
let watches: Array<MemoryWatch> = []
let instances = { count: 0, limit: job.grant.instances }

const instantiateCore = (module: WebAssembly.Module, imports: WebAssembly.Imports) => {
  if (++instances.count > instances.limit) {
    throw new Failure("InstanceLimit", `instance count ${instances.count} exceeds capabilities.limits.instances (${instances.limit})`)
  }
  const instance = new WebAssembly.Instance(module, imports)
  const probe = instance.exports[GROW_FAILED_EXPORT]
  for (const value of Object.values(instance.exports)) {
    if (value instanceof WebAssembly.Memory) {
      watches.push({ memory: value, failedGrow: probe instanceof WebAssembly.Global ? probe : undefined })
    }
  }
  return instance
}

/** How the guest's memory stood when it failed: in use, and what growth was refused (if any). */
const memoryState = (of: ReadonlyArray<MemoryWatch>): MemoryState => {
  let used = 0
  let refused: number | undefined
  for (const watch of of) {
    const size = watch.memory.buffer.byteLength
    used = Math.max(used, size)
    const pages = watch.failedGrow === undefined ? 0 : (watch.failedGrow.value as number) >>> 0
    if (pages > 0) refused = Math.max(refused ?? 0, size + pages * 65_536)
  }
  return { used, refusedGrowthTo: refused }
}

const classify = (error: unknown): Failure => {
  if (error instanceof Failure) return error
  return new Failure("Trap", error instanceof Error ? error.message : String(error))
}

/** Guest output forwarded so far in this run (the worker serves one run); past the cap, one note. */
let forwarded = 0
const forward = (type: "stdout" | "stderr") => (bytes: Uint8Array) => {
  if (forwarded > MAX_GUEST_OUTPUT_BYTES || bytes.length === 0) return
  const room = MAX_GUEST_OUTPUT_BYTES - forwarded
  forwarded += bytes.length
  if (bytes.length <= room) return channel.post({ type, bytes })
  if (room > 0) channel.post({ type, bytes: bytes.subarray(0, room) })
  channel.post({ type: "stderr", bytes: new TextEncoder().encode(runOutputCapNote) })
}
const sinks = { stdout: forward("stdout"), stderr: forward("stderr") }

interface Glue {
  readonly exports: any
  readonly script: Script
  readonly cache: CodeCacheUse
}

const loaded = new Map<string, Glue>()

/**
 * Loads the glue as a script (not `import()`): with the code cache an earlier worker made, the
 * functions that worker compiled lazily arrive compiled, instead of each new isolate compiling
 * them again on the first call. The cache is bytecode only; every instance is still this run's.
 */
const load = (guest: LoadedGuest) => {
  if (loaded.has(guest.scriptPath)) return
  const cachedData = job.codeCache?.[guest.scriptPath]
  const script = new Script(readFileSync(guest.scriptPath, "utf8"), {
    filename: guest.scriptPath,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  // A refused cache (other V8 flags, a changed file) costs only the compile it would have saved.
  const cache: CodeCacheUse = cachedData === undefined ? "none" : script.cachedDataRejected === true ? "rejected" : "accepted"
  loaded.set(guest.scriptPath, { exports: script.runInThisContext()(), script, cache })
  channel.post({ type: "glue", scriptPath: guest.scriptPath, cache })
}

/**
 * After a successful run, a cache for each glue that came without a usable one, or that the
 * Sandbox asks to refresh: now it holds the functions this run compiled (a later run may take
 * code paths the first did not, a driver's second turn say). Made before `done`, which is when
 * the worker is terminated; only for a component's first few runs in a process.
 */
const offerCodeCaches = () => {
  for (const [scriptPath, glue] of loaded) {
    if (glue.cache !== "accepted" || job.refreshCodeCache?.includes(scriptPath) === true) {
      channel.post({ type: "codeCache", scriptPath, data: glue.script.createCachedData() })
    }
  }
}

const EXPORTS = {
  capsule: "murmur:capsule/run@0.1.0",
  tool: "murmur:tool/run@0.1.0",
  hook: "murmur:hook/lifecycle@0.8.0"
} as const

const missingExport = (kind: GuestJob["role"]["kind"]) => {
  const name = job.role.kind === "capsule" ? "?" : job.role.name
  switch (kind) {
    case "capsule":
      return "capsule component missing export murmur:capsule/run@0.1.0#run; rebuild the artifact against the versioned WIT"
    case "tool":
      return `tool component '${name}' missing export murmur:tool/run@0.1.0#run; rebuild the artifact against the versioned WIT`
    case "hook":
      return `hook component '${name}' missing export murmur:hook/lifecycle@0.8.0; rebuild the artifact against the versioned WIT`
  }
}

const instantiate = (guest: LoadedGuest, imports: Record<string, any>, kind: GuestJob["role"]["kind"]) => {
  const root = loaded.get(guest.scriptPath)!.exports.instantiate((name: string) => guest.modules[name], imports, instantiateCore)
  const exported = root[EXPORTS[kind]] ?? (kind === "hook" ? root.lifecycle : root.run)
  const usable = kind === "hook" ? exported !== undefined && typeof exported === "object" : exported !== undefined && typeof exported.run === "function"
  if (!usable) throw new Failure("MissingExport", missingExport(kind))
  return exported
}

const normalizeResult = (result: any): ToolResultData => ({
  status: result.status,
  summary: result.summary ?? undefined,
  data: result.data ?? undefined,
  dataPath: result.dataPath ?? undefined,
  truncated: result.truncated === true,
  metadata: (result.metadata ?? []).map(([key, value]: [string, string]) => [key, value] as const)
})

/** A nested tool call from the capsule: fresh instance, its own grant, traps become `err`. */
const runTool = (name: string, input: ToolInputData): ToolResultData => {
  const tool = job.tools[name]!
  channel.post({ type: "toolStart", name, deadlineMs: tool.deadlineMs })
  const outer = watches
  const outerInstances = instances
  watches = []
  instances = { count: 0, limit: tool.grant.instances }
  try {
    const imports = { ...wasiImports(tool.grant, sinks), ...toolMurmurImports(job, channel) }
    let run: any
    try {
      run = instantiate(tool.guest, imports, "tool").run
    } catch (error) {
      if (error instanceof Failure) {
        throw new Error(error.reason === "InstanceLimit" ? `tool '${name}' exceeded its configured resource limits: ${error.message}` : error.message)
      }
      throw new Error(`tool '${name}' trapped: ${error instanceof Error ? error.message : String(error)}`)
    }
    try {
      return normalizeResult(run({ data: input.data, logPath: input.logPath }))
    } catch (error) {
      if (error instanceof HostTrap && !error.message.startsWith("request-input")) throw error
      const failure = classify(error)
      const memory = memoryState(watches)
      throw new Error(
        isMemoryLimit(memory, tool.grant.memoryBytes)
          ? `tool '${name}' exceeded its configured resource limits: ${capMessage(memory, tool.grant.memoryBytes)}`
          : `tool '${name}' trapped: ${failure.message}`
      )
    }
  } finally {
    watches = outer
    instances = outerInstances
    channel.post({ type: "toolEnd", name })
  }
}

/** Loads the glue, builds the imports and instantiates: everything before the guest runs. */
const prepare = async () => {
  load(job.guest)
  for (const tool of Object.values(job.tools)) load(tool.guest)
  const kind = job.role.kind
  const imports = {
    ...wasiImports(job.grant, sinks, () => traceparent),
    ...(kind === "capsule" ? capsuleMurmurImports(job, channel, { run: runTool }) : kind === "hook" ? hookMurmurImports(job, channel) : toolMurmurImports(job, channel))
  }
  try {
    return instantiate(job.guest, imports, kind)
  } catch (error) {
    if (error instanceof Failure) throw error
    throw new Failure("Instantiate", error instanceof Error ? error.message : String(error))
  }
}

const main = async () => {
  // A held worker reports a failed preparation only once its run has started.
  const exported = await prepare().finally(awaitGo)
  try {
    if (job.role.kind === "hook") {
      const hook = callHook(exported, job.role.call)
      offerCodeCaches()
      return channel.post({ type: "done", hook })
    }
    const result = job.role.kind === "tool" ? exported.run({ data: input.data, logPath: input.logPath }) : exported.run()
    offerCodeCaches()
    channel.post({ type: "done", result: job.role.kind === "tool" ? normalizeResult(result) : undefined })
  } catch (error) {
    if (error instanceof GuestExit && error.ok) {
      offerCodeCaches()
      return channel.post({ type: "done" })
    }
    throw classify(error)
  }
}

main().catch((error) => {
  awaitGo()
  const failure = classify(error)
  channel.post({ type: "failed", reason: failure.reason, message: failure.message, memory: memoryState(watches) })
})
