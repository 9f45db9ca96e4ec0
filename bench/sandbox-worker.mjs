// Harness worker for `bench/sandbox.mjs` (bench only): runs dist/sandbox/worker/GuestWorker.js
// exactly as the Sandbox does, with timestamps around the phases, in two modes:
// - cold (workerData is the GuestJob): entry → import GuestWorker's dependencies (preview2-shim,
//   host imports) → import the component JS → GuestWorker instantiates and runs;
// - pool (workerData.pool): the dependencies are imported, "ready" is posted, and the job arrives
//   later by postMessage (what a pre-started idle worker would do). GuestWorker reads `workerData`
//   at load, so the job is put there (builtin exports re-synced) before it is imported.
// - breakdown (workerData.breakdown): times the parts of one nested tool call as GuestWorker's
//   runTool does them (imports built, instantiate, run), `calls` times, and posts the samples.
// Timestamps are performance.timeOrigin + performance.now(), comparable across threads.
import { readFileSync } from "node:fs"
import { createRequire, syncBuiltinESMExports } from "node:module"
import { parentPort, workerData } from "node:worker_threads"

const now = () => performance.timeOrigin + performance.now()
const t = { entry: now() }
const dist = new URL("../dist/sandbox/worker/", import.meta.url)
// GuestWorker's own static imports, read from its source so the list cannot drift.
const guestWorker = new URL("GuestWorker.js", dist)
const deps = [...readFileSync(guestWorker, "utf8").matchAll(/^import [^;]*? from "(\.{1,2}\/[^"]+)"/gm)].map((m) => new URL(m[1], guestWorker).href)
await Promise.all(deps.map((d) => import(d)))
const murmur = await import(new URL("MurmurImports.js", dist).href)
const wasi = await import(new URL("WasiImports.js", dist).href)
t.deps = now()

/** One nested call split like GuestWorker's runTool: build imports, instantiate, run. */
const breakdown = async ({ guest, grant, calls }) => {
  const glue = await import(guest.jsUrl)
  const job = { inTask: false }
  const channel = { post: () => {}, call: () => undefined }
  const sinks = { stdout: () => {}, stderr: () => {} }
  const rows = []
  for (let i = 0; i < calls; i++) {
    let core = 0
    const instantiateCore = (module, imports) => {
      const c0 = performance.now()
      const instance = new WebAssembly.Instance(module, imports)
      core += performance.now() - c0
      return instance
    }
    const t0 = performance.now()
    const imports = { ...wasi.wasiImports(grant, sinks), ...murmur.toolMurmurImports(job, channel) }
    const t1 = performance.now()
    const root = glue.instantiate((name) => guest.modules[name], imports, instantiateCore)
    const t2 = performance.now()
    const result = root["murmur:tool/run@0.1.0"].run({ data: "x" + i, logPath: undefined })
    const t3 = performance.now()
    if (result.data !== "x" + i) throw new Error("echo-tool answered " + JSON.stringify(result))
    rows.push({ imports: t1 - t0, instantiate: t2 - t1, coreInstances: core, glue: t2 - t1 - core, run: t3 - t2, total: t3 - t0 })
  }
  parentPort.postMessage({ type: "breakdown", rows })
}

const start = async (job) => {
  t.job = now()
  await import(job.guest.jsUrl)
  for (const tool of Object.values(job.tools)) await import(tool.guest.jsUrl)
  t.js = now()
  parentPort.postMessage({ type: "timing", t })
  createRequire(import.meta.url)("node:worker_threads").workerData = job
  syncBuiltinESMExports()
  await import(guestWorker.href)
}

if (workerData?.breakdown !== undefined) {
  void breakdown(workerData.breakdown)
} else if (workerData?.pool === true) {
  parentPort.once("message", (job) => void start(job))
  parentPort.postMessage({ type: "ready", t })
} else {
  void start(workerData)
}
