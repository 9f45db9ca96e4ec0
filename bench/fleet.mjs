// `npm run bench:fleet`: fleet mode (`serve --cluster <postgres> --runner-address …`), real runner
// processes of dist/main.js (built first by the npm script; the runners start from a copy of it, so a
// rebuild meanwhile cannot break them) over the local PostgreSQL: a database created for the run,
// a fresh schema in it per runner set (why a database: see "PostgreSQL" below). Two parts (FLEET_PARTS=density,scaling, default both):
//
// density — one runner serving `--sessions N` of examples/hello (copied to a temp tree by
//   bench/fleet-fixtures.mjs, so the sessions' workdirs stay out of the repository), per N in
//   FLEET_NS (default 1,100,1000). The runner's RSS (/proc/<pid>/status VmRSS, median of
//   FLEET_RSS_SAMPLES samples FLEET_RSS_GAP_MS apart after FLEET_SETTLE_MS) (a) at its listening
//   line, no session built ("empty runner"); (b) after every session is activated by a
//   `tasks/get` of an unknown task (which builds the session: the gateway asks the owner for its
//   card first), checked in `GET /fleet/placement` (`sessions_here` = N): (b − a)/N per idle
//   session; (c) while one hello task runs in each of min(N, FLEET_TASK_SESSIONS) sessions
//   (non-blocking message/send, RSS sampled every 100 ms until all end): peak and median, and
//   (peak − b)/k per running task; then (d) once they ended, to see it come back. The RSS of the
//   runner's whole process tree (shell children included) is recorded beside it.
//   Activation latency — on a runner of its own with `--sessions FLEET_ACT_SESSIONS` (default
//   100), after one warm-up activation (its task run to the end, so the components are compiled
//   and loaded): FLEET_ACTIVATIONS (default 60) first `message/send`s (non-blocking) to sessions
//   not yet built, one at a time, each timed to its HTTP answer and its task awaited before the
//   next, FLEET_ACTIVATION_GAP_MS (500) after it ended (the runner's warm pool refills a worker
//   once a task took one, ~30 ms of main-thread CPU that a back-to-back activation would share); baseline in the same run: a `message/send` to the warm session (built already), one
//   after every third activation. Targets: 1000 idle sessions < 1 GiB RSS above the empty
//   runner; activation p50 < 50 ms.
//
// scaling — tasks bound by waiting, one runner vs three in the same run: the ticking capsule
//   (bench/fleet-fixtures.mjs: a task is <ticks> sandboxed `sleep <tickMs>`s between two driver
//   turns), `--sessions FLEET_SCALING_SESSIONS`, every runner `--runner-capacity FLEET_CAPACITY`
//   (default 8 closed, 4 batch). Sessions are placed by a hash of their id over shards, so the split (sessions per
//   runner, from GET /fleet/placement) is uneven, and an agent session runs one task at a time.
//   Each runner set, before either method: wait until every runner is in the placement view and
//   healthy, activate every session, sample the runners' idle CPU for 5 s, one warm-up task in up
//   to FLEET_CAPACITY sessions per runner, one task alone (the task-length unit). A task's latency
//   is from just before its submit (a non-blocking message/send) to its final status's `timestamp`
//   (the server's clock, the same machine), seen by polling `tasks/get` through the owner's door;
//   CPU of the runners (with their reaped children) and of PostgreSQL, and the machine's busy
//   share, over the measured span. Targets: three/one tasks/s ≥ 2.4; p99 < 2 × median latency
//   (three runners). Two methods, FLEET_SCALING_MODE:
//
//   closed (default) — a closed loop at a fixed offered load, measured in steady state: the usual
//     definition of a fleet's throughput. FLEET_CLIENTS clients (default 2 × 3 runners × capacity
//     = 24, the same for one runner and for three, so both sets get the same offered load: at
//     least every slot busy). Each client loops: the next task number n from a shared counter,
//     session n mod S (round-robin, so each runner gets tasks in proportion to the sessions it
//     holds), submitted through door n mod R, awaited by tasks/get through the owner's door (from
//     0.9 task-length after the submit, every max(FLEET_CLOSED_POLL_MS 200, 5% of the wait) up to
//     2 s: the latency is the server's timestamp, so polling only delays the client's next submit;
//     24 clients polling every 200 ms cost one runner ~0.2 s of CPU a task), then the next. Ramp, FLEET_RAMP_MS:
//     `burst` (default): until every client's first task has ended, and at least one task-length;
//     `task`: one task-length (that set's task alone); or ms. Not one task-length by default: the
//     clients' first tasks all arrive at once, spread by the split, and queue everywhere; in steady
//     state the clients gather in the queue of the runner holding the most sessions, while the
//     others run their share at once. Until the first burst has drained, the other runners are
//     still saturated too, so a window opened after one task-length counted that backlog (a 20 s
//     trial with split 6/11/7: 2.7 where the split allows 2.18; in another, 26 tasks in the window
//     where the burst ramp's window, same run, had 22). Tasks submitted in the ramp are
//     left out; then a window of FLEET_WINDOW_MS (120000): tasks/s = tasks completed inside the
//     window / its seconds (beside it a fractional count, each completed task weighted by the
//     share of its submit → end inside the window: Little's law, in steady state it smooths the
//     waves of tasks that started together and end together at an edge: one runner's four slots
//     stay in step, within 1-2 s, so a window holds 7 or 8 such waves of 4 in 60 s, ±7%, and 2 or
//     3 in 20 s); latency over the tasks
//     submitted inside the window (all awaited, so a slow one is not cut off by the window's end);
//     runner CPU per task over the window's completions. At the window's end the clients stop
//     issuing and the tasks in flight are awaited (all must end completed; the states are
//     reported; every task's submit, latency and runner is in the JSON, taskLog).
//     Variants FLEET_SCALING_VARIANTS `<ticks>x<tickMs>` (default `1x20000`: ~0.77 s of runner
//     CPU a task, so 24 in flight over ~20 s keep three runners at about one of the 2 vCPUs —
//     waiting, not CPU, bounds it; the ticking capsule's shell_grace_secs is past the tick, so a
//     20 s sleep stays in the foreground); FLEET_SCALING_SESSIONS default 300, so the hash split
//     is even enough (99/96/105 in one run; 60 gave 6/11/7-like splits at 24).
//     The split still bounds three/one: tasks reach a runner in proportion to its sessions, so the
//     fleet completes at most capacity / (task-length × the largest share) a second, i.e. three/one
//     ≤ S / (the largest runner's sessions) (≤ 3); printed beside the ratio. And since only the
//     largest runner queues, its tasks wait longer than the others': with an uneven split the
//     three-runner p99/median shows that imbalance (per-runner latency p50 is printed).
//   batch (FLEET_SCALING_MODE=batch) — one batch, makespan: variants `<ticks>x<tickMs>:<tasks>`
//     (default `10x100:96,1x4000:48`: 10 × 100 ms is the brief's task, ~1.6 s, but on this 2-vCPU
//     machine it costs ~0.7 s of runner CPU, so one runner at capacity 4 already fills both CPUs;
//     1 × 4000 ms is ~4.4 s of waiting for about the same fixed CPU, so three runners still fit),
//     FLEET_SCALING_SESSIONS default 12. `tasks` non-blocking message/sends, task j to session
//     j mod S through door j mod R (8 in flight), polled every FLEET_POLL_MS until all ended;
//     tasks/s is `tasks` over first submit → last completion. That makespan is the last runner's:
//     a runner needs at least max(its tasks / capacity, tasks per session) task-lengths, a bound
//     printed beside the ratio. If the split leaves no room for 2.4 (its bound < 2.4 ×
//     FLEET_ESCALATE_MARGIN, 1.1) and the three runners did not fill the CPUs (<
//     FLEET_CPU_BOUND_SHARE, 0.85), the variant runs again with FLEET_SCALING_ESCALATE sessions
//     (default 48; empty: never) and at least two tasks a session. All tasks are submitted at once,
//     so a task's latency includes its wait in the queue: with equal tasks the latencies spread
//     evenly from one task-length to the whole batch, so p99/median is ≈ 2 by construction and
//     says little. Hence closed is the default: it measures the fleet's steady rate at a fixed
//     offered load rather than the tail of the runner that drew the most sessions.
//
// Prints a table per part; writes bench/results/fleet-<date>-<part>.json (FLEET_OUT_DIR,
// FLEET_DATE to override). Knobs (environment): FLEET_PARTS FLEET_NS FLEET_TASK_SESSIONS
// FLEET_NODE_ARGS (node flags for the runners) FLEET_ACT_SESSIONS FLEET_ACTIVATIONS FLEET_ACTIVATE_CONCURRENCY (2) FLEET_SETTLE_MS (3000)
// FLEET_RSS_SAMPLES (5) FLEET_RSS_GAP_MS (300) FLEET_SCALING_MODE (closed|batch) FLEET_SCALING_SESSIONS FLEET_SCALING_ESCALATE
// FLEET_CAPACITY FLEET_SCALING_VARIANTS (or FLEET_TICKS FLEET_TICK_MS FLEET_TASKS: one variant) FLEET_POLL_MS (50)
// FLEET_CLIENTS FLEET_RAMP_MS FLEET_WINDOW_MS FLEET_CLOSED_POLL_MS (closed loop)
// FLEET_CPU_BOUND_SHARE FLEET_ESCALATE_MARGIN (1.1) FLEET_KEEP_SCHEMAS=1 FLEET_OUT_SUFFIX (fleet-<date>-<part>-<suffix>.json)
// FLEET_RSS_CAP_MIB (12288) FLEET_MEM_FLOOR_MIB (3072): density's activation stops early (and says so) past
// either, so a runner that grows without bound cannot take the shared machine down with it.
// CAPSULE_RUNTIME_TEST_PG (default postgres://postgres@127.0.0.1:5432/test): the server; the run creates a database
// of its own there and a schema per runner set in it (FLEET_PG_ISOLATION=schema: schemas of that database itself).
// FLEET_SNAPSHOT=0: runners start from dist/ itself rather than a copy taken at the start.
// Runners get PATH, HOME, a temporary MURMUR_HOME and the CLI component cache (.cache/cli-components),
// never MURMUR_STORE (a runner's store is the cluster's); every runner started is killed on exit.
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { makeBenchTree, makeTickingDir, snapshotDist } from "./fleet-fixtures.mjs"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const SNAPSHOT = (process.env.FLEET_SNAPSHOT ?? "1") !== "0"
const distSnapshot = SNAPSHOT ? snapshotDist() : undefined
const main = distSnapshot?.main ?? join(root, "dist", "main.js")
const cliCacheDir = join(root, ".cache", "cli-components")

