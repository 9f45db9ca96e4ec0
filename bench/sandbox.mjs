// `npm run bench:sandbox`, step 2 (step 1, bench/sandbox-fixtures.ts, builds the components):
// the sandbox (dist/, built first by the npm script) on this machine — component loads, run
// start with and without a pre-started worker (`Sandbox.layer({ prestart: 1 })`), nested tool
// calls, cancel of a spinning guest, memory per worker (idle pre-started and running) and the
// memory cap, and where a run's start goes — each next to a baseline measured in the same run.
// Prints a summary (with `uptime`'s load: the machine may be shared) and writes
// bench/results/sandbox-<date>.json. Method: docs/benchmarks.md, section "Sandbox". Run with
// --expose-gc (the npm script does).
//
// Knobs (environment): BENCH_PARTS=load,start,tool,cancel,memory,pool  BENCH_DATE=YYYY-MM-DD
// LOAD_N=4 START_N=40 START_QJS_N=15 TOOL_RUNS=4 TOOL_CALLS=50 CANCEL_N=30 MEM_K=8 POOL_N=10
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { MessageChannel, Worker } from "node:worker_threads"
import { Cause, Effect, Exit, Fiber, Layer, ManagedRuntime } from "effect"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const dist = (path) => import(pathToFileURL(join(root, "dist", path)).href)
const { ComponentCache } = await dist("sandbox/component/ComponentCache.js")
const { Sandbox } = await dist("sandbox/Sandbox.js")
const { loadProject } = await dist("project/CapsuleProject.js")
const { prepareScript, runScript } = await dist("script/ScriptLaunch.js")

const env = (name, fallback) => (process.env[name] === undefined || process.env[name] === "" ? fallback : process.env[name])
const num = (name, fallback) => Number(env(name, fallback))
const PARTS = new Set(env("BENCH_PARTS", "load,start,tool,cancel,memory,pool").split(","))
const DATE = env("BENCH_DATE", new Date().toISOString().slice(0, 10))
const LOAD_N = num("LOAD_N", 4)
const START_N = num("START_N", 40)
const START_QJS_N = num("START_QJS_N", 15)
const TOOL_RUNS = num("TOOL_RUNS", 4)
const TOOL_CALLS = num("TOOL_CALLS", 50)
const CANCEL_N = num("CANCEL_N", 30)
const MEM_K = num("MEM_K", 8)
const POOL_N = num("POOL_N", 10)
const MIB = 1024 * 1024

if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc (npm run bench:sandbox does)")
const log = (...args) => console.error(`[bench ${new Date().toISOString().slice(11, 19)} load ${os.loadavg()[0].toFixed(2)}]`, ...args)
/** Load averages (1, 5, 15 min) when each part started (this machine may be shared: see the doc). */
const loadAverages = {}
const uptime = () => {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim()
  } catch {
    return `load average: ${os.loadavg().map((x) => x.toFixed(2)).join(", ")}`
  }
}
const beginPart = (name) => {
  loadAverages[name] = os.loadavg().map((x) => round(x))
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

/** The GuestJob Sandbox.spawn would post to its worker (as `{ job }`, `rpc.port` transferred). */
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
/** Posts the job the way Sandbox.spawn does; returns the reply port (close it after terminate). */
const postJob = (worker, prepared) => {
  const { job, reply } = guestJob(prepared)
  worker.postMessage({ job }, [job.rpc.port])
  return reply
}
/** Same worker options as Sandbox.spawn (workerData only for the bench's own workers). */
const workerOptions = (workerData) => ({ workerData, env: {}, stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: 256 } })
const harnessUrl = new URL("./sandbox-worker.mjs", import.meta.url)
const guestWorkerUrl = pathToFileURL(join(root, "dist/sandbox/host/GuestWorker.js"))
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

