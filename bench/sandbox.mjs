// `npm run bench:sandbox`, step 2 (step 1, bench/sandbox-fixtures.ts, builds the components):
// the sandbox (dist/, built first by the npm script) on this machine — component loads, run
// start, nested tool calls, cancel of a spinning guest, memory per worker and the memory cap,
// and what a pool of pre-started workers would buy — each next to a baseline measured in the
// same run. Prints a summary and writes bench/results/sandbox-<date>.json. Method:
// docs/benchmarks.md, section "Sandbox". Run with --expose-gc (the npm script does).
//
// Knobs (environment): BENCH_PARTS=load,start,tool,cancel,memory,pool  BENCH_DATE=YYYY-MM-DD
// LOAD_N=4 START_N=50 START_QJS_N=20 TOOL_RUNS=4 TOOL_CALLS=50 CANCEL_N=30 MEM_K=8 POOL_N=10
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { MessageChannel, Worker } from "node:worker_threads"
import { Cause, Effect, Exit, Fiber, Layer, ManagedRuntime } from "effect"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const dist = (path) => import(pathToFileURL(join(root, "dist", path)).href)
const { ComponentCache } = await dist("sandbox/ComponentCache.js")
const { Sandbox } = await dist("sandbox/Sandbox.js")
const { loadProject } = await dist("sandbox/CapsuleProject.js")
const { prepareScript, runScript } = await dist("sandbox/ScriptLaunch.js")

const env = (name, fallback) => (process.env[name] === undefined || process.env[name] === "" ? fallback : process.env[name])
const num = (name, fallback) => Number(env(name, fallback))
const PARTS = new Set(env("BENCH_PARTS", "load,start,tool,cancel,memory,pool").split(","))
const DATE = env("BENCH_DATE", new Date().toISOString().slice(0, 10))
const LOAD_N = num("LOAD_N", 4)
const START_N = num("START_N", 50)
const START_QJS_N = num("START_QJS_N", 20)
const TOOL_RUNS = num("TOOL_RUNS", 4)
const TOOL_CALLS = num("TOOL_CALLS", 50)
const CANCEL_N = num("CANCEL_N", 30)
const MEM_K = num("MEM_K", 8)
const POOL_N = num("POOL_N", 10)
const MIB = 1024 * 1024

if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc (npm run bench:sandbox does)")
const log = (...args) => console.error(`[bench ${new Date().toISOString().slice(11, 19)} load ${os.loadavg()[0].toFixed(2)}]`, ...args)
/** 1-minute load average when each part started (this machine may be shared: see the doc). */
const loadAverages = {}
const beginPart = (name) => {
  loadAverages[name] = round(os.loadavg()[0])
  log(name)
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const now = () => performance.now()
const abs = () => performance.timeOrigin + performance.now()
const round = (x, digits = 2) => (x === undefined || Number.isNaN(x) ? x : Math.round(x * 10 ** digits) / 10 ** digits)
/** Nearest-rank percentile. */
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}
const stats = (xs) => ({
  n: xs.length,
  p50: round(pct(xs, 50)),
  p90: round(pct(xs, 90)),
  p99: round(pct(xs, 99)),
  min: round(Math.min(...xs)),
  max: round(Math.max(...xs)),
  mean: round(xs.reduce((a, b) => a + b, 0) / xs.length)
})
const fmt = (s) => `p50 ${s.p50} ms  p90 ${s.p90}  p99 ${s.p99}  (min ${s.min}, max ${s.max}, n=${s.n})`
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc()
    await sleep(50)
  }
}
const rss = () => process.memoryUsage().rss
const threads = () => Number(/Threads:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? NaN)

// ---------------------------------------------------------------------------------------------
// Fixtures and capsule directories

const fixtures = JSON.parse(readFileSync(join(root, ".cache/bench/sandbox-fixtures.json"), "utf8"))
const bytesOf = (name) => new Uint8Array(readFileSync(fixtures[name]))
const scratch = mkdtempSync(join(os.tmpdir(), "bench-sandbox-"))