const env = (name, fallback) => (process.env[name] === undefined || process.env[name] === "" ? fallback : process.env[name])
const num = (name, fallback) => Number(env(name, fallback))
const list = (name, fallback) => env(name, fallback).split(",").map((x) => x.trim()).filter(Boolean)

const PARTS = new Set(list("FLEET_PARTS", "density,scaling"))
for (const part of PARTS) if (!["density", "scaling"].includes(part)) throw new Error(`FLEET_PARTS: unknown part ${part}`)
const NS = list("FLEET_NS", "1,100,1000").map(Number)
const TASK_SESSIONS = num("FLEET_TASK_SESSIONS", 20)
const ACT_SESSIONS = num("FLEET_ACT_SESSIONS", 100)
/** Activation: the pause after one task ends before the next session is woken (and before each baseline send). */
const ACTIVATION_GAP_MS = num("FLEET_ACTIVATION_GAP_MS", 500)
/** Node flags for every runner (`--cpu-prof --cpu-prof-dir=…` to profile one); none by default. */
const NODE_ARGS = (process.env.FLEET_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
const ACTIVATIONS = num("FLEET_ACTIVATIONS", 60)
const ACTIVATE_CONCURRENCY = num("FLEET_ACTIVATE_CONCURRENCY", 2)
const SETTLE_MS = num("FLEET_SETTLE_MS", 3000)
const RSS_SAMPLES = num("FLEET_RSS_SAMPLES", 5)
const RSS_GAP_MS = num("FLEET_RSS_GAP_MS", 300)
/** The scaling method: `closed` (a closed loop at a fixed offered load, steady state) or `batch` (one batch, makespan). */
const SCALING_MODE = env("FLEET_SCALING_MODE", "closed")
if (!["closed", "batch"].includes(SCALING_MODE)) throw new Error(`FLEET_SCALING_MODE: '${SCALING_MODE}' is neither closed nor batch`)
// Closed loop: 300 sessions, so the hash of their ids splits them evenly enough over three runners (99/96/105 in one run).
const SCALING_SESSIONS = num("FLEET_SCALING_SESSIONS", SCALING_MODE === "batch" ? 12 : 300)
/** Empty (set but empty) means never: unlike the other knobs, an empty value is not the default here. */
const SCALING_ESCALATE = process.env.FLEET_SCALING_ESCALATE ?? "48"
// Closed loop: 8 slots a runner and 20 s tasks: 24 in flight cost the runners ~1 CPU of the 2 (0.77 s of CPU a task).
const CAPACITY = num("FLEET_CAPACITY", SCALING_MODE === "batch" ? 4 : 8)
/**
 * Scaling variants, `<ticks>x<tickMs>:<tasks>` each (batch; the closed loop takes `<ticks>x<tickMs>`
 * and ignores a `:<tasks>`); FLEET_TICKS / FLEET_TICK_MS / FLEET_TASKS, when set, make one.
 */
const VARIANTS = (process.env.FLEET_TICKS || process.env.FLEET_TICK_MS || process.env.FLEET_TASKS
  ? [`${num("FLEET_TICKS", SCALING_MODE === "batch" ? 10 : 1)}x${num("FLEET_TICK_MS", SCALING_MODE === "batch" ? 100 : 20000)}:${num("FLEET_TASKS", 96)}`]
  : list("FLEET_SCALING_VARIANTS", SCALING_MODE === "batch" ? "10x100:96,1x4000:48" : "1x20000")
).map((spec) => {
  const match = /^(\d+)x(\d+)(?::(\d+))?$/.exec(spec)
  if (match === null || (SCALING_MODE === "batch" && match[3] === undefined)) throw new Error(`FLEET_SCALING_VARIANTS: '${spec}' is not <ticks>x<tickMs>${SCALING_MODE === "batch" ? ":<tasks>" : "[:<tasks>]"}`)
  return { name: `${match[1]}x${match[2]}`, ticks: Number(match[1]), tickMs: Number(match[2]), tasks: match[3] === undefined ? undefined : Number(match[3]) }
})
/** Closed loop: the clients, the same for one runner and for three (so the offered load is the same): twice the three runners' slots. */
const CLIENTS = num("FLEET_CLIENTS", 2 * 3 * CAPACITY)
/**
 * Closed loop: tasks submitted within this long of the clients' start are left out. `burst`
 * (default): until every client's first task has ended (the initial burst queued and drained) and
 * at least one task-length; `task`: one task-length (the set's task alone); or a number of ms.
 */
const RAMP = env("FLEET_RAMP_MS", "burst")
if (!["burst", "task"].includes(RAMP) && !(Number(RAMP) >= 0)) throw new Error(`FLEET_RAMP_MS: '${RAMP}' is neither burst, task nor a number of ms`)
/** Closed loop: the measured window after the ramp. */
const WINDOW_MS = num("FLEET_WINDOW_MS", 120_000)
/**
 * Closed loop: a client polls its task from 0.9 task-length after the submit, every
 * max(FLEET_CLOSED_POLL_MS, 5% of the time waited) up to 2 s: the latency is the status's
 * timestamp, so the poll only delays the client's next submit, and 24 clients polling every
 * 200 ms for a minute-long queue cost the runners (and this process) more CPU than the tasks.
 */
const CLOSED_POLL_MS = num("FLEET_CLOSED_POLL_MS", 200)
const closedPollMs = (waitedMs) => Math.min(2000, Math.max(CLOSED_POLL_MS, waitedMs / 20))
/** A three-runner set busier than this (the machine's CPU share) was bound by CPU, not by the split: more sessions would not help. */
const CPU_BOUND_SHARE = num("FLEET_CPU_BOUND_SHARE", 0.85)
/** A split whose bound is below target × this leaves no room for any overhead: escalate then too. */
const ESCALATE_MARGIN = num("FLEET_ESCALATE_MARGIN", 1.1)
const OUT_SUFFIX = env("FLEET_OUT_SUFFIX", "")
const POLL_MS = num("FLEET_POLL_MS", 50)
/** Keep the run's database (or schemas) for a look afterwards. */
const KEEP_SCHEMAS = env("FLEET_KEEP_SCHEMAS", "") === "1"
/** Guard: activation stops (and the figures say so) once the runner passes this RSS or the machine's MemAvailable drops below the floor. */
const RSS_CAP_MIB = num("FLEET_RSS_CAP_MIB", 12_288)
const MEM_FLOOR_MIB = num("FLEET_MEM_FLOOR_MIB", 3_072)
const PG_BASE = env("CAPSULE_RUNTIME_TEST_PG", "postgres://postgres@127.0.0.1:5432/test")
const DATE = env("FLEET_DATE", new Date().toISOString().slice(0, 10))
const OUT_DIR = env("FLEET_OUT_DIR", join(root, "bench", "results"))

/** Targets of the brief (issue: fleet mode). */
const TARGETS = { idle1000Bytes: 1024 ** 3, activationP50Ms: 50, scalingRatio: 2.4, p99OverMedian: 2 }

const t0 = Date.now()
const log = (...args) => console.error(`[fleet ${new Date().toISOString().slice(11, 19)} +${((Date.now() - t0) / 1000).toFixed(0)}s]`, ...args)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (x, digits = 2) => (x === undefined || x === null || Number.isNaN(x) ? x : Math.round(x * 10 ** digits) / 10 ** digits)
const mib = (bytes) => round(bytes / 1024 ** 2, 1)
const kib = (bytes) => round(bytes / 1024, 1)
const load1 = () => round(os.loadavg()[0])
const pass = (ok) => (ok ? "PASS" : "MISS")

/** Nearest-rank percentile. */
const pct = (xs, q) => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]
}
const median = (xs) => pct(xs, 0.5)
const stats = (xs) => ({ n: xs.length, min: round(Math.min(...xs)), p50: round(pct(xs, 0.5)), p95: round(pct(xs, 0.95)), p99: round(pct(xs, 0.99)), max: round(Math.max(...xs)) })

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a fresh database for the run, a fresh schema in it per runner set.
//
// Why a database and not only a schema: @effect/cluster's shard locks are PostgreSQL advisory
// locks numbered 1000000 + shard (SqlRunnerStorage), and advisory locks are per database, not per
// schema. A fleet in another schema of the same database (a test's, another bench's) holds the
// same 300 lock numbers, so a runner here could not take the shards it holds (its sessions wait
// for them), and the other fleet could not take ours. FLEET_PG_ISOLATION=schema uses schemas of
// CAPSULE_RUNTIME_TEST_PG's database instead (as test/lib/Postgres.ts does).