/** GuestWorker's static import graph in dist/ (relative modules and packages): `effect` must be absent. */
const workerGraph = () => {
  const modules = new Set()
  const packages = new Set()
  const walk = (file) => {
    if (modules.has(file)) return
    modules.add(file)
    for (const m of readFileSync(file, "utf8").matchAll(/^(?:import|export) [^;]*? from "([^"]+)"/gm)) {
      if (m[1].startsWith(".")) walk(join(dirname(file), m[1]))
      else packages.add(m[1])
    }
  }
  walk(fileURLToPath(guestWorkerUrl))
  const list = [...packages]
  return { modules: [...modules].map((f) => f.slice(join(root, "dist").length + 1)), packages: list, effectFree: !list.some((p) => p === "effect" || p.startsWith("effect/") || p.startsWith("@effect/")) }
}

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
  targets: { toolCallP50Ms: 5, cancelP99Ms: 20, memoryCapSlackBytes: 65536 },
  uptime: { start: uptime() },
  guestWorkerGraph: workerGraph()
}
const summary = []
const say = (line) => {
  summary.push(line)
  console.log(line)
}
say(`uptime at start: ${results.uptime.start}  (${results.machine.cpus} CPUs; compare ratios, not absolutes)`)
say(`guest worker import graph: ${results.guestWorkerGraph.modules.length} modules, packages ${results.guestWorkerGraph.packages.join(", ")}; effect-free: ${results.guestWorkerGraph.effectFree}`)

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
  const ctor = now() - t0
  await nextMessage(worker)
  const ready = now() - t0
  await worker.terminate()
  return { total: now() - t0, ready, ctor }
}
/** A guest worker's boot and imports: harness spawn → "ready" (what a replacement needs before it helps). */
const guestWorkerReady = async () => {
  const t0 = now()
  const worker = spawnWorker(harnessUrl, workerOptions(undefined))
  await nextMessage(worker, "ready")
  const ms = now() - t0
  await worker.terminate()
  return ms
}
/** Its own Sandbox with one pre-started worker (the serve path); prepared scripts come from `runtime`. */
const prestartRuntime = (prestart = 1) => ManagedRuntime.make(Sandbox.layer({ prestart }))
/** Gap before each measured run: enough for a pre-started replacement to have loaded (set in part 2). */
let gapMs

const measureGap = async () => {
  const xs = []
  for (let i = 0; i < 6; i++) xs.push(await guestWorkerReady())
  xs.shift()
  gapMs = Math.max(150, Math.round(Math.max(...xs) * 1.5 + 50))
  return xs
}