/** A capsule directory like test/lib/CapsuleDirs.ts makes: murmur.yaml, capsule.wasm, registry tools. */
const capsuleDir = (capsule, { tools = {}, capabilities } = {}) => {
  const dir = mkdtempSync(join(scratch, "capsule-"))
  writeFileSync(join(dir, "capsule.wasm"), bytesOf(capsule))
  for (const [name, fixture] of Object.entries(tools)) {
    const target = join(dir, ".murmur", "artifacts", name, "0.1.0")
    mkdirSync(target, { recursive: true })
    writeFileSync(join(target, `${name}.wasm`), bytesOf(fixture))
    writeFileSync(join(target, "murmur.yaml"), `name: ${name}\nversion: 0.1.0\nruntime: tool\ndescription: the ${name} fixture\n`)
  }
  const names = Object.keys(tools)
  const artifacts = names.length === 0 ? "artifacts: []\n" : `artifacts:\n${names.map((n) => `  - name: ${n}\n    version: 0.1.0\n    runtime: tool\n`).join("")}`
  writeFileSync(join(dir, "murmur.yaml"), `name: bench-capsule\nversion: 0.1.0\n${artifacts}${capabilities === undefined ? "" : `capabilities:\n${capabilities}`}`)
  return dir
}

const cacheDirectory = join(scratch, "component-cache")
const runtime = ManagedRuntime.make(Layer.merge(ComponentCache.layer({ directory: cacheDirectory }), Sandbox.layer()))
const run = (effect) => runtime.runPromise(effect)
const quietHost = {
  inTask: false,
  trust: "untrusted",
  host: { text: () => Effect.void, thinking: () => Effect.void, requestInput: () => Effect.fail({ message: "no task" }) }
}
let session = 0
const prepare = (dir, hostEnv = {}) =>
  run(Effect.flatMap(loadProject(dir, hostEnv), (project) => prepareScript(project, { sessionId: `bench-${++session}`, hostEnv })))
const runOnce = (prepared) => run(runScript(prepared, quietHost))
const liveWorkers = () => run(Effect.flatMap(Sandbox, (s) => s.liveWorkers()))

/** The GuestJob Sandbox.run would hand its worker, for the harness worker. */
const guestJob = (prepared) => {
  const channel = new MessageChannel()
  return {
    job: {
      role: { kind: "capsule" },
      guest: prepared.capsule.guest,
      grant: prepared.grant,
      allowlist: prepared.allowlist,
      tools: Object.fromEntries(Object.entries(prepared.tools).map(([name, tool]) => [name, { guest: tool.component.guest, grant: tool.grant, deadlineMs: tool.deadlineSeconds * 1000 }])),
      inTask: false,
      sessionId: prepared.sessionId,
      artifacts: prepared.artifacts,
      rpc: { port: channel.port2, flag: new SharedArrayBuffer(4) }
    },
    reply: channel.port1
  }
}
/** Same worker options as Sandbox.spawn. */
const workerOptions = (workerData, transferList = []) => ({ workerData, transferList, env: {}, stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: 256 } })
const harnessUrl = new URL("./sandbox-worker.mjs", import.meta.url)
const emptyUrl = new URL("./fixtures/empty-worker.mjs", import.meta.url)
const spawnWorker = (url, options) => {
  const worker = new Worker(url, options)
  worker.stdout.resume()
  worker.stderr.resume()
  return worker
}
const nextMessage = (worker, type) =>
  new Promise((resolve, reject) => {
    const onMessage = (message) => {
      if (type === undefined || message?.type === type || (type === "end" && (message?.type === "done" || message?.type === "failed"))) {
        worker.off("message", onMessage)
        resolve(message)
      }
    }
    worker.on("message", onMessage)
    worker.once("error", reject)
  })

const results = {
  date: DATE,
  machine: {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: round(os.totalmem() / 1024 ** 3, 1),
    node: process.version,
    v8: process.versions.v8,
    kernel: `${os.type()} ${os.release()}`,
    arch: process.arch
  },
  knobs: { LOAD_N, START_N, START_QJS_N, TOOL_RUNS, TOOL_CALLS, CANCEL_N, MEM_K, POOL_N },
  targets: { toolCallP50Ms: 5, cancelP99Ms: 20, memoryCapSlackBytes: 65536 }
}
const summary = []
const say = (line) => {
  summary.push(line)
  console.log(line)
}

// ---------------------------------------------------------------------------------------------
// 1. Component loads: cold (transpile + cap + compile) vs disk-warm vs memoised

const limits = { memoryBytes: 512 * MIB, tableElements: 100_000 }
const freshCache = (directory) => Effect.runPromise(Effect.provide(ComponentCache, ComponentCache.layer({ directory })))
const timeLoad = async (cache, bytes) => {
  const t0 = now()
  await Effect.runPromise(cache.load(bytes, limits))
  return now() - t0
}

