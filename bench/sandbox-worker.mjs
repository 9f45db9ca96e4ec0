// Harness worker for `bench/sandbox.mjs` (bench only): runs dist/sandbox/host/GuestWorker.js
// exactly as the Sandbox does — GuestWorker loads its imports, then waits for one `{ job }`
// message on parentPort (the GuestJob, `rpc.port` transferred) — with timestamps around the
// phases. The main thread sends the job as Sandbox.spawn does: at once after `new Worker` (a
// fresh worker) or later, after "ready" (a pre-started one).
// - guest mode (default): entry → GuestWorker's dependencies imported (preview2-shim, host
//   imports) → "ready" → job received → component JS imported → GuestWorker instantiates and
//   runs → GuestWorker posts done/failed. The harness posts { type: "ready", t } and, once the
//   component JS is in, { type: "timing", t }.
// - breakdown (workerData.breakdown): times the parts of one nested tool call as GuestWorker's
//   runTool does them (imports built, instantiate, run), `calls` times, and posts the samples:
//   with the glue script workers load (GlueScript.ts: `WebAssembly.promising` redirected) and,
//   as the same-run baseline, with jco's ESM glue as emitted (what workers ran before).
// Timestamps are performance.timeOrigin + performance.now(), comparable across threads.
import { readFileSync } from "node:fs"
import { Script } from "node:vm"
import { parentPort, workerData } from "node:worker_threads"

const now = () => performance.timeOrigin + performance.now()
const t = { entry: now() }
const dist = new URL("../dist/sandbox/host/", import.meta.url)
// GuestWorker's own static imports, read from its source so the list cannot drift.
const guestWorker = new URL("GuestWorker.js", dist)
const deps = [...readFileSync(guestWorker, "utf8").matchAll(/^import [^;]*? from "(\.{1,2}\/[^"]+)"/gm)].map((m) => new URL(m[1], guestWorker).href)
await Promise.all(deps.map((d) => import(d)))
const murmur = await import(new URL("MurmurImports.js", dist).href)
const wasi = await import(new URL("WasiImports.js", dist).href)
t.deps = now()

/** One nested call split like GuestWorker's runTool: build imports, instantiate, run; `calls` times. */
const split = (glue, { guest, grant, calls, job, channel, sinks }) => {
  const rows = []
  for (let i = 0; i < calls; i++) {
    let core = 0
    let instances = 0
    const instantiateCore = (module, imports) => {
      const c0 = performance.now()
      const instance = new WebAssembly.Instance(module, imports)
      core += performance.now() - c0
      instances++
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
    rows.push({ imports: t1 - t0, instantiate: t2 - t1, coreInstances: core, glue: t2 - t1 - core, run: t3 - t2, total: t3 - t0, instanceCount: instances })
  }
  return rows
}

const breakdown = async ({ guest, grant, calls }) => {
  // The glue script GuestWorker loads, and (same-run baseline) jco's ESM glue as emitted.
  const script = new Script(readFileSync(guest.scriptPath, "utf8"), { filename: guest.scriptPath }).runInThisContext()()
  const esm = await import(guest.jsUrl)
  const job = { inTask: false }
  const channel = { post: () => {}, call: () => undefined }
  const sinks = { stdout: () => {}, stderr: () => {} }
  const rows = split(script, { guest, grant, calls, job, channel, sinks })
  const esmRows = split(esm, { guest, grant, calls, job, channel, sinks })
  // What-if (not what GuestWorker does: it instantiates per call): one instance, `run` called again.
  const reused = []
  let reuseError
  try {
    const root = script.instantiate((name) => guest.modules[name], { ...wasi.wasiImports(grant, sinks), ...murmur.toolMurmurImports(job, channel) })
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now()
      const result = root["murmur:tool/run@0.1.0"].run({ data: "y" + i, logPath: undefined })
      reused.push(performance.now() - t0)
      if (result.data !== "y" + i) throw new Error("echo-tool answered " + JSON.stringify(result))
    }
  } catch (error) {
    reuseError = String(error?.message ?? error)
  }
  parentPort.postMessage({ type: "breakdown", rows, esmRows, reused, reuseError })
}

/**
 * Guest mode. GuestWorker is imported (not awaited: its evaluation waits for the job); the
 * harness wraps `parentPort.once` first, so that GuestWorker's job listener is stamped when it
 * is registered ("ready") and, on the job, stamps its arrival and imports the same component JS
 * just before GuestWorker does (one module record, so no extra work) to stamp when it is in.
 */
const guest = () => {
  const once = parentPort.once.bind(parentPort)
  parentPort.once = (type, listener) => {
    if (type !== "message") return once(type, listener)
    const result = once(type, (message) => {
      t.job = now()
      void (async () => {
        await import(message.job.guest.jsUrl)
        for (const tool of Object.values(message.job.tools)) await import(tool.guest.jsUrl)
        t.js = now()
        parentPort.postMessage({ type: "timing", t })
      })()
      listener(message)
    })
    t.ready = now()
    parentPort.postMessage({ type: "ready", t })
    return result
  }
  void import(guestWorker.href)
}

if (workerData?.breakdown !== undefined) void breakdown(workerData.breakdown)
else void guest()