const ISOLATION = env("FLEET_PG_ISOLATION", "database")
let clusterBase = PG_BASE
let benchDatabase
const schemas = []
const sqlOnce = async (statement, base = PG_BASE) => {
  const client = new pg.Client({ connectionString: base, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await client.query(statement)
  } finally {
    await client.end()
  }
}
const freshSchemaUrl = async (label) => {
  const schema = `fleet_bench_${process.pid}_${Date.now()}_${schemas.length + 1}_${label}`.replace(/[^a-z0-9_]/g, "_")
  await sqlOnce(`CREATE SCHEMA ${schema}`, clusterBase)
  schemas.push(schema)
  const url = new URL(clusterBase)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return url.toString()
}
const prepareDatabase = async () => {
  if (ISOLATION !== "database") return
  const name = `fleet_bench_${process.pid}_${Date.now()}`
  try {
    await sqlOnce(`CREATE DATABASE ${name}`)
  } catch (error) {
    log(`could not create a database (${error.message}): schemas of ${PG_BASE} instead, where another fleet would contend for the same shard locks`)
    return
  }
  benchDatabase = name
  const url = new URL(PG_BASE)
  url.pathname = `/${name}`
  clusterBase = url.toString()
}
const dropSchemas = async () => {
  if (KEEP_SCHEMAS) return
  if (benchDatabase !== undefined) {
    await sqlOnce(`DROP DATABASE IF EXISTS ${benchDatabase} WITH (FORCE)`).catch((error) => log(`could not drop database ${benchDatabase}: ${error.message}`))
    return
  }
  for (const schema of schemas.splice(0)) await sqlOnce(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch((error) => log(`could not drop ${schema}: ${error.message}`))
}

// ---------------------------------------------------------------------------------------------
// Runners (the contract of test/lib/Fleet.ts: one JSON listening line on stdout with --json)

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = server.address().port
      server.close(() => resolve(port))
    })
  })

const children = new Set()
const killAll = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
}
process.on("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

/** Lines of a runner's stderr worth reporting: Effect's logger at WARN and above, and anything unstructured. */
const noteworthy = (line) => /level=(WARN|WARNING|ERROR|FATAL)/i.test(line) || (!/level=(INFO|DEBUG|TRACE)/i.test(line) && line.trim().length > 0)

const startRunner = async ({ label, cluster, dirs, sessions, capacity, readyTimeoutMs = 180_000 }) => {
  const runnerAddress = `127.0.0.1:${await freePort()}`
  const home = mkdtempSync(join(os.tmpdir(), "bench-fleet-home-"))
  const args = [
    main, "serve", "--json", "--port", "0", "--cluster", cluster, "--runner-address", runnerAddress,
    ...(sessions === undefined ? [] : ["--sessions", String(sessions)]),
    ...(capacity === undefined ? [] : ["--runner-capacity", String(capacity)]),
    ...dirs
  ]
  const started = Date.now()
  const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", MURMUR_HOME: home, CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.add(child)
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  const alive = () => child.exitCode === null && child.signalCode === null
  let tail = ""
  let partial = ""
  const notes = []
  let noteCount = 0
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (chunk) => {
    tail = (tail + chunk).slice(-64 * 1024)
    partial += chunk
    const lines = partial.split("\n")
    partial = lines.pop()
    for (const line of lines) {
      if (!noteworthy(line)) continue
      noteCount++
      if (notes.length < 40) notes.push(line.slice(0, 600))
    }
  })
  const listening = await new Promise((resolve, reject) => {
    let out = ""
    let ready = false
    const fail = (why) => {
      clearTimeout(timer)
      if (alive()) child.kill("SIGKILL")
      reject(new Error(`runner ${label} ${runnerAddress} ${why}\nargs: ${args.slice(1).join(" ")}\nstderr:\n${tail}`))
    }
    const timer = setTimeout(() => fail(`printed no listening line within ${readyTimeoutMs} ms`), readyTimeoutMs)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk) => {
      if (ready) return
      out += chunk
      let end
      while (!ready && (end = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, end).trim()
        out = out.slice(end + 1)
        if (line.length === 0) continue
        let parsed
        try {
          parsed = JSON.parse(line)
        } catch {
          return fail(`printed a line that is not JSON: ${line}`)
        }
        if (parsed.event === "listening") {
          ready = true
          clearTimeout(timer)
          resolve(parsed)
        } else if (parsed.event === "exit") return fail(`failed to launch: ${line}`)
      }
    })
    void exited.then(({ code, signal }) => {
      if (!ready) fail(`exited (${code ?? signal}) before listening`)
    })
  })
  const startMs = Date.now() - started
  const stop = async () => {
    if (alive()) {
      child.kill("SIGTERM")
      const late = setTimeout(() => child.kill("SIGKILL"), 20_000)
      await exited
      clearTimeout(late)
    }
    const end = await exited
    children.delete(child)
    rmSync(home, { recursive: true, force: true })
    return end
  }
  return {
    label,
    url: listening.url,
    runnerAddress: listening.runner ?? runnerAddress,
    sessions: listening.sessions ?? [],
    pid: child.pid,
    startMs,
    alive,
    stop,
    stderrNotes: () => ({ count: noteCount, first: [...notes] }),
    stderrTail: () => tail
  }
}

// ---------------------------------------------------------------------------------------------
// Memory

/** VmRSS of one process in bytes (undefined once it is gone). */
const memAvailable = () => Number(/MemAvailable:\s+(\d+)\s+kB/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0) * 1024
const threadsOf = (pid) => {
  try {
    return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])
  } catch {
    return undefined
  }
}

const rssOf = (pid) => {
  try {
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}

/** VmRSS summed over `pid` and its descendants (shell children, their sandboxes). */
const treeRssOf = (pid) => {
  const parents = new Map()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      parents.set(Number(entry), Number(fields[1]))
    } catch {
      // gone meanwhile
    }
  }
  const inTree = new Set([pid])
  let grew = true
  while (grew) {
    grew = false
    for (const [child, parent] of parents) {
      if (!inTree.has(child) && inTree.has(parent)) {
        inTree.add(child)
        grew = true
      }
    }
  }
  let total = 0
  for (const member of inTree) total += rssOf(member) ?? 0
  return { bytes: total, processes: inTree.size }
}

/** CPU seconds of a process and its reaped children (utime + stime + cutime + cstime). */
const cpuOf = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

/** CPU seconds of every PostgreSQL server process (the cluster's database is one of the costs). */
const postgresCpu = () => {
  let total = 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "postgres") continue
      total += cpuOf(Number(entry)) ?? 0
    } catch {
      // gone meanwhile
    }
  }
  return total
}

/** The machine's busy and total jiffies (/proc/stat's cpu line). */
const machineCpu = () => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number)
  const idle = fields[3] + fields[4]
  const total = fields.reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

/** Starts a CPU account over `pids`; its `end()` says what each used, PostgreSQL's and the machine's busy share meanwhile. */
const cpuAccount = (pids) => {
  const started = Date.now()
  const before = pids.map(cpuOf)
  const pgBefore = postgresCpu()
  const machineBefore = machineCpu()
  return {
    end: () => {
      const seconds = (Date.now() - started) / 1000
      const machineAfter = machineCpu()
      return {
        seconds: round(seconds, 2),
        runnersCpuS: pids.map((pid, i) => round((cpuOf(pid) ?? 0) - (before[i] ?? 0), 2)),
        postgresCpuS: round(postgresCpu() - pgBefore, 2),
        machineBusy: round((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total), 3),
        /** The share of the machine's CPUs the runners and PostgreSQL used (the rest of `machineBusy` was other processes). */
        fleetShare: round((pids.reduce((sum, pid, i) => sum + ((cpuOf(pid) ?? 0) - (before[i] ?? 0)), 0) + postgresCpu() - pgBefore) / (seconds * os.cpus().length), 3)
      }
    }
  }
}

/** A process's CPU over `ms` of doing nothing asked of it, in ms per second. */
const idleCpuOf = async (pid, ms = 5000) => {
  const before = cpuOf(pid)
  const started = Date.now()
  await sleep(ms)
  return round((((cpuOf(pid) ?? 0) - (before ?? 0)) * 1000) / ((Date.now() - started) / 1000), 1)
}

/** RSS after `settleMs`: `samples` readings `gapMs` apart, their median (and the tree's). */
const settledRss = async (pid, settleMs = SETTLE_MS) => {
  await sleep(settleMs)
  const samples = []
  const tree = []
  for (let i = 0; i < RSS_SAMPLES; i++) {
    if (i > 0) await sleep(RSS_GAP_MS)
    samples.push(rssOf(pid))
    tree.push(treeRssOf(pid).bytes)
  }
  return { bytes: median(samples), samples, treeBytes: median(tree), threads: threadsOf(pid) }
}