if (PARTS.has("start")) {
  beginPart("2. run start: raw worker, fresh guest worker, pre-started guest worker")
  const part = {}
  part.guestWorkerSpawnToReady = stats(await measureGap())
  part.gapBeforeEachRunMs = gapMs
  const pre = prestartRuntime(1)
  const runPre = (prepared) => pre.runPromise(runScript(prepared, quietHost))
  for (let i = 0; i < 3; i++) {
    await rawWorkerRun()
    await runOnce(noop)
    await sleep(gapMs)
    await runPre(noop)
    await runOnce(quick0)
    await sleep(gapMs)
    await runPre(quick0)
  }
  const raw = []
  const rawReady = []
  const rawCtor = []
  const s = { freshNoop: [], preNoop: [], freshQuick: [], preQuick: [] }
  const idleSeen = []
  const timed = async (into, f) => {
    await sleep(gapMs)
    const t0 = now()
    await f()
    s[into].push(now() - t0)
  }
  const preTimed = async (into, prepared) => {
    idleSeen.push(await pre.runPromise(Effect.flatMap(Sandbox, (x) => x.idleWorkers())))
    await timed(into, () => runPre(prepared))
  }
  // Interleaved (order alternating), with the same gap before every run, so that drift (GC,
  // page cache, CPU frequency, other tenants) hits fresh and pre-started alike.
  for (let i = 0; i < START_N; i++) {
    await sleep(gapMs)
    const r = await rawWorkerRun()
    raw.push(r.total)
    rawReady.push(r.ready)
    rawCtor.push(r.ctor)
    const pair = [() => timed("freshNoop", () => runOnce(noop)), () => preTimed("preNoop", noop)]
    for (const f of i % 2 === 0 ? pair : pair.reverse()) await f()
    if (i % Math.max(1, Math.round(START_N / START_QJS_N)) !== 0) continue
    const pairQ = [() => timed("freshQuick", () => runOnce(quick0)), () => preTimed("preQuick", quick0)]
    for (const f of i % 2 === 0 ? pairQ : pairQ.reverse()) await f()
  }
  await pre.dispose()
  part.rawWorker = stats(raw)
  part.rawWorkerToFirstMessage = stats(rawReady)
  part.rawWorkerConstructorSync = stats(rawCtor)
  part.noopCapsule = stats(s.freshNoop)
  part.noopCapsulePrestarted = stats(s.preNoop)
  part.quickjsCapsule = stats(s.freshQuick)
  part.quickjsCapsulePrestarted = stats(s.preQuick)
  part.idleWorkersBeforePrestartedRuns = [...new Set(idleSeen)]
  part.prestartSavesMs = { noop: round(part.noopCapsule.p50 - part.noopCapsulePrestarted.p50), quickjs: round(part.quickjsCapsule.p50 - part.quickjsCapsulePrestarted.p50) }
  part.samples = { raw, rawReady, rawCtor, ...s }
  say(`start: guest worker spawn → imports loaded ("ready", harness): ${fmt(part.guestWorkerSpawnToReady)}; gap before each measured run ${gapMs} ms`)
  say(`start: raw new Worker → message → terminate: ${fmt(part.rawWorker)}  (the new Worker call itself, synchronous: p50 ${part.rawWorkerConstructorSync.p50} ms)`)
  say(`start: runScript capsule-noop (WAT), fresh worker (prestart 0): ${fmt(part.noopCapsule)}  = ${round(part.noopCapsule.p50 / part.rawWorker.p50, 1)}x raw`)
  say(`start: runScript capsule-noop, pre-started worker (Sandbox.layer({ prestart: 1 })): ${fmt(part.noopCapsulePrestarted)}  = ${round(part.noopCapsulePrestarted.p50 / part.rawWorker.p50, 1)}x raw; saves ${part.prestartSavesMs.noop} ms p50 (${round(part.noopCapsule.p50 / part.noopCapsulePrestarted.p50, 1)}x faster)`)
  say(`start: runScript capsule-invoke-loop CALLS=0 (QuickJS capsule + QuickJS tool loaded), fresh: ${fmt(part.quickjsCapsule)}  = ${round(part.quickjsCapsule.p50 / part.rawWorker.p50, 1)}x raw`)
  say(`start: same, pre-started: ${fmt(part.quickjsCapsulePrestarted)}; saves ${part.prestartSavesMs.quickjs} ms p50 (${round(part.quickjsCapsule.p50 / part.quickjsCapsulePrestarted.p50, 1)}x faster)`)
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
  const answer = await nextMessage(worker, "breakdown")
  const rows = answer.rows.slice(1)
  await worker.terminate()
  part.breakdown = Object.fromEntries(Object.keys(rows[0]).map((k) => [k, stats(rows.map((r) => r[k]))]))
  // Same-run baseline: the same steps with jco's ESM glue as emitted (WebAssembly.promising not redirected).
  const esmRows = answer.esmRows.slice(1)
  part.breakdownEsmGlue = Object.fromEntries(Object.keys(esmRows[0]).map((k) => [k, stats(esmRows.map((r) => r[k]))]))
  const reused = answer.reused.slice(1)
  if (reused.length > 0) part.whatIfReusedInstanceRun = stats(reused)
  if (answer.reuseError !== undefined) part.whatIfReusedInstanceError = answer.reuseError
  part.samples = { steady, firstCall, runsN, runs0, runsAllow, breakdown: rows, breakdownEsmGlue: esmRows, reused }
  say(`tool call (invoke echo-tool, in-guest monotonic clock, calls 2..${TOOL_CALLS} of ${TOOL_RUNS} runs): ${fmt(part.perCallInGuest)}  [target p50 ≤ 5 ms: ${part.perCallInGuest.p50 <= 5 ? "met" : "MISSED"}]`)
  say(`  first call of a run: ${fmt(part.firstCallOfRun)}`)
  const b = part.breakdown
  say(`  split (p50 ms): build WASI+murmur imports ${b.imports.p50} + instantiate ${b.instantiate.p50} (${b.instanceCount.p50} core instances ${b.coreInstances.p50}, jco glue ${b.glue.p50}) + run ${b.run.p50} = ${b.total.p50}`)
  const e = part.breakdownEsmGlue
  say(`  same steps, jco's ESM glue as emitted (baseline): instantiate ${e.instantiate.p50} (jco glue ${e.glue.p50}) + run ${e.run.p50} = ${e.total.p50} → glue script ${round(e.total.p50 / b.total.p50, 1)}x faster`)
  if (part.whatIfReusedInstanceRun !== undefined) say(`  what-if, one echo-tool instance reused (run called again, no instantiate): ${fmt(part.whatIfReusedInstanceRun)}`)
  if (part.whatIfReusedInstanceError !== undefined) say(`  what-if, one echo-tool instance reused: failed: ${part.whatIfReusedInstanceError}`)
  say(`  host view: run with ${TOOL_CALLS} calls p50 ${part.runWithCalls.p50} ms vs 0 calls p50 ${part.runWithoutCalls.p50} ms → ${part.meanPerCallFromHost} ms/call; capsule-allowlisted run p50 ${part.capsuleAllowlistedRun.p50} ms`)
  results.tool = part
}