if (PARTS.has("load")) {
  beginPart("1. component loads")
  const part = {}
  const { componentWit, transpile } = await import("@bytecodealliance/jco")
  let first
  for (const name of ["capsule-noop", "echo-tool", "capsule-invoke-loop"]) {
    const bytes = bytesOf(name)
    const cold = []
    const disk = []
    const memo = []
    const transpileOnly = []
    for (let i = 0; i < LOAD_N + (first === undefined ? 1 : 0); i++) {
      await settle()
      const directory = mkdtempSync(join(scratch, "load-"))
      const cache = await freshCache(directory)
      const ms = await timeLoad(cache, bytes)
      if (first === undefined) first = { component: name, ms: round(ms) }
      else cold.push(ms)
      for (let j = 0; j < 20; j++) memo.push(await timeLoad(cache, bytes))
      await settle()
      disk.push(await timeLoad(await freshCache(directory), bytes))
      rmSync(directory, { recursive: true, force: true })
    }
    const witOnly = []
    for (let i = 0; i < 3; i++) {
      let t0 = now()
      await transpile(bytes, { name: "component", instantiation: "sync", noTypescript: true })
      transpileOnly.push(now() - t0)
      t0 = now()
      await componentWit(bytes)
      witOnly.push(now() - t0)
    }
    part[name] = {
      bytes: bytes.length,
      cold: stats(cold),
      diskWarm: stats(disk),
      memoised: stats(memo),
      jcoTranspileOnly: stats(transpileOnly),
      jcoComponentWitOnly: stats(witOnly),
      samples: { cold, disk, memo, transpileOnly, witOnly }
    }
    say(`load ${name} (${(bytes.length / 1024).toFixed(0)} KiB): cold ${fmt(part[name].cold)}`)
    say(`  disk-warm ${fmt(part[name].diskWarm)}; memoised ${fmt(part[name].memoised)}; jco alone: transpile p50 ${part[name].jcoTranspileOnly.p50} ms, componentWit (world check) p50 ${part[name].jcoComponentWitOnly.p50} ms`)
    say(`  ratio cold/disk-warm ${round(part[name].cold.p50 / part[name].diskWarm.p50, 1)}x, cold/memoised ${round(part[name].cold.p50 / part[name].memoised.p50, 0)}x`)
  }
  part.firstLoadInProcess = first
  say(`load: first load in the process (jco's own start-up included): ${first.component} ${first.ms} ms`)
  results.load = part
}

// ---------------------------------------------------------------------------------------------
// 2. Warm run start vs raw `new Worker`

const noopDir = capsuleDir("capsule-noop")
const loopDir = capsuleDir("capsule-invoke-loop", { tools: { "echo-tool": "echo-tool" }, capabilities: "  env:\n    allow: [CALLS, SPIN]\n" })
const noop = await prepare(noopDir)
const quick0 = await prepare(loopDir, { CALLS: "0" })

/** new Worker (same options as the Sandbox) → first message → await terminate(). */
const rawWorkerRun = async () => {
  const t0 = now()
  const worker = spawnWorker(emptyUrl, workerOptions(undefined))
  await nextMessage(worker)
  const ready = now() - t0
  await worker.terminate()
  return { total: now() - t0, ready }
}

if (PARTS.has("start")) {
  beginPart("2. warm run start")
  const part = {}
  for (let i = 0; i < 3; i++) {
    await rawWorkerRun()
    await runOnce(noop)
    await runOnce(quick0)
  }
  const raw = []
  const rawReady = []
  const noopRuns = []
  const quickRuns = []
  // Interleaved, so that drift (GC, page cache, CPU frequency) hits all three alike.
  for (let i = 0; i < START_N; i++) {
    const r = await rawWorkerRun()
    raw.push(r.total)
    rawReady.push(r.ready)
    let t0 = now()
    await runOnce(noop)
    noopRuns.push(now() - t0)
    if (i % Math.max(1, Math.round(START_N / START_QJS_N)) !== 0) continue
    t0 = now()
    await runOnce(quick0)
    quickRuns.push(now() - t0)
  }
  part.rawWorker = stats(raw)
  part.rawWorkerToFirstMessage = stats(rawReady)
  part.noopCapsule = stats(noopRuns)
  part.quickjsCapsule = stats(quickRuns)
  part.samples = { raw, rawReady, noopRuns, quickRuns }
  say(`start: raw new Worker → message → terminate: ${fmt(part.rawWorker)}`)
  say(`start: runScript capsule-noop (WAT): ${fmt(part.noopCapsule)}  = ${round(part.noopCapsule.p50 / part.rawWorker.p50, 1)}x raw`)
  say(`start: runScript capsule-invoke-loop CALLS=0 (QuickJS capsule + QuickJS tool loaded): ${fmt(part.quickjsCapsule)}  = ${round(part.quickjsCapsule.p50 / part.rawWorker.p50, 1)}x raw`)
  results.start = part
}