// ---------------------------------------------------------------------------------------------
// A2A calls

let nextRpcId = 1
const rpc = async (url, method, params = {}) => {
  const started = performance.now()
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextRpcId++, method, params }),
    signal: AbortSignal.timeout(120_000)
  })
  const text = await response.text()
  const ms = performance.now() - started
  let body
  try {
    body = JSON.parse(text)
  } catch {
    throw new Error(`${method} on ${url}: HTTP ${response.status}, not JSON: ${text.slice(0, 500)}`)
  }
  return { status: response.status, body, ms }
}

let nextMessage = 1
const sendParams = (text) => ({
  message: { kind: "message", role: "user", messageId: `bench-${process.pid}-${nextMessage++}`, parts: [{ kind: "text", text }] },
  configuration: { blocking: false }
})

const terminal = new Set(["completed", "failed", "canceled", "rejected"])
const sessionUrl = (door, sessionId) => `${door}s/${sessionId}/`

/** A non-blocking message/send; throws unless the answer is a task. */
const submit = async (url, text) => {
  const answer = await rpc(url, "message/send", sendParams(text))
  const task = answer.body.result
  if (answer.body.error !== undefined || task?.id === undefined) throw new Error(`message/send on ${url}: ${JSON.stringify(answer.body).slice(0, 500)}`)
  if (task.status?.state === "rejected") throw new Error(`message/send on ${url} was rejected: ${JSON.stringify(task.status).slice(0, 500)}`)
  return { taskId: task.id, ms: answer.ms, state: task.status?.state }
}

/** Polls tasks/get until the task has ended (the first poll after `firstMs`; `everyMs` a number or a function of the ms waited); its final task. */
const awaitEnd = async (url, taskId, { timeoutMs = 120_000, everyMs = POLL_MS, firstMs = 0 } = {}) => {
  const started = Date.now()
  const deadline = started + timeoutMs
  let last
  if (firstMs > 0) await sleep(firstMs)
  while (Date.now() < deadline) {
    const answer = await rpc(url, "tasks/get", { id: taskId })
    last = answer.body
    const state = answer.body.result?.status?.state
    if (terminal.has(state)) return answer.body.result
    await sleep(typeof everyMs === "function" ? everyMs(Date.now() - started) : everyMs)
  }
  throw new Error(`task ${taskId} did not end within ${timeoutMs} ms; last answer ${JSON.stringify(last).slice(0, 500)}`)
}

const placementOf = async (door) => {
  const response = await fetch(`${door}fleet/placement`)
  if (response.status !== 200) throw new Error(`GET ${door}fleet/placement: HTTP ${response.status}: ${(await response.text()).slice(0, 500)}`)
  return response.json()
}

/** Runs `work(item)` over `items`, `concurrency` at a time. */
const pool = async (items, concurrency, work) => {
  const results = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index], index)
    }
  }))
  return results
}

/** Builds a session with a tasks/get of a task that does not exist; the call's ms. */
const activate = async (url) => {
  const answer = await rpc(url, "tasks/get", { id: "no-such-task" })
  const expected = answer.body.error !== undefined && answer.body.error.code === -32001
  return { ms: answer.ms, expected, body: expected ? undefined : JSON.stringify(answer.body).slice(0, 300) }
}

// ---------------------------------------------------------------------------------------------
// density

const densityOne = async (tree, n) => {
  const partStart = Date.now()
  const loadAtStart = load1()
  const cluster = await freshSchemaUrl(`density_${n}`)
  log(`density N=${n}: starting the runner (load ${load1()})`)
  const runner = await startRunner({ label: `density-${n}`, cluster, dirs: [tree.hello], sessions: n })
  try {
    if (runner.sessions.length !== n) throw new Error(`the runner lists ${runner.sessions.length} sessions, not ${n}`)
    const empty = await settledRss(runner.pid)
    empty.idleCpuMsPerS = await idleCpuOf(runner.pid)
    const before = await placementOf(runner.url)
    log(`density N=${n}: started in ${runner.startMs} ms; empty runner ${mib(empty.bytes)} MiB (sessions_here ${before.sessions_here})`)

    const activationStart = Date.now()
    let guard
    const activations = (await pool(runner.sessions, ACTIVATE_CONCURRENCY, async (session, index) => {
      if (guard !== undefined) return undefined
      const rss = rssOf(runner.pid) ?? 0
      if (rss > RSS_CAP_MIB * 1024 ** 2 || memAvailable() < MEM_FLOOR_MIB * 1024 ** 2) {
        guard = { stoppedAt: index, rssBytes: rss, memAvailableBytes: memAvailable() }
        log(`density N=${n}: activation stopped at session ${index}: runner RSS ${mib(rss)} MiB, MemAvailable ${mib(guard.memAvailableBytes)} MiB`)
        return undefined
      }
      if (index > 0 && index % 100 === 0) log(`density N=${n}: ${index} activated, RSS ${mib(rss)} MiB`)
      const one = await activate(sessionUrl(runner.url, session.session_id))
      if (one.ms > 10_000) log(`density N=${n}: activating session ${session.session_id} took ${round(one.ms)} ms`)
      return { ...one, id: session.session_id }
    })).filter((a) => a !== undefined)
    const activationMs = Date.now() - activationStart
    const unexpected = activations.filter((a) => !a.expected)
    const activated = activations.length
    let view = await placementOf(runner.url)
    for (let i = 0; i < 50 && view.sessions_here !== activated; i++) {
      await sleep(200)
      view = await placementOf(runner.url)
    }
    log(`density N=${n}: activated in ${activationMs} ms (tasks/get p50 ${round(median(activations.map((a) => a.ms)))} ms), sessions_here ${view.sessions_here}`)
    const idle = await settledRss(runner.pid)
    idle.idleCpuMsPerS = await idleCpuOf(runner.pid)
    const idleView = await placementOf(runner.url)

    const k = Math.min(n, TASK_SESSIONS)
    const busyStart = Date.now()
    const sent = await Promise.all(runner.sessions.slice(0, k).map((session, i) => submit(sessionUrl(runner.url, session.session_id), `bench ${i}`).then((s) => ({ ...s, session }))))
    const samples = []
    const treeSamples = []
    let done = false
    const sampler = (async () => {
      while (!done) {
        samples.push(rssOf(runner.pid))
        treeSamples.push(treeRssOf(runner.pid).bytes)
        await sleep(100)
      }
    })()
    const ended = await Promise.all(sent.map((s) => awaitEnd(sessionUrl(runner.url, s.session.session_id), s.taskId, { everyMs: 200 })))
    const busyMs = Date.now() - busyStart
    done = true
    await sampler
    const states = {}
    for (const task of ended) states[task.status.state] = (states[task.status.state] ?? 0) + 1
    const after = await settledRss(runner.pid)
    const finalView = await placementOf(runner.url)
    log(`density N=${n}: ${k} tasks ${JSON.stringify(states)} in ${busyMs} ms; RSS idle ${mib(idle.bytes)} MiB, busy peak ${mib(Math.max(...samples))} MiB, after ${mib(after.bytes)} MiB`)
    const peak = Math.max(...samples)
    return {
      n,
      startMs: runner.startMs,
      load1AtStart: loadAtStart,
      empty,
      emptySessionsHere: before.sessions_here,
      activation: { activated, guard, wallMs: activationMs, concurrency: ACTIVATE_CONCURRENCY, slow: activations.filter((a) => a.ms > 2000).map((a) => ({ id: a.id, ms: round(a.ms) })), tasksGetMs: stats(activations.map((a) => a.ms)), unexpected: unexpected.length, unexpectedFirst: unexpected.slice(0, 3).map((a) => a.body) },
      sessionsHereAfterActivation: view.sessions_here,
      sessionsHereAtIdleSample: idleView.sessions_here,
      idle,
      idlePerSessionBytes: (idle.bytes - empty.bytes) / activated,
      busy: {
        tasks: k,
        states,
        wallMs: busyMs,
        peakBytes: peak,
        medianBytes: median(samples),
        treePeakBytes: Math.max(...treeSamples),
        treeMedianBytes: median(treeSamples),
        samples: samples.length,
        perTaskBytes: (peak - idle.bytes) / k,
        treePerTaskBytes: (Math.max(...treeSamples) - idle.treeBytes) / k
      },
      after,
      sessionsHereAfterTasks: finalView.sessions_here,
      runners: finalView.runners,
      stderr: runner.stderrNotes(),
      partMs: Date.now() - partStart
    }
  } finally {
    const end = await runner.stop()
    log(`density N=${n}: runner stopped (${end.code ?? end.signal})`)
  }
}