/**
 * What-if (bench only): GuestWorker bundled into one file with esbuild (preview2-shim external),
 * built into .cache/bench/ at bench time: would fewer module loads shorten a fresh worker's start?
 */
const workerBundle = async () => {
  let esbuild
  try {
    esbuild = await import("esbuild") // vite's, present with vitest
  } catch {
    return undefined
  }
  const outfile = join(root, ".cache/bench/GuestWorker.bundle.mjs")
  await esbuild.build({
    entryPoints: [fileURLToPath(guestWorkerUrl)],
    bundle: true,
    format: "esm",
    platform: "node",
    external: ["@bytecodealliance/preview2-shim", "@bytecodealliance/preview2-shim/*"],
    logLevel: "error",
    outfile
  })
  return pathToFileURL(outfile)
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
    const worker = spawnWorker(harnessUrl, workerOptions(undefined))
    const reply = postJob(worker, spin)
    await nextMessage(worker, "timing")
    await sleep(100)
    const t0 = now()
    await worker.terminate()
    rawWasm.push(now() - t0)
    reply.close()
  }
  await sleep(200)
  part.interruptSpinningCapsule = stats(cancel)
  part.interruptSandboxRunDirect = stats(direct)
  part.rawTerminateSpinningWorker = stats(raw)
  part.rawTerminateWasmSpinningWorker = stats(rawWasm)
  part.exits = exits
  part.threadsBefore = threads0
  part.threadsAfter = threads()
  part.samples = { cancel, direct, raw, rawWasm }
  say(`cancel: Fiber.interrupt(runScript(capsule-spin-loop)) → worker terminated: ${fmt(part.interruptSpinningCapsule)}  [target p99 ≤ 20 ms: ${part.interruptSpinningCapsule.p99 <= 20 ? "met" : "MISSED"}]`)
  say(`  Fiber.interrupt(Sandbox.run) directly (no runScript log stream): ${fmt(part.interruptSandboxRunDirect)}`)
  say(`  raw worker.terminate(), guest spinning in wasm: ${fmt(part.rawTerminateWasmSpinningWorker)}; JS for(;;) worker: ${fmt(part.rawTerminateSpinningWorker)}`)
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
/** The real pool: Sandbox.layer({ prestart: MEM_K }), idle (each worker plus preview2-shim's helper thread). */
const prestartedIdle = async () => {
  const base = threads()
  const pool = prestartRuntime(MEM_K)
  const idle = await pool.runPromise(Effect.flatMap(Sandbox, (x) => x.idleWorkers()))
  if (idle !== MEM_K) throw new Error(`prestart ${MEM_K}: ${idle} idle workers`)
  const t0 = now()
  while (threads() < base + 2 * MEM_K && now() - t0 < 10_000) await sleep(20)
  return pool
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
  const worker = spawnWorker(harnessUrl, workerOptions(undefined))
  const reply = postJob(worker, prepared)
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
  part.prestartedIdleWorker = await residentCost(`idle pre-started guest worker (Sandbox.layer({ prestart: ${MEM_K} }), imports loaded, no guest)`, prestartedIdle, (pool) => pool.dispose(), 500)
  const spin = await prepare(capsuleDir("capsule-spin-loop"))
  part.spinLoopRun = await residentCost("Sandbox run of capsule-spin-loop (WAT, spinning)", sandboxRuns(spin), interruptAll, 1500)
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
    // GuestWorker's report: `memory: { used, refusedGrowthTo }`.
    const worker = { memoryBytes: end.memory?.used, refusedGrowthTo: end.memory?.refusedGrowthTo }
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
// 6. Where a run's start goes (fresh vs pre-started), back-to-back runs on one pre-started
//    worker, and a what-if bundle

if (PARTS.has("pool")) {
  beginPart("6. start split and pool")
  const part = {}
  if (gapMs === undefined) await measureGap()
  /** Harness worker, job posted at once after `new Worker` (as Sandbox.spawn does without a pool). */
  const freshSplit = async (prepared) => {
    const rows = []
    for (let i = 0; i < POOL_N + 2; i++) {
      await sleep(gapMs)
      const t0 = abs()
      const worker = spawnWorker(harnessUrl, workerOptions(undefined))
      const reply = postJob(worker, prepared)
      const timing = nextMessage(worker, "timing")
      const end = await nextMessage(worker, "end")
      const t = (await timing).t
      const tDone = abs()
      if (end.type !== "done") throw new Error(`harness run failed: ${end.message}`)
      await worker.terminate()
      reply.close()
      const tEnd = abs()
      if (t.js > tDone) throw new Error("harness stamped the component JS after done")
      if (i >= 2) rows.push({ boot: t.entry - t0, imports: t.ready - t.entry, componentJs: t.js - t.job, instantiateRun: tDone - t.js, toDone: tDone - t0, terminate: tEnd - tDone, total: tEnd - t0 })
    }
    return rows
  }
  /** Harness worker started ahead: "ready", then (after the gap) the job. */
  const preSplit = async (prepared) => {
    const rows = []
    for (let i = 0; i < POOL_N + 2; i++) {
      const worker = spawnWorker(harnessUrl, workerOptions(undefined))
      await nextMessage(worker, "ready")
      await sleep(gapMs)
      const t0 = abs()
      const reply = postJob(worker, prepared)
      const timing = nextMessage(worker, "timing")
      const end = await nextMessage(worker, "end")
      const t = (await timing).t
      const tDone = abs()
      if (end.type !== "done") throw new Error(`pre-started harness run failed: ${end.message}`)
      await worker.terminate()
      reply.close()
      if (i >= 2) rows.push({ deliver: t.job - t0, componentJs: t.js - t.job, instantiateRun: tDone - t.js, toDone: tDone - t0, terminate: abs() - tDone })
    }
    return rows
  }
  /** spawn `url` → post job → done → terminate (no harness: the plain worker vs the what-if bundle). */
  const plainRun = async (url, prepared) => {
    const t0 = now()
    const worker = spawnWorker(url, workerOptions(undefined))
    const reply = postJob(worker, prepared)
    const end = await nextMessage(worker, "end")
    if (end.type !== "done") throw new Error(`run failed: ${end.message}`)
    await worker.terminate()
    reply.close()
    return now() - t0
  }
  const bundle = await workerBundle()
  const column = (rows, key) => stats(rows.map((r) => r[key]))
  const table = (rows) => Object.fromEntries(Object.keys(rows[0]).map((k) => [k, column(rows, k)]))
  for (const [name, prepared] of [["capsule-noop", noop], ["capsule-invoke-loop CALLS=0", quick0]]) {
    const fresh = table(await freshSplit(prepared))
    const pre = table(await preSplit(prepared))
    const plain = []
    const bundled = []
    for (let i = 0; bundle !== undefined && i < POOL_N + 2; i++) {
      await sleep(gapMs)
      const a = await plainRun(guestWorkerUrl, prepared)
      await sleep(gapMs)
      const b = await plainRun(bundle, prepared)
      if (i >= 2) plain.push(a), bundled.push(b)
    }
    part[name] = { fresh, prestarted: pre }
    if (bundle !== undefined) part[name].whatIfBundle = { distGuestWorker: stats(plain), bundledGuestWorker: stats(bundled), samples: { plain, bundled } }
    say(`split ${name}, fresh worker (p50 ms): boot ${fresh.boot.p50} + GuestWorker's imports ${fresh.imports.p50} + component JS ${fresh.componentJs.p50} + instantiate&run ${fresh.instantiateRun.p50} = ${fresh.toDone.p50} to done (+ terminate ${fresh.terminate.p50})`)
    say(`  pre-started worker (p50 ms): job delivered ${pre.deliver.p50} + component JS ${pre.componentJs.p50} + instantiate&run ${pre.instantiateRun.p50} = ${pre.toDone.p50} to done (+ terminate ${pre.terminate.p50})`)
    if (bundle !== undefined) say(`  what-if, GuestWorker bundled into one file (esbuild): spawn → done → terminate ${fmt(part[name].whatIfBundle.bundledGuestWorker)} vs dist GuestWorker.js ${fmt(part[name].whatIfBundle.distGuestWorker)}`)
  }
  // Runs arriving faster than the pool refills: back to back on Sandbox.layer({ prestart: 1 }).
  const pre = prestartRuntime(1)
  await sleep(gapMs)
  await pre.runPromise(runScript(noop, quietHost))
  const backToBack = []
  for (let round_ = 0; round_ < 2; round_++) {
    await sleep(gapMs)
    for (let i = 0; i < POOL_N; i++) {
      const t0 = now()
      await pre.runPromise(runScript(noop, quietHost))
      backToBack.push({ position: i, ms: now() - t0 })
    }
  }
  await pre.dispose()
  const firstOfBurst = backToBack.filter((r) => r.position === 0).map((r) => r.ms)
  const rest = backToBack.filter((r) => r.position > 0).map((r) => r.ms)
  part.backToBack = { firstOfBurst: stats(firstOfBurst), following: stats(rest), samples: backToBack }
  say(`back to back on prestart 1, capsule-noop: first of a burst ${fmt(part.backToBack.firstOfBurst)}; following runs (their worker still booting) ${fmt(part.backToBack.following)}`)
  results.pool = part
}

await runtime.dispose()
rmSync(scratch, { recursive: true, force: true })
results.loadAverages = { note: "1, 5, 15 min at the start of each part", ...loadAverages, end: os.loadavg().map((x) => round(x)) }
results.uptime.end = uptime()
say(`uptime at end: ${results.uptime.end}`)
results.summary = summary
mkdirSync(join(here, "results"), { recursive: true })
const out = join(here, "results", `sandbox-${DATE}.json`)
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
log(`wrote ${out}`)