// ---------------------------------------------------------------------------------------------
// 3. Tool calls through murmur:tool-registry/invoke (fresh echo-tool instance per call)

if (PARTS.has("tool")) {
  beginPart("3. tool calls")
  const part = {}
  const loopN = await prepare(loopDir, { CALLS: String(TOOL_CALLS) })
  const allowDir = capsuleDir("capsule-allowlisted", { tools: { "echo-tool": "echo-tool" } })
  const allowlisted = await prepare(allowDir)
  const firstCall = []
  const steady = []
  const runsN = []
  const runs0 = []
  const runsAllow = []
  await runOnce(loopN)
  for (let i = 0; i < TOOL_RUNS; i++) {
    let t0 = now()
    await runOnce(loopN)
    runsN.push(now() - t0)
    const out = JSON.parse(readFileSync(join(loopN.workdir, "out", "result.txt"), "utf8"))
    if (out.failures > 0 || out.ns.length !== TOOL_CALLS) throw new Error(`tool calls failed: ${JSON.stringify(out).slice(0, 300)}`)
    firstCall.push(out.ns[0] / 1e6)
    steady.push(...out.ns.slice(1).map((ns) => ns / 1e6))
    t0 = now()
    await runOnce(quick0)
    runs0.push(now() - t0)
    t0 = now()
    await runOnce(allowlisted)
    runsAllow.push(now() - t0)
  }
  if (readFileSync(join(allowlisted.workdir, "out", "result.txt"), "utf8") !== "ok") throw new Error("capsule-allowlisted did not write ok")
  part.perCallInGuest = stats(steady)
  part.firstCallOfRun = stats(firstCall)
  part.runWithCalls = stats(runsN)
  part.runWithoutCalls = stats(runs0)
  part.meanPerCallFromHost = round((part.runWithCalls.p50 - part.runWithoutCalls.p50) / TOOL_CALLS)
  part.capsuleAllowlistedRun = stats(runsAllow)
  // Where a nested call's time goes: GuestWorker's runTool steps, timed in a worker.
  const tool = loopN.tools["echo-tool"]
  const worker = spawnWorker(harnessUrl, workerOptions({ breakdown: { guest: tool.component.guest, grant: tool.grant, calls: TOOL_CALLS } }))
  const rows = (await nextMessage(worker, "breakdown")).rows.slice(1)
  await worker.terminate()
  part.breakdown = Object.fromEntries(Object.keys(rows[0]).map((k) => [k, stats(rows.map((r) => r[k]))]))
  part.samples = { steady, firstCall, runsN, runs0, runsAllow, breakdown: rows }
  say(`tool call (invoke echo-tool, in-guest monotonic clock, calls 2..${TOOL_CALLS} of ${TOOL_RUNS} runs): ${fmt(part.perCallInGuest)}  [target p50 ≤ 5 ms: ${part.perCallInGuest.p50 <= 5 ? "met" : "MISSED"}]`)
  say(`  first call of a run: ${fmt(part.firstCallOfRun)}`)
  const b = part.breakdown
  say(`  split (p50 ms): build WASI+murmur imports ${b.imports.p50} + instantiate ${b.instantiate.p50} (core instances ${b.coreInstances.p50}, jco glue ${b.glue.p50}) + run ${b.run.p50} = ${b.total.p50}`)
  say(`  host view: run with ${TOOL_CALLS} calls p50 ${part.runWithCalls.p50} ms vs 0 calls p50 ${part.runWithoutCalls.p50} ms → ${part.meanPerCallFromHost} ms/call; capsule-allowlisted run p50 ${part.capsuleAllowlistedRun.p50} ms`)
  results.tool = part
}