const activationLatency = async (tree) => {
  const partStart = Date.now()
  const sessions = Math.max(ACT_SESSIONS, ACTIVATIONS + 1)
  const cluster = await freshSchemaUrl("activation")
  log(`activation: starting a runner with ${sessions} sessions (load ${load1()})`)
  const runner = await startRunner({ label: "activation", cluster, dirs: [tree.hello], sessions })
  try {
    const [warm, ...fresh] = runner.sessions
    const warmUrl = sessionUrl(runner.url, warm.session_id)
    const warmFirst = await submit(warmUrl, "warm-up")
    const warmTask = await awaitEnd(warmUrl, warmFirst.taskId)
    log(`activation: warm-up activation ${round(warmFirst.ms)} ms, its task ${warmTask.status.state}`)
    const first = []
    const again = []
    const taskMs = []
    for (let i = 0; i < ACTIVATIONS; i++) {
      const url = sessionUrl(runner.url, fresh[i].session_id)
      // The runner settles after the last task (its warm pool refills a worker, ~30 ms of main-thread CPU):
      // what is measured is a session's activation, not that overlap.
      await sleep(ACTIVATION_GAP_MS)
      const started = Date.now()
      const sent = await submit(url, `activation ${i}`)
      first.push(sent.ms)
      const ended = await awaitEnd(url, sent.taskId)
      taskMs.push(Date.now() - started)
      if (ended.status.state !== "completed") log(`activation: task ${sent.taskId} ended ${ended.status.state}`)
      if (i % 3 === 2) {
        await sleep(ACTIVATION_GAP_MS)
        const base = await submit(warmUrl, `baseline ${i}`)
        again.push(base.ms)
        await awaitEnd(warmUrl, base.taskId)
      }
    }
    const view = await placementOf(runner.url)
    const result = {
      sessions,
      activations: ACTIVATIONS,
      warmupMs: round(warmFirst.ms),
      firstSendMs: stats(first),
      builtSendMs: stats(again),
      taskEndToEndMs: stats(taskMs),
      samplesMs: first.map((x) => round(x)),
      baselineSamplesMs: again.map((x) => round(x)),
      sessionsHere: view.sessions_here,
      stderr: runner.stderrNotes(),
      partMs: Date.now() - partStart
    }
    log(`activation: first message/send p50 ${result.firstSendMs.p50} ms p95 ${result.firstSendMs.p95} ms; to a built session p50 ${result.builtSendMs.p50} ms`)
    return result
  } finally {
    await runner.stop()
  }
}

const density = async (tree) => {
  const started = Date.now()
  const runs = []
  for (const n of NS) runs.push(await densityOne(tree, n))
  const activation = ACTIVATIONS > 0 ? await activationLatency(tree) : undefined
  const result = { date: DATE, machine: machine(), run: runInfo(), settings: { NS, TASK_SESSIONS, ACTIVATE_CONCURRENCY, SETTLE_MS, RSS_SAMPLES, RSS_GAP_MS, ACT_SESSIONS, ACTIVATIONS }, runs, activation, partMs: Date.now() - started }
  const largest = runs.find((r) => r.n === 1000) ?? runs.at(-1)
  const idleAbove = largest.activation.guard === undefined ? largest.idle.bytes - largest.empty.bytes : largest.idlePerSessionBytes * largest.n
  result.targets = {
    idle1000: largest.n === 1000 ? { aboveEmptyBytes: idleAbove, target: TARGETS.idle1000Bytes, pass: idleAbove < TARGETS.idle1000Bytes } : { note: `no N=1000 run (largest N=${largest.n}); extrapolated ${mib((idleAbove / largest.n) * 1000)} MiB for 1000` },
    activationP50: activation === undefined ? undefined : { p50Ms: activation.firstSendMs.p50, target: TARGETS.activationP50Ms, pass: activation.firstSendMs.p50 < TARGETS.activationP50Ms }
  }

  console.log("\n## density (examples/hello, one runner)\n")
  console.log("| N | start ms | empty RSS | idle RSS (all built) | per idle session | busy k | busy peak / median | per running task | after tasks | tree peak | sessions_here | activate (tasks/get) p50/p95 | idle CPU empty / all built | threads empty / built | stderr notes |")
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
  for (const r of runs) {
    console.log(`| ${r.n}${r.activation.guard === undefined ? "" : ` (${r.activation.activated} built: guard)`} | ${r.startMs} | ${mib(r.empty.bytes)} MiB | ${mib(r.idle.bytes)} MiB | ${kib(r.idlePerSessionBytes)} KiB | ${r.busy.tasks} (${Object.entries(r.busy.states).map(([k, v]) => `${v} ${k}`).join(", ")}) | ${mib(r.busy.peakBytes)} / ${mib(r.busy.medianBytes)} MiB | ${mib(r.busy.perTaskBytes)} MiB | ${mib(r.after.bytes)} MiB | ${mib(r.busy.treePeakBytes)} MiB | ${r.sessionsHereAfterActivation}/${r.n} | ${r.activation.tasksGetMs.p50} / ${r.activation.tasksGetMs.p95} ms | ${r.empty.idleCpuMsPerS} / ${r.idle.idleCpuMsPerS} ms/s | ${r.empty.threads} / ${r.idle.threads} | ${r.stderr.count} |`)
  }
  if (activation !== undefined) {
    console.log(`\nactivation (runner with ${activation.sessions} sessions, warm-up ${activation.warmupMs} ms): first message/send p50 ${activation.firstSendMs.p50} ms, p95 ${activation.firstSendMs.p95} ms, max ${activation.firstSendMs.max} ms (n=${activation.firstSendMs.n}); baseline, same run, message/send to a built session p50 ${activation.builtSendMs.p50} ms, p95 ${activation.builtSendMs.p95} ms (n=${activation.builtSendMs.n}); task end to end p50 ${activation.taskEndToEndMs.p50} ms`)
  }
  console.log("")
  if (largest.n === 1000) console.log(`target: 1000 idle sessions < 1 GiB above the empty runner: ${mib(idleAbove)} MiB → ${pass(result.targets.idle1000.pass)}`)
  else console.log(`target: 1000 idle sessions < 1 GiB: not measured (${result.targets.idle1000.note})`)
  if (activation !== undefined) console.log(`target: activation p50 < 50 ms: ${activation.firstSendMs.p50} ms → ${pass(result.targets.activationP50.pass)}`)
  writeResult("density", result)
  return result
}

// ---------------------------------------------------------------------------------------------
// scaling

/** The best three/one ratio a split allows: a runner needs at least max(tasks/capacity, tasks per session) task-lengths. */
const boundOf = (split, sessions, tasks, capacity) => {
  const perSession = Array.from({ length: sessions }, (_, i) => Math.floor(tasks / sessions) + (i < tasks % sessions ? 1 : 0))
  const maxPer = Math.max(...perSession)
  const one = Math.max(Math.ceil(tasks / capacity), maxPer)
  const worst = Math.max(...split.map((s) => (s === 0 ? 0 : Math.max(Math.ceil((s * tasks) / sessions / capacity), maxPer))))
  return round(one / worst)
}

/**
 * The best three/one ratio a split allows in the closed loop: tasks reach a runner in proportion to
 * its sessions, so the fleet completes at most capacity / (task-length × the largest share) a
 * second; and C clients keep at most C tasks in flight (one runner runs min(C, capacity)).
 */
const closedBoundOf = (split, clients, capacity) =>
  round(Math.min(split.reduce((a, b) => a + b, 0) / Math.max(...split), clients / Math.min(clients, capacity)))

/** Count and ms of a task, by state; `{completed: 3, failed: 1}`. */
const statesOf = (tasks) => {
  const states = {}
  for (const t of tasks) states[t.state ?? "open"] = (states[t.state ?? "open"] ?? 0) + 1
  return states
}

/** Fills in a task's end from its final tasks/get answer: the status's `timestamp` (the server's clock) if it has one. */
const markEnded = (task, result) => {
  task.seenAt = Date.now()
  task.state = result.status.state
  const stamp = Date.parse(result.status.timestamp ?? "")
  task.endAt = Number.isNaN(stamp) ? task.seenAt : stamp
  task.stamped = !Number.isNaN(stamp)
}

/** The batch method: every task submitted at once, polled until all ended; tasks/s over first submit → last end. */
const batchRun = async ({ variant, runners, ids, doors, doorOf, isOwnerDoor, ownerOf, split, phase }) => {
  const TASKS = variant.tasks
  const sessions = ids.length
  const batchAccount = cpuAccount(runners.map((r) => r.pid))
  const tasks = Array.from({ length: TASKS }, (_, j) => ({ j, id: ids[j % sessions], door: doors[j % doors.length] }))
  const loadAtStart = load1()
  const submitStart = Date.now()
  await pool(tasks, 8, async (task) => {
    task.submitAt = Date.now()
    const sent = await submit(sessionUrl(task.door, task.id), `tick ${task.j}`)
    task.taskId = sent.taskId
    task.submitMs = sent.ms
  })
  const submitWall = Date.now() - submitStart
  const open = new Set(tasks)
  const pollDeadline = Date.now() + 10 * 60_000
  while (open.size > 0) {
    if (Date.now() > pollDeadline) throw new Error(`${open.size} tasks still open after 10 minutes`)
    const round_ = [...open]
    await pool(round_, 4, async (task) => {
      const answer = await rpc(sessionUrl(doorOf(task.id), task.id), "tasks/get", { id: task.taskId })
      const result = answer.body.result
      if (result !== undefined && terminal.has(result.status?.state)) {
        markEnded(task, result)
        open.delete(task)
      }
    })
    if (open.size > 0) await sleep(POLL_MS)
  }
  const batchCpu = batchAccount.end()
  phase("batch")
  const latencies = tasks.map((t) => t.endAt - t.submitAt)
  const seen = tasks.map((t) => t.seenAt - t.submitAt)
  const firstSubmit = Math.min(...tasks.map((t) => t.submitAt))
  const lastEnd = Math.max(...tasks.map((t) => t.endAt))
  const wallMs = lastEnd - firstSubmit
  const perRunner = runners.map((r, i) => {
    const mine = tasks.filter((t) => ownerOf.get(t.id) === r.runnerAddress)
    return { runner: r.runnerAddress, sessions: split[i], tasks: mine.length, lastEndMs: mine.length === 0 ? 0 : Math.max(...mine.map((t) => t.endAt)) - firstSubmit }
  })
  return {
    mode: "batch",
    tasks: TASKS,
    load1AtStart: loadAtStart,
    batchCpu,
    cpuMsPerTask: round(((batchCpu.runnersCpuS.reduce((a, b) => a + b, 0)) * 1000) / TASKS, 1),
    postgresCpuMsPerTask: round((batchCpu.postgresCpuS * 1000) / TASKS, 1),
    states: statesOf(tasks),
    submitWallMs: submitWall,
    submitMs: stats(tasks.map((t) => t.submitMs)),
    submitOwnerDoorMs: stats(tasks.filter((t) => isOwnerDoor(t.door, t.id)).map((t) => t.submitMs)),
    submitOtherDoorMs: runners.length === 1 ? undefined : stats(tasks.filter((t) => !isOwnerDoor(t.door, t.id)).map((t) => t.submitMs)),
    wallMs,
    tasksPerSecond: round(TASKS / (wallMs / 1000), 3),
    latencyMs: stats(latencies),
    seenLatencyMs: stats(seen),
    p99OverMedian: round(pct(latencies, 0.99) / pct(latencies, 0.5)),
    stampedFraction: tasks.filter((t) => t.stamped).length / tasks.length,
    perRunner
  }
}