/** Bench-only bundles of GuestWorker (esbuild, preview2-shim external): as is, and with `effect` stubbed. */
let bundlesMemo
const workerBundles = () => (bundlesMemo ??= buildBundles())
const buildBundles = async () => {
  let esbuild
  try {
    esbuild = await import("esbuild") // vite's, present with vitest
  } catch {
    return {}
  }
  const outdir = join(root, ".cache/bench")
  const common = {
    entryPoints: [join(root, "dist/sandbox/worker/GuestWorker.js")],
    bundle: true,
    format: "esm",
    platform: "node",
    external: ["@bytecodealliance/preview2-shim", "@bytecodealliance/preview2-shim/*"],
    logLevel: "error"
  }
  const stub = { name: "effect-stub", setup: (b) => b.onResolve({ filter: /^effect$/ }, () => ({ path: join(here, "fixtures/effect-stub.mjs") })) }
  await esbuild.build({ ...common, outfile: join(outdir, "GuestWorker.bundle.mjs") })
  await esbuild.build({ ...common, outfile: join(outdir, "GuestWorker.no-effect.mjs"), plugins: [stub] })
  return {
    "bundled GuestWorker": pathToFileURL(join(outdir, "GuestWorker.bundle.mjs")),
    "bundled, effect stubbed": pathToFileURL(join(outdir, "GuestWorker.no-effect.mjs"))
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Cancel of a spinning guest vs raw terminate of a spinning worker

if (PARTS.has("cancel")) {
  beginPart("4. cancel")
  const part = {}
  const spin = await prepare(capsuleDir("capsule-spin-loop"))
  // The guest must be in its loop when interrupted: wait well past the start time of a capsule
  // of the same size (capsule-noop, part 2, else measured here).
  let startP99 = results.start?.noopCapsule.p99
  if (startP99 === undefined) {
    const xs = []
    for (let i = 0; i < 5; i++) {
      const t0 = now()
      await runOnce(noop)
      xs.push(now() - t0)
    }
    startP99 = Math.max(...xs)
  }
  const waitMs = Math.round(startP99 * 1.25 + 50)
  part.waitBeforeInterruptMs = `until the worker and preview2-shim's helper thread are up (+2 threads), then 250 ms; at most ${waitMs} ms`
  /** A guest worker is up when its thread and the shim's helper thread (spawned at load) exist. */
  const untilSpinning = async (baseThreads) => {
    const t0 = now()
    while (threads() < baseThreads + 2 && now() - t0 < waitMs) await sleep(5)
    await sleep(Math.max(0, Math.min(250, waitMs - (now() - t0))))
  }
  const threads0 = threads()
  const cancel = []
  const exits = { interrupted: 0, other: [] }
  for (let i = 0; i < CANCEL_N; i++) {
    const base = threads()
    const fiber = runtime.runFork(runScript(spin, quietHost))
    await untilSpinning(base)
    const t0 = now()
    const exit = await runtime.runPromise(Fiber.interrupt(fiber))
    cancel.push(now() - t0)
    if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) exits.interrupted++
    else exits.other.push(String(exit))
    const live = await liveWorkers()
    if (live !== 0) throw new Error(`${live} workers alive after interruption`)
  }
  // The same through Sandbox.run directly (no runScript: no guest log stream to close).
  const direct = []
  const { Sandbox: SandboxTag, silentHost } = await dist("sandbox/Sandbox.js")
  const guestRun = {
    role: { kind: "capsule" },
    component: spin.capsule,
    grant: spin.grant,
    deadlineSeconds: spin.deadlineSeconds,
    allowlist: spin.allowlist,
    tools: spin.tools,
    inTask: false,
    sessionId: spin.sessionId,
    artifacts: spin.artifacts,
    host: silentHost
  }
  for (let i = 0; i < Math.ceil(CANCEL_N / 3); i++) {
    const base = threads()
    const fiber = runtime.runFork(Effect.flatMap(SandboxTag, (sandbox) => sandbox.run(guestRun)))
    await untilSpinning(base)
    const t0 = now()
    await runtime.runPromise(Fiber.interrupt(fiber))
    direct.push(now() - t0)
    if ((await liveWorkers()) !== 0) throw new Error("worker alive after interruption")
  }
  // Baselines: worker.terminate() on a worker spinning in JS, and on one spinning in the guest
  // (the harness worker running capsule-spin-loop exactly as GuestWorker does; fewer: slow start).
  const raw = []
  for (let i = 0; i < CANCEL_N; i++) {
    const worker = spawnWorker(emptyUrl, workerOptions({ spin: true }))
    await nextMessage(worker)
    await sleep(50)
    const t0 = now()
    await worker.terminate()
    raw.push(now() - t0)
  }
  const rawWasm = []
  for (let i = 0; i < Math.ceil(CANCEL_N / 3); i++) {
    const { job, reply } = guestJob(spin)
    const worker = spawnWorker(harnessUrl, workerOptions(job, [job.rpc.port]))
    await nextMessage(worker, "timing")
    await sleep(100)
    const t0 = now()
    await worker.terminate()
    rawWasm.push(now() - t0)
    reply.close()
  }
  // What-if: the same guest worker bundled without `effect` (smaller heap to tear down).
  const rawNoEffect = []
  const noEffect = (await workerBundles())["bundled, effect stubbed"]
  for (let i = 0; noEffect !== undefined && i < Math.ceil(CANCEL_N / 3); i++) {
    const { job, reply } = guestJob(spin)
    const base = threads()
    const worker = spawnWorker(noEffect, workerOptions(job, [job.rpc.port]))
    await untilSpinning(base)
    const t0 = now()
    await worker.terminate()
    rawNoEffect.push(now() - t0)
    reply.close()
  }
  await sleep(200)
  part.interruptSpinningCapsule = stats(cancel)
  if (rawNoEffect.length > 0) part.rawTerminateNoEffectBundle = stats(rawNoEffect)
  part.interruptSandboxRunDirect = stats(direct)
  part.rawTerminateSpinningWorker = stats(raw)
  part.rawTerminateWasmSpinningWorker = stats(rawWasm)
  part.exits = exits
  part.threadsBefore = threads0
  part.threadsAfter = threads()
  part.samples = { cancel, direct, raw, rawWasm, rawNoEffect }
  say(`cancel: Fiber.interrupt(runScript(capsule-spin-loop)) → worker terminated: ${fmt(part.interruptSpinningCapsule)}  [target p99 ≤ 20 ms: ${part.interruptSpinningCapsule.p99 <= 20 ? "met" : "MISSED"}]`)
  say(`  Fiber.interrupt(Sandbox.run) directly (no runScript log stream): ${fmt(part.interruptSandboxRunDirect)}`)
  say(`  raw worker.terminate(), guest spinning in wasm: ${fmt(part.rawTerminateWasmSpinningWorker)}; JS for(;;) worker: ${fmt(part.rawTerminateSpinningWorker)}`)
  if (part.rawTerminateNoEffectBundle !== undefined) say(`  raw worker.terminate(), same guest worker bundled without effect (what-if): ${fmt(part.rawTerminateNoEffectBundle)}`)
  say(`  ratio runScript interrupt / raw wasm terminate p50 ${round(part.interruptSpinningCapsule.p50 / part.rawTerminateWasmSpinningWorker.p50, 1)}x; exits interrupted ${exits.interrupted}/${CANCEL_N}; threads ${threads0} → ${part.threadsAfter}`)
  results.cancel = part
}

// ---------------------------------------------------------------------------------------------
// 5. Memory per live worker; memory cap

/** RSS and thread deltas with K workers alive (started by `startAll`, ended by `stopAll`). */
const residentCost = async (label, startAll, stopAll, waitMs) => {
  await settle()
  const rss0 = rss()
  const threads0 = threads()
  const handle = await startAll()
  await sleep(waitMs)
  // Wait until the workers have settled (all loaded): RSS steady within 1 MiB over 500 ms.
  for (let previous = rss(), i = 0; i < 40; i++) {
    await sleep(500)
    const current = rss()
    if (Math.abs(current - previous) < MIB) break
    previous = current
  }
  const rss1 = rss()
  const threads1 = threads()
  await stopAll(handle)
  await settle()
  const result = {
    k: MEM_K,
    rssDeltaMiB: round((rss1 - rss0) / MIB, 1),
    perWorkerMiB: round((rss1 - rss0) / MIB / MEM_K, 1),
    threadsPerWorker: round((threads1 - threads0) / MEM_K, 1),
    rssAfterStopDeltaMiB: round((rss() - rss0) / MIB, 1)
  }
  say(`memory: ${label}: +${result.perWorkerMiB} MiB RSS and +${result.threadsPerWorker} threads per worker (K=${MEM_K}, total +${result.rssDeltaMiB} MiB; after stop ${result.rssAfterStopDeltaMiB >= 0 ? "+" : ""}${result.rssAfterStopDeltaMiB} MiB)`)
  return result
}

const rawWorkers = async (workerData) => {
  const workers = Array.from({ length: MEM_K }, () => spawnWorker(emptyUrl, workerOptions(workerData)))
  await Promise.all(workers.map((w) => nextMessage(w)))
  return workers
}
const poolWorkers = async () => {
  const workers = Array.from({ length: MEM_K }, () => spawnWorker(harnessUrl, workerOptions({ pool: true })))
  await Promise.all(workers.map((w) => nextMessage(w, "ready")))
  return workers
}
const terminateAll = (workers) => Promise.all(workers.map((w) => w.terminate()))
const sandboxRuns = (prepared) => async () => {
  const fibers = Array.from({ length: MEM_K }, () => runtime.runFork(runScript(prepared, quietHost)))
  while ((await liveWorkers()) < MEM_K) await sleep(10)
  return fibers
}
const interruptAll = async (fibers) => {
  await runtime.runPromise(Fiber.interruptAll(fibers))
  const live = await liveWorkers()
  if (live !== 0) throw new Error(`${live} workers alive after interruption`)
}

/** Runs the balloon in the harness worker: the worker's own report of the memory it had. */
const balloonInHarness = async (prepared) => {
  const { job, reply } = guestJob(prepared)
  const worker = spawnWorker(harnessUrl, workerOptions(job, [job.rpc.port]))
  const end = await nextMessage(worker, "end")
  await worker.terminate()
  reply.close()
  return end
}
/** Grows the capped core memory one page at a time from JS until V8 refuses: the exact ceiling. */
const pageProbe = (prepared) => {
  for (const module of Object.values(prepared.capsule.guest.modules)) {
    if (!WebAssembly.Module.exports(module).some((e) => e.kind === "memory") || WebAssembly.Module.imports(module).length > 0) continue
    const memory = Object.values(new WebAssembly.Instance(module, {}).exports).find((v) => v instanceof WebAssembly.Memory)
    for (;;) {
      try {
        memory.grow(1)
      } catch {
        return memory.buffer.byteLength
      }
    }
  }
  return undefined
}

if (PARTS.has("memory")) {
  beginPart("5. memory")
  const part = {}
  part.rawIdleWorker = await residentCost("raw idle worker (empty script)", () => rawWorkers(undefined), terminateAll, 500)
  part.rawSpinningWorker = await residentCost("raw spinning worker (JS for(;;))", () => rawWorkers({ spin: true }), terminateAll, 500)
  part.readyGuestWorker = await residentCost("pre-started guest worker (GuestWorker deps + preview2-shim loaded, no guest)", poolWorkers, terminateAll, 500)
  const spin = await prepare(capsuleDir("capsule-spin-loop"))
  part.spinLoopRun = await residentCost("Sandbox run of capsule-spin-loop (WAT, spinning)", sandboxRuns(spin), interruptAll, 1500)
  const noEffect = (await workerBundles())["bundled, effect stubbed"]
  if (noEffect !== undefined) {
    const spawnSpinners = async () =>
      Array.from({ length: MEM_K }, () => {
        const { job, reply } = guestJob(spin)
        reply.unref()
        return spawnWorker(noEffect, workerOptions(job, [job.rpc.port]))
      })
    part.noEffectSpinLoop = await residentCost("same worker bundled without effect (what-if), capsule-spin-loop spinning", spawnSpinners, terminateAll, 1000)
  }
  const quickSpin = await prepare(loopDir, { CALLS: "1", SPIN: "1" })
  part.quickjsSpinRun = await residentCost("Sandbox run of capsule-invoke-loop SPIN=1 (QuickJS capsule after 1 tool call, spinning)", sandboxRuns(quickSpin), interruptAll, 2500)

  const caps = []
  for (const mib of [16, 20, 32, 64]) {
    const bytes = mib * MIB
    const dir = capsuleDir("capsule-memory-balloon", { capabilities: `  limits:\n    memory_bytes: ${bytes}\n` })
    const prepared = await prepare(dir)
    const t0 = now()
    const exit = await runtime.runPromiseExit(runScript(prepared, quietHost))
    const ms = now() - t0
    const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    const end = await balloonInHarness(prepared)
    // GuestWorker's report: `memory: { used, refusedGrowthTo }` (older builds: `memoryBytes`).
    const worker = { memoryBytes: end.memory?.used ?? end.memoryBytes, refusedGrowthTo: end.memory?.refusedGrowthTo }
    const probe = pageProbe(prepared)
    const row = {
      capBytes: bytes,
      sandboxReason: error?.reason ?? "none",
      sandboxMessage: error?.message ?? "succeeded?!",
      msToFailure: round(ms),
      workerReportedMemoryBytes: worker.memoryBytes,
      workerReportedRefusedGrowthTo: worker.refusedGrowthTo,
      pageProbeMaxBytes: probe,
      overCapBytes: Math.max(worker.memoryBytes ?? 0, probe ?? 0) - bytes,
      holds: (worker.memoryBytes ?? Infinity) <= bytes && (probe ?? Infinity) <= bytes
    }
    caps.push(row)
    say(`memory cap ${mib} MiB: balloon reached ${round(row.workerReportedMemoryBytes / MIB, 2)} MiB (8 MiB steps; refused growth to ${round(row.workerReportedRefusedGrowthTo / MIB, 2)} MiB); JS page probe ceiling ${round(row.pageProbeMaxBytes / MIB, 4)} MiB; holds=${row.holds}; Sandbox said ${row.sandboxReason}: ${row.sandboxMessage.replace(/^.*resource limits: /, "")} (${row.msToFailure} ms)`)
  }
  part.cap = caps
  results.memory = part
}

// ---------------------------------------------------------------------------------------------
// 6. Where the start time goes, and what a pool of pre-started workers would buy

if (PARTS.has("pool")) {
  beginPart("6. start split and pool")
  const part = {}
  /** Fresh harness worker per run: where the start time goes. */
  const split = async (prepared) => {
    const rows = []
    for (let i = 0; i < POOL_N + 2; i++) {
      const { job, reply } = guestJob(prepared)
      const t0 = abs()
      const worker = spawnWorker(harnessUrl, workerOptions(job, [job.rpc.port]))
      const timing = nextMessage(worker, "timing")
      const end = await nextMessage(worker, "end")
      const t = (await timing).t
      const tDone = abs()
      if (end.type !== "done") throw new Error(`harness run failed: ${end.message}`)
      await worker.terminate()
      reply.close()
      const tEnd = abs()
      if (i >= 2) rows.push({ boot: t.entry - t0, deps: t.deps - t.entry, componentJs: t.js - t.deps, instantiateRun: tDone - t.js, terminate: tEnd - tDone, total: tEnd - t0 })
    }
    return rows
  }
  /** Pre-started workers (a batch started together, as a pool refill would), then used one by one. */
  const pooled = async (prepared) => {
    const rows = []
    const batch = 5
    while (rows.length < POOL_N) {
      const workers = Array.from({ length: batch }, () => spawnWorker(harnessUrl, workerOptions({ pool: true })))
      await Promise.all(workers.map((w) => nextMessage(w, "ready")))
      await sleep(50)
      for (const worker of workers) {
        const { job, reply } = guestJob(prepared)
        const t0 = abs()
        worker.postMessage(job, [job.rpc.port])
        const timing = nextMessage(worker, "timing")
        const end = await nextMessage(worker, "end")
        const t = (await timing).t
        const tDone = abs()
        if (end.type !== "done") throw new Error(`pooled run failed: ${end.message}`)
        await worker.terminate()
        reply.close()
        rows.push({ componentJs: t.js - t0, instantiateRun: tDone - t.js, toDone: tDone - t0, terminate: abs() - tDone })
      }
    }
    return rows.slice(0, POOL_N)
  }
  /** A fresh worker on another entry (the bundles): spawn → done → terminate. */
  const fresh = async (url, prepared) => {
    const xs = []
    for (let i = 0; i < POOL_N + 2; i++) {
      const { job, reply } = guestJob(prepared)
      const t0 = now()
      const worker = spawnWorker(url, workerOptions(job, [job.rpc.port]))
      const end = await nextMessage(worker, "end")
      if (end.type !== "done") throw new Error(`bundled run failed: ${end.message}`)
      await worker.terminate()
      reply.close()
      if (i >= 2) xs.push(now() - t0)
    }
    return xs
  }
  const bundles = await workerBundles()
  const column = (rows, key) => stats(rows.map((r) => r[key]))
  for (const [name, prepared] of [["capsule-noop", noop], ["capsule-invoke-loop CALLS=0", quick0]]) {
    const cold = await split(prepared)
    const pool = await pooled(prepared)
    const coldStats = Object.fromEntries(Object.keys(cold[0]).map((k) => [k, column(cold, k)]))
    const poolStats = Object.fromEntries(Object.keys(pool[0]).map((k) => [k, column(pool, k)]))
    const variants = {}
    for (const [label, url] of Object.entries(bundles)) variants[label] = stats(await fresh(url, prepared))
    part[name] = { fresh: coldStats, pooled: poolStats, bundles: variants, samples: { cold, pool } }
    say(`split ${name} (fresh worker, p50 ms): boot ${coldStats.boot.p50} + GuestWorker deps ${coldStats.deps.p50} + component JS ${coldStats.componentJs.p50} + instantiate&run ${coldStats.instantiateRun.p50} (+ terminate ${coldStats.terminate.p50}) = ${coldStats.total.p50}`)
    say(`  pre-started worker: job → done ${fmt(poolStats.toDone)} vs fresh spawn → done p50 ${round(coldStats.total.p50 - coldStats.terminate.p50)} ms`)
    for (const [label, st] of Object.entries(variants)) say(`  fresh worker, ${label}: spawn → done → terminate ${fmt(st)}`)
  }
  results.pool = part
}

await runtime.dispose()
rmSync(scratch, { recursive: true, force: true })
results.loadAverage1m = { ...loadAverages, end: round(os.loadavg()[0]) }
results.summary = summary
mkdirSync(join(here, "results"), { recursive: true })
const out = join(here, "results", `sandbox-${DATE}.json`)
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
log(`wrote ${out}`)