/**
 * The closed-loop method: CLIENTS clients, each submitting the next task (next session round-robin,
 * next door) once its last one ended; the ramp's tasks are left out, the window's counted, then the
 * clients stop issuing and the tasks in flight are awaited.
 */
const closedRun = async ({ runners, ids, doors, doorOf, isOwnerDoor, ownerOf, split, soloMs, phase }) => {
  const sessions = ids.length
  const taskMs = soloMs > 0 ? soloMs : 10_000
  const tasks = []
  let counter = 0
  const loadAtStart = load1()
  const loopStart = Date.now()
  const pids = runners.map((r) => r.pid)
  // The window opens at the ramp's end (known at the start, or once the burst has ended) and closes WINDOW_MS later.
  let rampEnd
  let windowEnd
  let account
  let windowCpu
  const timers = []
  const openWindow = (at) => {
    if (rampEnd !== undefined) return
    rampEnd = at
    windowEnd = at + WINDOW_MS
    account = cpuAccount(pids)
    timers.push(setTimeout(() => (windowCpu = account.end()), Math.max(0, windowEnd - Date.now())))
  }
  const openAt = (at) => timers.push(setTimeout(() => openWindow(at), Math.max(0, at - Date.now())))
  if (RAMP !== "burst") openAt(loopStart + (RAMP === "task" ? taskMs : Number(RAMP)))
  let burstLeft = CLIENTS
  const ended = (task) => {
    if (RAMP === "burst" && task.j < CLIENTS && --burstLeft === 0) openAt(Math.max(Date.now(), loopStart + taskMs))
  }
  const progress = setInterval(() => {
    const done = tasks.filter((t) => t.state !== undefined).length
    const now = Date.now()
    log(`scaling closed, ${runners.length} runner(s): +${round((now - loopStart) / 1000, 0)} s, ${tasks.length} submitted, ${done} ended, ${tasks.length - done} in flight${rampEnd === undefined || now < rampEnd ? " (ramp)" : now < windowEnd ? " (window)" : " (drain)"}`)
  }, 15_000)
  const client = async (c) => {
    while (windowEnd === undefined || Date.now() < windowEnd) {
      const j = counter++
      const task = { j, client: c, id: ids[j % sessions], door: doors[j % doors.length], submitAt: Date.now() }
      tasks.push(task)
      try {
        const sent = await submit(sessionUrl(task.door, task.id), `tick ${j}`)
        task.taskId = sent.taskId
        task.submitMs = sent.ms
        const firstMs = Math.max(0, task.submitAt + 0.9 * taskMs - Date.now())
        markEnded(task, await awaitEnd(sessionUrl(doorOf(task.id), task.id), sent.taskId, { timeoutMs: 10 * 60_000, everyMs: closedPollMs, firstMs }))
        ended(task)
      } catch (error) {
        task.state = "error"
        task.error = String(error.message ?? error).slice(0, 500)
        task.seenAt = task.endAt = Date.now()
        ended(task)
        log(`scaling closed: client ${c} stops after an error on task ${j} (session ${task.id}): ${task.error}`)
        return
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
  } finally {
    for (const timer of timers) clearTimeout(timer)
    clearInterval(progress)
  }
  if (rampEnd === undefined) throw new Error("closed loop: every client stopped before the window opened (see the errors above)")
  windowCpu ??= account.end()
  phase("closed")
  const drainMs = Math.max(...tasks.map((t) => t.endAt)) - windowEnd
  /** The window's tasks: submitted after the ramp (the clients stop issuing at its end); all awaited, so none is cut off by the window's end. */
  const measured = tasks.filter((t) => t.submitAt >= rampEnd && t.state === "completed")
  /** Completed inside the window, whenever they were submitted: the throughput's count. */
  const inWindow = tasks.filter((t) => t.state === "completed" && t.endAt >= rampEnd && t.endAt < windowEnd)
  /** The same count, each task weighted by the share of its submit → end inside the window (in steady state, Little's law: it smooths the waves of tasks that end together at an edge). */
  const fractional = tasks.filter((t) => t.state === "completed").reduce((sum, t) => sum + Math.max(0, Math.min(t.endAt, windowEnd) - Math.max(t.submitAt, rampEnd)) / Math.max(1, t.endAt - t.submitAt), 0)
  const latencies = measured.map((t) => t.endAt - t.submitAt)
  const runnerIndex = (t) => runners.findIndex((r) => r.runnerAddress === ownerOf.get(t.id))
  const perRunner = runners.map((r, i) => {
    const mine = (xs) => xs.filter((t) => runnerIndex(t) === i)
    const lat = mine(measured).map((t) => t.endAt - t.submitAt)
    return { runner: r.runnerAddress, sessions: split[i], completedInWindow: mine(inWindow).length, measured: lat.length, latencyP50Ms: round(pct(lat, 0.5)), latencyP99Ms: round(pct(lat, 0.99)) }
  })
  const cpuTasks = Math.max(1, inWindow.length)
  const windowS = WINDOW_MS / 1000
  return {
    mode: "closed",
    clients: CLIENTS,
    ramp: RAMP,
    rampMs: rampEnd - loopStart,
    windowMs: WINDOW_MS,
    pollMs: CLOSED_POLL_MS,
    load1AtStart: loadAtStart,
    submitted: tasks.length,
    submittedInRamp: tasks.filter((t) => t.submitAt < rampEnd).length,
    states: statesOf(tasks),
    statesMeasured: statesOf(tasks.filter((t) => t.submitAt >= rampEnd)),
    errors: tasks.filter((t) => t.error !== undefined).slice(0, 5).map((t) => ({ j: t.j, session: t.id, error: t.error })),
    completedInWindow: inWindow.length,
    tasksPerSecond: round(inWindow.length / windowS, 3),
    fractionalTasksPerSecond: round(fractional / windowS, 3),
    drainMs,
    windowCpu,
    cpuMsPerTask: round((windowCpu.runnersCpuS.reduce((a, b) => a + b, 0) * 1000) / cpuTasks, 1),
    postgresCpuMsPerTask: round((windowCpu.postgresCpuS * 1000) / cpuTasks, 1),
    submitMs: stats(tasks.filter((t) => t.submitMs !== undefined).map((t) => t.submitMs)),
    submitOwnerDoorMs: stats(tasks.filter((t) => t.submitMs !== undefined && isOwnerDoor(t.door, t.id)).map((t) => t.submitMs)),
    submitOtherDoorMs: runners.length === 1 ? undefined : stats(tasks.filter((t) => t.submitMs !== undefined && !isOwnerDoor(t.door, t.id)).map((t) => t.submitMs)),
    latencyMs: stats(latencies),
    seenLatencyMs: stats(measured.map((t) => t.seenAt - t.submitAt)),
    p99OverMedian: round(pct(latencies, 0.99) / pct(latencies, 0.5)),
    stampedFraction: measured.length === 0 ? undefined : measured.filter((t) => t.stamped).length / measured.length,
    perRunner,
    taskLogFields: ["submit ms after the clients' start", "latency ms", "runner index", "state"],
    taskLog: tasks.map((t) => [t.submitAt - loopStart, t.endAt - t.submitAt, runnerIndex(t), t.state])
  }
}

const scalingSet = async (variant, dir, runnersWanted, sessions) => {
  const { ticks: TICKS, tickMs: TICK_MS } = variant
  const started = Date.now()
  const cluster = await freshSchemaUrl(`scaling_${variant.name}_${runnersWanted}_${sessions}`)
  log(`scaling ${variant.name} (${SCALING_MODE}): ${runnersWanted} runner(s), ${sessions} sessions, capacity ${CAPACITY}, ${SCALING_MODE === "batch" ? `${variant.tasks} tasks` : `${CLIENTS} clients, window ${WINDOW_MS} ms`} (load ${load1()})`)
  const runners = []
  const phases = {}
  let phaseStart = Date.now()
  const phase = (name) => {
    phases[name] = Date.now() - phaseStart
    phaseStart = Date.now()
  }
  try {
    for (let i = 0; i < runnersWanted; i++) runners.push(await startRunner({ label: `scaling-${runnersWanted}-${i}`, cluster, dirs: [dir], sessions, capacity: CAPACITY }))
    phase("start")
    const doors = runners.map((r) => r.url)
    const ids = runners[0].sessions.map((s) => s.session_id)
    // Every runner in the view and healthy, then the assignments a few refreshes old.
    const deadline = Date.now() + 30_000
    while (true) {
      const view = await placementOf(doors[0])
      if (view.runners.filter((r) => r.healthy).length >= runnersWanted) break
      if (Date.now() > deadline) throw new Error(`only ${view.runners.length} runners in the placement view: ${JSON.stringify(view.runners)}`)
      await sleep(250)
    }
    phase("runnersHealthy")
    await sleep(3000)
    const activations = await pool(ids, 2, async (id, i) => {
      const one = await activate(sessionUrl(doors[i % doors.length], id))
      if (one.ms > 10_000) log(`scaling: activating session ${id} through ${doors[i % doors.length]} took ${round(one.ms)} ms`)
      return { ...one, id, door: doors[i % doors.length] }
    })
    phase("activate")
    let views = await Promise.all(doors.map(placementOf))
    for (let i = 0; i < 50 && views.reduce((sum, v) => sum + v.sessions_here, 0) !== sessions; i++) {
      await sleep(200)
      views = await Promise.all(doors.map(placementOf))
    }
    const ownerOf = new Map()
    for (const s of views[0].sessions) ownerOf.set(s.session_id, s.runner)
    const split = runners.map((r) => views[0].sessions.filter((s) => s.runner === r.runnerAddress).length)
    const here = views.map((v) => v.sessions_here)
    const doorOf = (id) => runners.find((r) => r.runnerAddress === ownerOf.get(id))?.url ?? doors[0]
    phase("placementSettled")
    const activationStats = stats(activations.map((a) => a.ms))
    /** Whether `door` is the door of the runner that owns session `id` (a local call) or another's (through the cluster). */
    const isOwnerDoor = (door, id) => doorOf(id) === door
    const activationLocal = activations.filter((a) => isOwnerDoor(a.door, a.id)).map((a) => a.ms)
    const activationRemote = activations.filter((a) => !isOwnerDoor(a.door, a.id)).map((a) => a.ms)
    log(`scaling: placement ${split.join("/")} (sessions_here ${here.join("/")}), activation tasks/get p50 ${activationStats.p50} ms, max ${activationStats.max} ms`)
    await sleep(2000)
    const idleAccount = cpuAccount(runners.map((r) => r.pid))
    await sleep(5000)
    const idleCpu = idleAccount.end()

    // Warm-up: one task in each of up to `capacity` sessions per runner (the driver and the shell path warm on every runner).
    const warmIds = runners.flatMap((r) => ids.filter((id) => ownerOf.get(id) === r.runnerAddress).slice(0, CAPACITY))
    const warm = await pool(warmIds, 4, (id, i) => submit(sessionUrl(doors[i % doors.length], id), `warm ${i}`).then((s) => ({ ...s, id })))
    await Promise.all(warm.map((w) => awaitEnd(sessionUrl(doorOf(w.id), w.id), w.taskId, { everyMs: 250 })))
    // One task alone on an otherwise idle fleet: the task-length unit (the batch's bound counts in it; the closed loop's ramp is one).
    const soloStart = Date.now()
    const solo = await submit(sessionUrl(doors[doors.length - 1], ids[0]), "solo")
    const soloTask = await awaitEnd(sessionUrl(doorOf(ids[0]), ids[0]), solo.taskId)
    const soloMs = (Date.parse(soloTask.status.timestamp ?? "") || Date.now()) - soloStart
    phase("warmup")
    log(`scaling: warm-up done; one task alone ${soloMs} ms`)

    const context = { variant, runners, ids, doors, doorOf, isOwnerDoor, ownerOf, split, soloMs, phase }
    const measured = SCALING_MODE === "batch" ? await batchRun(context) : await closedRun(context)
    const viewsAfter = await Promise.all(doors.map(placementOf))
    const result = {
      runners: runnersWanted,
      sessions,
      capacity: CAPACITY,
      ticks: TICKS,
      tickMs: TICK_MS,
      startMs: runners.map((r) => r.startMs),
      phasesMs: phases,
      activationMs: activationStats,
      activationOwnerDoorMs: activationLocal.length === 0 ? undefined : stats(activationLocal),
      activationOtherDoorMs: activationRemote.length === 0 ? undefined : stats(activationRemote),
      activationSlow: activations.filter((a) => a.ms > 2000).map((a) => ({ id: a.id, ms: round(a.ms) })),
      soloTaskMs: soloMs,
      idleCpu,
      idleCpuMsPerSecond: idleCpu.runnersCpuS.map((x) => round((x * 1000) / idleCpu.seconds, 1)),
      split,
      sessionsHere: here,
      splitAfter: runners.map((r) => viewsAfter[0].sessions.filter((s) => s.runner === r.runnerAddress).length),
      sessionsHereAfter: viewsAfter.map((v) => v.sessions_here),
      ...measured,
      runnerHealth: viewsAfter[0].runners,
      stderr: runners.map((r) => ({ runner: r.runnerAddress, ...r.stderrNotes() })),
      partMs: Date.now() - started
    }
    const timed = `${round((result.stampedFraction ?? 0) * 100, 0)}% timed by status timestamp`
    if (result.mode === "batch") log(`scaling: ${runnersWanted} runner(s): ${result.tasksPerSecond} tasks/s over ${result.wallMs} ms, latency p50 ${result.latencyMs.p50} ms p99 ${result.latencyMs.p99} ms, ${JSON.stringify(result.states)}, ${timed}`)
    else log(`scaling: ${runnersWanted} runner(s), ${CLIENTS} clients: ${result.tasksPerSecond} tasks/s (${result.completedInWindow} completed in the ${WINDOW_MS} ms window; fractional ${result.fractionalTasksPerSecond}), latency p50 ${result.latencyMs.p50} ms p99 ${result.latencyMs.p99} ms (n=${result.latencyMs.n}), per runner ${result.perRunner.map((p) => p.completedInWindow).join("/")}, ${JSON.stringify(result.states)}, drain ${result.drainMs} ms, ${timed}`)
    return result
  } finally {
    for (const r of runners) await r.stop()
  }
}

const statesText = (states) => Object.entries(states).map(([k, v]) => `${v} ${k}`).join(", ")
const splitText = (set) => `${set.split.join("/")}${set.splitAfter.join("/") === set.split.join("/") ? "" : ` → after ${set.splitAfter.join("/")}`}`

const printBatch = (rounds) => {
  console.log(`\n## scaling, batch (ticking capsule: <ticks> × sleep <tickMs>; --runner-capacity ${CAPACITY}; one runner vs three, same run)\n`)
  console.log("| variant | tasks | sessions | runners | split (sessions per runner) | tasks/s | wall ms | latency p50 / p99 ms | p99/p50 | task alone ms | submit p50 ms (owner's door / another's) | runner CPU ms/task | postgres CPU ms/task | machine busy (fleet's share) | idle runner CPU ms/s | states | stderr notes |")
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
  for (const r of rounds) {
    for (const set of [r.one, r.three]) {
      console.log(`| ${r.variant} | ${r.tasks} | ${set.sessions} | ${set.runners} | ${splitText(set)} | ${set.tasksPerSecond} | ${set.wallMs} | ${set.latencyMs.p50} / ${set.latencyMs.p99} | ${set.p99OverMedian} | ${set.soloTaskMs} | ${set.submitOwnerDoorMs.p50}${set.submitOtherDoorMs === undefined ? "" : ` / ${set.submitOtherDoorMs.p50}`} | ${set.cpuMsPerTask} | ${set.postgresCpuMsPerTask} | ${round(set.batchCpu.machineBusy * 100, 0)}% (${round(set.batchCpu.fleetShare * 100, 0)}%) | ${set.idleCpuMsPerSecond.join("/")} | ${statesText(set.states)} | ${set.stderr.map((s) => s.count).join("/")} |`)
    }
  }
  console.log("")
  for (const r of rounds) {
    const why = [
      r.targetReachable ? "" : ": the 2.4 target is out of reach with this split",
      r.cpuBound ? `; the machine was ${round(r.three.batchCpu.machineBusy * 100, 0)}% busy with three runners (${r.three.cpuMsPerTask} ms runner CPU a task): bound by CPU, not waiting` : ""
    ].join("")
    console.log(`${r.variant} (${r.ticks} × ${r.tickMs} ms, ${r.tasks} tasks), sessions ${r.sessions}: three/one ${r.ratio} (split ${r.three.split.join("/")} allows at most ${r.boundFromSplit}${why}) → ${pass(r.ratioPass)}; p99 < 2 × median (three runners): ${r.three.p99OverMedian} → ${pass(r.p99Pass)} (one runner: ${r.one.p99OverMedian} → ${pass(r.p99PassOne)})`)
  }
}

const printClosed = (rounds) => {
  console.log(`\n## scaling, closed loop (ticking capsule: <ticks> × sleep <tickMs>; --runner-capacity ${CAPACITY}; ${CLIENTS} clients; one runner vs three, same run)\n`)
  console.log("| variant | sessions | runners | split (sessions per runner) | completed in window per runner | tasks/s (fractional) | latency p50 / p95 / p99 ms (n) | p99/p50 | latency p50 per runner ms | task alone ms / ramp ms | window ms | drain ms | submit p50 ms (owner's door / another's) | runner CPU ms/task | postgres CPU ms/task | machine busy (fleet's share) | idle runner CPU ms/s | states | stderr notes |")
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
  for (const r of rounds) {
    for (const set of [r.one, r.three]) {
      const cpu = `${round(set.windowCpu.machineBusy * 100, 0)}% (${round(set.windowCpu.fleetShare * 100, 0)}%)`
      console.log(`| ${r.variant} | ${set.sessions} | ${set.runners} | ${splitText(set)} | ${set.perRunner.map((p) => p.completedInWindow).join("/")} | ${set.tasksPerSecond} (${set.fractionalTasksPerSecond}) | ${set.latencyMs.p50} / ${set.latencyMs.p95} / ${set.latencyMs.p99} (${set.latencyMs.n}) | ${set.p99OverMedian} | ${set.perRunner.map((p) => p.latencyP50Ms).join("/")} | ${set.soloTaskMs} / ${set.rampMs} | ${set.windowMs} | ${set.drainMs} | ${set.submitOwnerDoorMs.p50}${set.submitOtherDoorMs === undefined ? "" : ` / ${set.submitOtherDoorMs.p50}`} | ${set.cpuMsPerTask} | ${set.postgresCpuMsPerTask} | ${cpu} | ${set.idleCpuMsPerSecond.join("/")} | ${statesText(set.states)} | ${set.stderr.map((s) => s.count).join("/")} |`)
    }
  }
  console.log("")
  for (const r of rounds) {
    const why = [
      r.targetReachable ? "" : ": the 2.4 target is out of reach with this split",
      r.cpuBound ? `; the machine was ${round(r.three.windowCpu.machineBusy * 100, 0)}% busy with three runners (${r.three.cpuMsPerTask} ms runner CPU a task): bound by CPU, not waiting` : ""
    ].join("")
    const notCompleted = [r.one, r.three].filter((set) => Object.keys(set.states).some((state) => state !== "completed"))
    // Tasks that started together end together (one runner's four slots stay in step): a window holds a whole number of such waves, give or take one.
    const above = r.ratio > r.boundFromSplit * 1.05 ? `; above the split's bound: the window caught one wave of tasks more or less in one set than its average (the fractional count is steadier)` : ""
    console.log(`${r.variant} (${r.ticks} × ${r.tickMs} ms), ${r.sessions} sessions, ${r.clients} clients: three/one ${r.ratio} (fractional count ${r.fractionalRatio}; split ${r.three.split.join("/")} allows at most ${r.boundFromSplit}${why}${above}) → ${pass(r.ratioPass)}; p99 < 2 × median (three runners): ${r.three.p99OverMedian} (per runner p50 ${r.three.perRunner.map((p) => p.latencyP50Ms).join("/")} ms) → ${pass(r.p99Pass)} (one runner: ${r.one.p99OverMedian} → ${pass(r.p99PassOne)})`)
    for (const set of notCompleted) console.log(`  ${set.runners} runner(s): not every task completed: ${statesText(set.states)}${set.errors.length === 0 ? "" : `; first error: ${set.errors[0].error}`}`)
  }
}

const scaling = async (tree) => {
  const started = Date.now()
  const rounds = []
  const runRound = async (variant, dir, sessions) => {
    const one = await scalingSet(variant, dir, 1, sessions)
    const three = await scalingSet(variant, dir, 3, sessions)
    const ratio = round(three.tasksPerSecond / one.tasksPerSecond)
    const closed = SCALING_MODE === "closed"
    const bound = closed ? closedBoundOf(three.split, CLIENTS, CAPACITY) : boundOf(three.split, sessions, variant.tasks, CAPACITY)
    const cpu = closed ? three.windowCpu : three.batchCpu
    const entry = {
      mode: SCALING_MODE,
      variant: variant.name,
      ticks: variant.ticks,
      tickMs: variant.tickMs,
      ...(closed ? { clients: CLIENTS, windowMs: WINDOW_MS } : { tasks: variant.tasks }),
      sessions,
      one,
      three,
      ratio,
      ...(closed ? { fractionalRatio: round(three.fractionalTasksPerSecond / one.fractionalTasksPerSecond) } : {}),
      boundFromSplit: bound,
      targetReachable: bound >= TARGETS.scalingRatio,
      cpuBound: (cpu?.machineBusy ?? 0) >= CPU_BOUND_SHARE,
      ratioPass: ratio >= TARGETS.scalingRatio,
      p99Pass: three.p99OverMedian < TARGETS.p99OverMedian,
      p99PassOne: one.p99OverMedian < TARGETS.p99OverMedian
    }
    rounds.push(entry)
    return entry
  }
  for (const variant of VARIANTS) {
    const dir = makeTickingDir(tree.tree, { ticks: variant.ticks, tickMs: variant.tickMs, name: `ticking-${variant.name}` })
    const first = await runRound(variant, dir, SCALING_SESSIONS)
    if (SCALING_MODE !== "batch") continue
    if (first.boundFromSplit >= TARGETS.scalingRatio * ESCALATE_MARGIN || SCALING_ESCALATE === "" || Number(SCALING_ESCALATE) === SCALING_SESSIONS) continue
    if (first.cpuBound) {
      log(`scaling ${variant.name}: the split ${first.three.split.join("/")} bounds three/one at ${first.boundFromSplit}, but the three runners kept the machine ${round(first.three.batchCpu.machineBusy * 100, 0)}% busy: CPU, not the split, bounds this variant; not run again with more sessions`)
      continue
    }
    // At least two tasks a session, so a runner's share is not one round.
    const more = Number(SCALING_ESCALATE)
    const escalated = { ...variant, tasks: Math.max(variant.tasks, 2 * more) }
    log(`scaling ${variant.name}: the split ${first.three.split.join("/")} of ${SCALING_SESSIONS} sessions bounds three/one at ${first.boundFromSplit} (< ${TARGETS.scalingRatio} × ${ESCALATE_MARGIN}): again with ${more} sessions, ${escalated.tasks} tasks`)
    await runRound(escalated, dir, more)
  }
  const settings = SCALING_MODE === "batch"
    ? { mode: SCALING_MODE, VARIANTS, SCALING_SESSIONS, SCALING_ESCALATE, CAPACITY, POLL_MS, CPU_BOUND_SHARE }
    : { mode: SCALING_MODE, VARIANTS: VARIANTS.map(({ tasks: _tasks, ...v }) => v), SCALING_SESSIONS, CAPACITY, CLIENTS, RAMP, WINDOW_MS, CLOSED_POLL_MS, CPU_BOUND_SHARE }
  const result = { date: DATE, machine: machine(), run: runInfo(), settings, rounds, partMs: Date.now() - started }
  if (SCALING_MODE === "batch") printBatch(rounds)
  else printClosed(rounds)
  writeResult("scaling", result)
  return result
}

// ---------------------------------------------------------------------------------------------

/** What the runners ran and on which database. */
const runInfo = () => ({ main, distBuiltAt: distSnapshot?.builtAt ?? new Date(statSync(main).mtimeMs).toISOString(), pgIsolation: benchDatabase === undefined ? "schema" : "database" })

const machine = () => ({ node: process.version, cpus: os.cpus().length, model: os.cpus()[0]?.model, memGiB: round(os.totalmem() / 1024 ** 3, 1), load: os.loadavg().map((x) => round(x)) })

const writeResult = (part, result) => {
  mkdirSync(OUT_DIR, { recursive: true })
  const file = join(OUT_DIR, `fleet-${DATE}-${part}${OUT_SUFFIX === "" ? "" : `-${OUT_SUFFIX}`}.json`)
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n")
  log(`wrote ${file}`)
}

const distStamp = () => statSync(join(root, "dist", "main.js")).mtimeMs
const distAtStart = distStamp()
const tree = makeBenchTree()
log(`runners run ${main}${distSnapshot === undefined ? "" : ` (a copy of dist/ built ${distSnapshot.builtAt})`}; tree ${tree.tree}; parts ${[...PARTS].join(",")}; load ${load1()}`)
try {
  await prepareDatabase()
  log(`cluster database: ${benchDatabase ?? new URL(PG_BASE).pathname.slice(1)} (${benchDatabase === undefined ? "schemas of the shared database" : "created for this run"})`)
  if (PARTS.has("density")) {
    const result = await density(tree)
    log(`density took ${round(result.partMs / 1000, 1)} s`)
  }
  if (PARTS.has("scaling")) {
    const result = await scaling(tree)
    log(`scaling took ${round(result.partMs / 1000, 1)} s`)
  }
} finally {
  killAll()
  await dropSchemas()
  tree.remove()
  distSnapshot?.remove()
}
if (distStamp() !== distAtStart) log(`dist/ was rebuilt during this run; ${distSnapshot === undefined ? "warning: runners started before and after ran different builds" : "the runners all ran the copy taken at the start"}`)
log(`done in ${round((Date.now() - t0) / 1000, 1)} s`)
