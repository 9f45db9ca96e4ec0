// `npm run bench:door`: the door (dist/, built first by the npm script) against the official A2A
// SDK server on express (bench/sdk-server.mjs) and a raw node:http server doing the same
// parse-and-answer work, SSE fan-out (against a raw node:http fan-out), cancel latency, and a resource-plane
// read of a 1 MiB file against a plain node:http static answer of the same file.
// Prints a summary table and writes bench/results/door-<date>.json. Method: docs/benchmarks.md.
//
// Throughput workloads: mix (message/send and tasks/get alternating), send (message/send alone,
// non-blocking `/complete`), get (tasks/get of a known task); BENCH_PAIRS rounds for mix and send.
// A2A 1.0 workloads, against the official SDK 1.x server (bench/sdk1-server.mjs) instead of the 0.3 SDK
// and the raw server, every request with `A2A-Version: 1.0`: send1 (JSON-RPC SendMessage, `/complete`,
// returnImmediately), get1 (JSON-RPC GetTask of a known task), rest-send1 (POST /message:send, the
// same SendMessageRequest), rest-get1 (GET /tasks/{id}); BENCH_GET_PAIRS rounds for the gets.
// Every message/send (SendMessage) carries its own messageId (autocannon's setupRequest numbers them):
// the door's submit is idempotent per messageId (issue 20), so one fixed id would measure the
// duplicate answer, not a new task.
// Store part (issue 20's "Performance"): the durable store's cost. The echo capsule's door with
// `--store sqlite:<fresh file>` and with `--store memory` (bench/store-door.mjs: `serve`'s session,
// door and store layers around the echo capsule, which `serve` itself serves without a store), the
// SDK 1.x server with its own SQLite task store and with its in-memory one (bench/sdk1-server.mjs
// `--store`), and the CLI's own `serve` (echo, no store) as a check of the composition; each in its
// own fresh MURMUR_HOME. Workloads, byte for byte the same for all (A2A 1.0 JSON-RPC): send =
// SendMessage blocking (`/complete hi`; the answer must be the completed task), get = GetTask of a
// working `/forever` task; BENCH_PAIRS (send) / BENCH_GET_PAIRS (get) rounds of one slice per server,
// the order rotated each round. Targets: door sqlite/memory ≥ 0.7 on send; door sqlite/SDK sqlite ≥ 1.5.
// Knobs: BENCH_STORE_WORKLOADS=send,get  BENCH_STORE_SERVERS=door-memory,door-journal,door-sqlite,sdk1-sqlite,sdk1-memory,door-serve
// (door-journal: bench/store-door.mjs `--store journal-memory`, the durable path over tables in memory, no SQL)
// BENCH_STORE_SDK_PRAGMAS=wal|default (the SDK's SQLite file: the door's WAL + synchronous=NORMAL, or SQLite's defaults)
// BENCH_STORE_PROFILE=<dir> (the SQLite door runs with --cpu-prof into <dir>; summarise with bench/store-profile.mjs)
// Statements and transactions per request of both SQLite stores: bench/store-count.mjs.
// Every server started here gets a fresh temporary MURMUR_HOME (removed when it stops) and no MURMUR_STORE.
// Knobs (environment): BENCH_PARTS=throughput,store,fanout,cancel,resource  BENCH_PAIRS=3  BENCH_GET_PAIRS=3  BENCH_SECONDS=2.5
// BENCH_WARMUP=2  BENCH_CONNECTIONS=10  FANOUT_OBSERVERS=500  FANOUT_TASKS=10  FANOUT_CHUNKS=997
// FANOUT_EVERY_MS=250  FANOUT_BATCH=25  FANOUT_TIMEOUT_S=150  FANOUT_PAIRS=3  CANCEL_N=200  BENCH_NODE_FLAGS (extra flags for the servers)
// BENCH_WORKLOADS=mix,send,get,send1,get1,rest-send1,rest-get1 (which throughput workloads)
// BENCH_DOOR_B=<path of another build's main.js, e.g. a copy of dist/ from before a change> BENCH_DOOR_B_LABEL=<name>:
//   a second door measured in every round right after the first (raw, sdk, door, door B), for A/B of two builds.
// BENCH_OUT=<file> (default bench/results/door-<date>.json; parts not run this time are kept from an existing file)
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, "..")
const env = (name, fallback) => (process.env[name] === undefined || process.env[name] === "" ? fallback : process.env[name])
const num = (name, fallback) => Number(env(name, fallback))

const PARTS = new Set(env("BENCH_PARTS", "throughput,store,fanout,cancel,resource").split(","))
for (const part of PARTS) if (!["throughput", "store", "fanout", "cancel", "resource"].includes(part)) throw new Error(`BENCH_PARTS: unknown part ${part}`)
const PAIRS = num("BENCH_PAIRS", 3)
const GET_PAIRS = num("BENCH_GET_PAIRS", 3)
const SECONDS = num("BENCH_SECONDS", 2.5)
const WARMUP = num("BENCH_WARMUP", 2)
const CONNECTIONS = num("BENCH_CONNECTIONS", 10)
const OBSERVERS = num("FANOUT_OBSERVERS", 500)
const FANOUT_TASKS = num("FANOUT_TASKS", 10)
const FANOUT_CHUNKS = num("FANOUT_CHUNKS", 997)
const FANOUT_EVERY_MS = num("FANOUT_EVERY_MS", 250)
const FANOUT_BATCH = num("FANOUT_BATCH", 25)
const FANOUT_TIMEOUT_S = num("FANOUT_TIMEOUT_S", 150)
const FANOUT_PAIRS = num("FANOUT_PAIRS", 3)
const CANCEL_N = num("CANCEL_N", 200)
const NODE_FLAGS = env("BENCH_NODE_FLAGS", "").split(/\s+/).filter(Boolean)
const WORKLOADS = env("BENCH_WORKLOADS", "mix,send,get,send1,get1,rest-send1,rest-get1").split(",").map((w) => w.trim()).filter(Boolean)
/** The A2A 1.0 workloads: measured against the SDK 1.x server (no raw server speaks 1.0). */
const V1_WORKLOADS = new Set(["send1", "get1", "rest-send1", "rest-get1"])
const V03_WORKLOADS = new Set(["mix", "send", "get"])
for (const w of WORKLOADS) if (!V1_WORKLOADS.has(w) && !V03_WORKLOADS.has(w)) throw new Error(`BENCH_WORKLOADS: unknown workload ${w}`)
const isGet = (kind) => kind === "get" || kind === "get1" || kind === "rest-get1"
/** The issue's targets for the 1.0 rows (door req/s over SDK 1.x req/s). */
const V1_TARGETS = { send1: 1, "rest-send1": 1, get1: 2, "rest-get1": 2 }
/** Where each workload lands in the results JSON (`throughput.<key>`) and how its row is labelled. */
const WORKLOAD_KEYS = { mix: "mix", send: "sendOnly", get: "getOnly", send1: "send1", get1: "get1", "rest-send1": "restSend1", "rest-get1": "restGet1" }
const WORKLOAD_LABELS = {
  mix: "message/send+tasks/get",
  send: "message/send only",
  get: "tasks/get only",
  send1: "1.0 SendMessage (JSON-RPC)",
  get1: "1.0 GetTask (JSON-RPC)",
  "rest-send1": "1.0 POST /message:send (REST)",
  "rest-get1": "1.0 GET /tasks/{id} (REST)"
}
const DOOR_B = env("BENCH_DOOR_B", "")
const DOOR_B_LABEL = env("BENCH_DOOR_B_LABEL", "doorB")
const STORE_WORKLOADS = env("BENCH_STORE_WORKLOADS", "send,get").split(",").map((w) => w.trim()).filter(Boolean)
const STORE_SERVERS = env("BENCH_STORE_SERVERS", "door-memory,door-journal,door-sqlite,sdk1-sqlite,sdk1-memory,door-serve").split(",").map((w) => w.trim()).filter(Boolean)
const STORE_SDK_PRAGMAS = env("BENCH_STORE_SDK_PRAGMAS", "wal")
const STORE_PROFILE = env("BENCH_STORE_PROFILE", "")
/** Issue 20's targets: the SQLite door over the memory door (message/send), and over the SDK 1.x server with its SQLite store. */
const STORE_TARGETS = { sqliteOverMemory: 0.7, sqliteOverSdk1Sqlite: 1.5 }
const load1 = () => round(os.loadavg()[0])

const log = (...args) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...args)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits

// ---------------------------------------------------------------------------------------------
// Child servers

/**
 * Starts `node <args>` and waits for its {"event":"listening"} line on stdout. Each server has a
 * fresh MURMUR_HOME of its own (a temporary directory, removed once it stopped; `args` may be a
 * function of it), so no run reads or leaves a store in the user's, and MURMUR_STORE is unset.
 */
const startServer = (name, args, { nodeFlags = [] } = {}) =>
  new Promise((resolve, reject) => {
    const home = mkdtempSync(join(os.tmpdir(), `bench-${name}-home-`))
    const childEnv = { ...process.env, MURMUR_HOME: home }
    delete childEnv.MURMUR_STORE
    const argv = typeof args === "function" ? args(home) : args
    const child = spawn(process.execPath, [...NODE_FLAGS, ...nodeFlags, ...argv], { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"] })
    const removeHome = () => rmSync(home, { recursive: true, force: true })
    let out = ""
    let err = ""
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${err}`)), 15_000)
    child.stderr.on("data", (chunk) => {
      if (err.length < 20_000) err += chunk
    })
    child.on("exit", (code) => {
      clearTimeout(timer)
      removeHome()
      reject(new Error(`${name} exited (${code}): ${err}`))
    })
    child.stdout.on("data", (chunk) => {
      out += chunk
      const line = out.split("\n").find((l) => l.includes(`"listening"`))
      if (line === undefined) return
      clearTimeout(timer)
      const info = JSON.parse(line)
      child.stdout.removeAllListeners("data")
      child.stdout.resume()
      resolve({
        ...info,
        name,
        child,
        home,
        stderr: () => err,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done()
            child.removeAllListeners("exit")
            child.on("exit", () => {
              removeHome()
              done()
            })
            child.kill("SIGTERM")
            setTimeout(() => child.kill("SIGKILL"), 6_000).unref()
          })
      })
    })
  })

const startDoor = (extra = [], main = "dist/main.js", name = "door") =>
  startServer(name, [main, "serve", "--json", "--max-active", "100000", "--queue-depth", "100000", ...extra])
const startRaw = () => startServer("raw", ["bench/raw-server.mjs"])
const startSdk = () => startServer("sdk", ["bench/sdk-server.mjs"])
const startSdk1 = () => startServer("sdk1", ["bench/sdk1-server.mjs"])

// ---------------------------------------------------------------------------------------------
// Small HTTP client (keep-alive) for JSON-RPC calls

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
let rpcId = 1
const rpc = (url, method, params, { headers = {} } = {}) =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params })
    const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => {
        try {
          resolve(JSON.parse(text))
        } catch (error) {
          reject(new Error(`${method}: not JSON (${res.statusCode}): ${text.slice(0, 200)}`))
        }
      })
    })
    req.on("error", reject)
    req.end(body)
  })

const message = (text, i = 0) => ({ message: { messageId: `bench-${i}`, role: "user", parts: [{ text }] } })

/**
 * A message/send (SendMessage) request whose messageId ("bench-0" in its body) is new in every
 * request autocannon sends (`setupRequest`, which it calls per request): the door answers a second
 * send with the same messageId with the first task (idempotent submit), so a fixed id would
 * measure that duplicate answer instead of a new task. The same for every server, baselines included.
 */
let messageSeq = 0
const uniqueIds = (request) => {
  const at = request.body.indexOf(`"bench-0"`)
  if (at < 0) throw new Error(`no "bench-0" messageId in ${request.body}`)
  const head = request.body.slice(0, at + 1)
  const tail = request.body.slice(at + `"bench-0`.length)
  return { ...request, setupRequest: (req) => ({ ...req, body: `${head}m${(++messageSeq).toString(36)}${tail}` }) }
}

const percentile = (sorted, p) => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))])
const summarize = (values) => {
  const sorted = Float64Array.from(values).sort()
  let sum = 0
  for (const v of sorted) sum += v
  return {
    n: sorted.length,
    min: sorted.length === 0 ? Number.NaN : sorted[0],
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1],
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput: message/send + tasks/get, door vs raw, interleaved

const cannon = (url, requests, seconds, check) =>
  new Promise((resolve, reject) => {
    const instance = autocannon({
      url,
      connections: CONNECTIONS,
      pipelining: 1,
      duration: seconds,
      requests: check === undefined ? requests : requests.map((r) => ({ ...r, onResponse: (status, body) => check(status, body) }))
    }, (error, result) => (error ? reject(error) : resolve(result)))
    instance.on("error", reject)
  })

const workloads = (knownId) => {
  const headers = { "content-type": "application/json" }
  const send = uniqueIds({ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: message("/complete hi") }) })
  const get = { method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: knownId } }) }
  return { mix: [send, get], send: [send], get: [get] }
}

/**
 * The A2A 1.0 workloads, byte for byte the same for the door and the SDK 1.x server: ProtoJSON
 * params, `A2A-Version: 1.0` on every request, SendMessage non-blocking (`returnImmediately`, 1.0's
 * inverse of 0.3's `blocking: false`), GetTask of the server's known task.
 */
const v1Workloads = (knownId) => {
  const headers = { "content-type": "application/json", "a2a-version": "1.0" }
  const sendParams = { message: { messageId: "bench-0", role: "ROLE_USER", parts: [{ text: "/complete hi" }] }, configuration: { returnImmediately: true } }
  return {
    send1: [uniqueIds({ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: sendParams }) })],
    get1: [{ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "GetTask", params: { id: knownId } }) }],
    "rest-send1": [uniqueIds({ method: "POST", path: "/message:send", headers, body: JSON.stringify(sendParams) })],
    "rest-get1": [{ method: "GET", path: `/tasks/${encodeURIComponent(knownId)}`, headers: { "a2a-version": "1.0" } }]
  }
}

/** A running `/forever` task on a door, started over 1.0 (the 1.0 rows' known task). */
const seedV1 = async (url) => {
  const reply = await rpc(url, "SendMessage", {
    message: { messageId: "bench-seed", role: "ROLE_USER", parts: [{ text: "/forever" }] },
    configuration: { returnImmediately: true }
  }, { headers: { "a2a-version": "1.0" } })
  const id = reply.result?.task?.id
  if (typeof id !== "string") throw new Error(`1.0 seed: ${JSON.stringify(reply).slice(0, 300)}`)
  return id
}

/** The same two workloads in the A2A SDK's shapes (`kind` on messages and parts), `message/send` non-blocking. */
const sdkWorkloads = (knownId) => {
  const headers = { "content-type": "application/json" }
  const params = {
    message: { kind: "message", messageId: "bench-0", role: "user", parts: [{ kind: "text", text: "/complete hi" }] },
    configuration: { blocking: false }
  }
  const send = uniqueIds({ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params }) })
  const get = { method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: knownId } }) }
  return { mix: [send, get], send: [send], get: [get] }
}

/**
 * Whether an answer is a real success (accepted task / found task): a JSON-RPC result (0.3, 1.0),
 * or for the REST rows a 200 whose body is the SendMessageResponse (`{"task":...}`) or the Task.
 */
const answered = (kind, status, text) => {
  if (status !== 200 || text.includes(`"rejected"`) || text.includes("TASK_STATE_REJECTED") || text.includes("TASK_STATE_FAILED")) return false
  if (kind === "rest-send1") return text.startsWith(`{"task":`)
  if (kind === "rest-get1") return text.startsWith(`{"id":`)
  // The store part: a blocking SendMessage answers the completed task; GetTask the working one.
  if (kind === "store-send") return text.includes(`"result"`) && !text.includes(`"error":`) && text.includes("TASK_STATE_COMPLETED")
  if (kind === "store-get") return text.includes(`"result"`) && !text.includes(`"error":`) && text.includes("TASK_STATE_WORKING")
  return text.includes(`"result"`) && !(V1_WORKLOADS.has(kind) && text.includes(`"error":`))
}

/** Warm-up run that also checks every answer is a real success; returns the mean answer size (bytes of body). */
const warmUp = async (server, requests, kind) => {
  const problems = { count: 0, sample: "" }
  let bytes = 0
  let answers = 0
  await cannon(server.url, requests, WARMUP, (status, body) => {
    const text = String(body)
    bytes += Buffer.byteLength(text)
    answers++
    if (!answered(kind, status, text)) {
      problems.count++
      problems.sample ||= `${status} ${text.slice(0, 200)}`
    }
  })
  if (problems.count > 0) throw new Error(`${server.name} ${kind}: ${problems.count} bad answers during warm-up, e.g. ${problems.sample}`)
  return answers === 0 ? Number.NaN : bytes / answers
}

/** CPU time (user + system, µs) the child process has used so far, from /proc (Linux). */
const cpuMicros = (pid) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}
const CLOCK_TICKS = 100

/** One measured slice of SECONDS against a server; server CPU from /proc. */
const measure = async (server, requests) => {
  const cpuBefore = cpuMicros(server.child.pid)
  const result = await cannon(server.url, requests, SECONDS)
  const cpu = cpuMicros(server.child.pid) - cpuBefore
  if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0) {
    throw new Error(`${server.name}: errors=${result.errors} non2xx=${result.non2xx} timeouts=${result.timeouts}`)
  }
  return {
    rps: result.requests.total / SECONDS,
    serverCpuUsPerReq: cpu / result.requests.total,
    serverCpuShare: cpu / (SECONDS * 1e6),
    p50ms: result.latency.p50,
    p99ms: result.latency.p99
  }
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2
}

/**
 * The servers run side by side, idle but for the slice being measured: a warm-up (with every
 * answer checked) for each, then rounds of one slice per server, so slow drifts in the machine's
 * load hit all alike. 0.3 workloads: PAIRS × (raw, sdk, door); the ratios are mean door req/s over
 * mean raw (sdk) req/s. 1.0 workloads: PAIRS × (sdk1, door), the ratio mean door over mean sdk1.
 */
const throughput = async () => {
  const has03 = WORKLOADS.some((w) => V03_WORKLOADS.has(w))
  const has1 = WORKLOADS.some((w) => V1_WORKLOADS.has(w))
  const door = await startDoor()
  const doorB = DOOR_B === "" ? undefined : await startDoor([], DOOR_B, DOOR_B_LABEL)
  const raw = has03 ? await startRaw() : undefined
  const sdk = has03 ? await startSdk() : undefined
  const sdk1 = has1 ? await startSdk1() : undefined
  try {
    // The door's known task: a running "/forever" task (running tasks are never evicted); the 1.0
    // rows' is another one, started over 1.0.
    const doorLoadsOf = async (url) => ({
      ...(has03 ? workloads((await rpc(url, "message/send", message("/forever", -1))).result.id) : {}),
      ...(has1 ? v1Workloads(await seedV1(url)) : {})
    })
    const doorLoads = await doorLoadsOf(door.url)
    const doorBLoads = doorB === undefined ? undefined : await doorLoadsOf(doorB.url)
    const rawLoads = has03 ? workloads(raw.known_task) : {}
    const sdkLoads = has03 ? sdkWorkloads(sdk.known_task) : {}
    const sdk1Loads = has1 ? v1Workloads(sdk1.known_task) : {}
    const out = {}
    for (const kind of WORKLOADS) {
      const v1 = V1_WORKLOADS.has(kind)
      // The baselines this workload is measured against, in the order each round measures them.
      const baselines = v1 ? [{ key: "sdk1", server: sdk1, loads: sdk1Loads }] : [{ key: "raw", server: raw, loads: rawLoads }, { key: "sdk", server: sdk, loads: sdkLoads }]
      const loadAtStart = load1()
      const bytes = {}
      for (const b of baselines) bytes[b.key] = await warmUp(b.server, b.loads[kind], kind)
      bytes.door = await warmUp(door, doorLoads[kind], kind)
      if (doorB !== undefined) bytes.doorB = await warmUp(doorB, doorBLoads[kind], kind)
      const pairs = []
      for (let i = 0; i < (isGet(kind) ? GET_PAIRS : PAIRS); i++) {
        const base = {}
        for (const b of baselines) base[b.key] = await measure(b.server, b.loads[kind])
        // With a second door, the two swap places every round (A B, B A, ...): neither always runs after the SDK.
        const bFirst = doorB !== undefined && i % 2 === 1
        const b0 = bFirst ? await measure(doorB, doorBLoads[kind]) : undefined
        const d = await measure(door, doorLoads[kind])
        const b = doorB === undefined ? undefined : b0 ?? await measure(doorB, doorBLoads[kind])
        const at = { load1: load1() }
        if (v1) {
          const k = base.sdk1
          pairs.push({ sdk1: k, door: d, sdk1Ratio: d.rps / k.rps, ...at, ...(b === undefined ? {} : { doorB: b, bSdk1Ratio: b.rps / k.rps, doorOverB: d.rps / b.rps }) })
          log(`throughput ${kind} round ${i + 1} (load ${at.load1}): sdk1 ${Math.round(k.rps)} req/s (${round(k.serverCpuUsPerReq, 1)} µs CPU/req), door ${Math.round(d.rps)} req/s (${round(d.serverCpuUsPerReq, 1)} µs CPU/req); door/sdk1 ${round(d.rps / k.rps)}` +
            (b === undefined ? "" : `; ${DOOR_B_LABEL} ${Math.round(b.rps)} req/s (${round(b.serverCpuUsPerReq, 1)} µs CPU/req), ${DOOR_B_LABEL}/sdk1 ${round(b.rps / k.rps)}, door/${DOOR_B_LABEL} ${round(d.rps / b.rps)}`))
          continue
        }
        const r = base.raw
        const k = base.sdk
        pairs.push({ raw: r, sdk: k, door: d, ratio: d.rps / r.rps, sdkRatio: d.rps / k.rps, ...at, ...(b === undefined ? {} : { doorB: b, bRatio: b.rps / r.rps, bSdkRatio: b.rps / k.rps, doorOverB: d.rps / b.rps }) })
        log(`throughput ${kind} round ${i + 1} (load ${at.load1}): raw ${Math.round(r.rps)} req/s (${round(r.serverCpuUsPerReq, 1)} µs CPU/req), sdk ${Math.round(k.rps)} req/s (${round(k.serverCpuUsPerReq, 1)} µs CPU/req), door ${Math.round(d.rps)} req/s (${round(d.serverCpuUsPerReq, 1)} µs CPU/req); door/sdk ${round(d.rps / k.rps)}, door/raw ${round(d.rps / r.rps)}` +
          (b === undefined ? "" : `; ${DOOR_B_LABEL} ${Math.round(b.rps)} req/s (${round(b.serverCpuUsPerReq, 1)} µs CPU/req), ${DOOR_B_LABEL}/sdk ${round(b.rps / k.rps)}, door/${DOOR_B_LABEL} ${round(d.rps / b.rps)}`))
      }
      const mean = (f) => pairs.reduce((s, p) => s + f(p), 0) / pairs.length
      const bSummary = doorB === undefined ? {} : {
        doorB: {
          label: DOOR_B_LABEL,
          main: DOOR_B,
          rps: mean((p) => p.doorB.rps),
          cpuUsPerReq: mean((p) => p.doorB.serverCpuUsPerReq),
          ...(v1
            ? { sdk1Ratio: mean((p) => p.doorB.rps) / mean((p) => p.sdk1.rps) }
            : { sdkRatio: mean((p) => p.doorB.rps) / mean((p) => p.sdk.rps), rawRatio: mean((p) => p.doorB.rps) / mean((p) => p.raw.rps) }),
          doorOverB: pairs.map((p) => p.doorOverB)
        }
      }
      if (v1) {
        const sdk1Ratio = mean((p) => p.door.rps) / mean((p) => p.sdk1.rps)
        out[kind] = {
          workload: kind,
          loadAtStart,
          ...bSummary,
          baseline: "@a2a-js/sdk 1.x (bench/sdk1-server.mjs)",
          request: doorLoads[kind][0],
          responseBytes: bytes,
          sdk1Rps: mean((p) => p.sdk1.rps),
          doorRps: mean((p) => p.door.rps),
          sdk1Ratio,
          medianPairRatio: median(pairs.map((p) => p.sdk1Ratio)),
          sdk1Ratios: pairs.map((p) => p.sdk1Ratio),
          target: V1_TARGETS[kind],
          targetMet: sdk1Ratio >= V1_TARGETS[kind],
          sdk1CpuUsPerReq: mean((p) => p.sdk1.serverCpuUsPerReq),
          doorCpuUsPerReq: mean((p) => p.door.serverCpuUsPerReq),
          sdk1CpuRatio: mean((p) => p.sdk1.serverCpuUsPerReq) / mean((p) => p.door.serverCpuUsPerReq),
          doorP99ms: mean((p) => p.door.p99ms),
          sdk1P99ms: mean((p) => p.sdk1.p99ms),
          pairs
        }
        continue
      }
      out[kind] = {
        loadAtStart,
        ...bSummary,
        responseBytes: bytes,
        rawRps: mean((p) => p.raw.rps),
        sdkRps: mean((p) => p.sdk.rps),
        doorRps: mean((p) => p.door.rps),
        ratio: mean((p) => p.door.rps) / mean((p) => p.raw.rps),
        sdkRatio: mean((p) => p.door.rps) / mean((p) => p.sdk.rps),
        medianPairRatio: median(pairs.map((p) => p.ratio)),
        ratios: pairs.map((p) => p.ratio),
        sdkRatios: pairs.map((p) => p.sdkRatio),
        rawCpuUsPerReq: mean((p) => p.raw.serverCpuUsPerReq),
        sdkCpuUsPerReq: mean((p) => p.sdk.serverCpuUsPerReq),
        doorCpuUsPerReq: mean((p) => p.door.serverCpuUsPerReq),
        cpuRatio: mean((p) => p.raw.serverCpuUsPerReq) / mean((p) => p.door.serverCpuUsPerReq),
        sdkCpuRatio: mean((p) => p.sdk.serverCpuUsPerReq) / mean((p) => p.door.serverCpuUsPerReq),
        doorP99ms: mean((p) => p.door.p99ms),
        sdkP99ms: mean((p) => p.sdk.p99ms),
        rawP99ms: mean((p) => p.raw.p99ms),
        pairs
      }
    }
    const result = { date: new Date().toISOString(), workloads: WORKLOADS }
    for (const kind of WORKLOADS) result[WORKLOAD_KEYS[kind]] = out[kind]
    return result
  } finally {
    await door.stop()
    await doorB?.stop()
    await raw?.stop()
    await sdk?.stop()
    await sdk1?.stop()
  }
}

// ---------------------------------------------------------------------------------------------
// 1b. The durable store's cost (issue 20): message/send blocking and tasks/get, the door with its
// SQLite store and in memory, the SDK 1.x server with its SQLite store (and in memory), interleaved

/** The store part's servers, by name; each started in its own fresh MURMUR_HOME (startServer). */
const STORE_SERVER_KINDS = {
  // `--max-active`/`--queue-depth` as every door here gets them (startDoor).
  "door-memory": { label: "door memory", start: () => startServer("door-memory", ["bench/store-door.mjs", "--store", "memory", "--max-active", "100000", "--queue-depth", "100000"]) },
  // The durable path (journal, group commit, nothing visible before it is committed) over tables held in memory: no SQL.
  "door-journal": { label: "door journal-memory", start: () => startServer("door-journal", ["bench/store-door.mjs", "--store", "journal-memory", "--max-active", "100000", "--queue-depth", "100000"]) },
  "door-sqlite": {
    label: "door sqlite",
    start: () =>
      startServer("door-sqlite", (home) => ["bench/store-door.mjs", "--store", `sqlite:${join(home, "store.db")}`, "--max-active", "100000", "--queue-depth", "100000"], {
        nodeFlags: STORE_PROFILE === "" ? [] : ["--cpu-prof", `--cpu-prof-dir=${STORE_PROFILE}`]
      }),
    file: (server) => join(server.home, "store.db")
  },
  "sdk1-sqlite": {
    label: "sdk1 sqlite",
    start: () => startServer("sdk1-sqlite", (home) => ["bench/sdk1-server.mjs", "--store", `sqlite:${join(home, "a2a.db")}`, "--sqlite-pragmas", STORE_SDK_PRAGMAS]),
    file: (server) => join(server.home, "a2a.db")
  },
  "sdk1-memory": { label: "sdk1 memory", start: () => startServer("sdk1-memory", ["bench/sdk1-server.mjs"]) },
  // The CLI's own door (`serve`, the echo capsule, no store): that bench/store-door.mjs's memory door is the same door.
  "door-serve": { label: "serve (CLI)", start: () => startDoor([], "dist/main.js", "door-serve") }
}
for (const name of STORE_SERVERS) if (STORE_SERVER_KINDS[name] === undefined) throw new Error(`BENCH_STORE_SERVERS: unknown server ${name}`)
for (const w of STORE_WORKLOADS) if (w !== "send" && w !== "get") throw new Error(`BENCH_STORE_WORKLOADS: unknown workload ${w}`)
const STORE_LABELS = { send: "message/send blocking (1.0 SendMessage, /complete)", get: "tasks/get (1.0 GetTask, a working task)" }

/** The store part's requests, byte for byte the same for every server: A2A 1.0 JSON-RPC. */
const storeWorkloads = (knownId) => {
  const headers = { "content-type": "application/json", "a2a-version": "1.0" }
  const params = { message: { messageId: "bench-0", role: "ROLE_USER", parts: [{ text: "/complete hi" }] }, configuration: { returnImmediately: false } }
  return {
    send: [uniqueIds({ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params }) })],
    get: [{ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "GetTask", params: { id: knownId } }) }]
  }
}

/** Bytes of a SQLite file with its WAL beside it (0 for what is not there). */
const sqliteBytes = (file) => {
  let total = 0
  for (const f of [file, `${file}-wal`]) {
    try {
      total += statSync(f).size
    } catch {}
  }
  return total
}

/**
 * All servers side by side, idle but for the slice being measured: per workload a checked warm-up
 * of each, then rounds of one slice per server, the order rotated by one each round (so none always
 * runs first or right after another). Ratios are of mean req/s over the rounds; per-round ratios
 * are kept beside them.
 */
const storeCost = async () => {
  if (STORE_PROFILE !== "") mkdirSync(STORE_PROFILE, { recursive: true })
  const servers = {}
  try {
    for (const name of STORE_SERVERS) servers[name] = await STORE_SERVER_KINDS[name].start()
    const loads = {}
    for (const name of STORE_SERVERS) {
      const s = servers[name]
      loads[name] = storeWorkloads(s.known_task ?? await seedV1(s.url))
    }
    const out = { date: new Date().toISOString(), servers: STORE_SERVERS, sdkPragmas: STORE_SDK_PRAGMAS, workloads: STORE_WORKLOADS, targets: STORE_TARGETS }
    for (const kind of STORE_WORKLOADS) {
      const loadAtStart = load1()
      const bytes = {}
      for (const name of STORE_SERVERS) bytes[name] = await warmUp(servers[name], loads[name][kind], `store-${kind}`)
      const rounds = []
      const n = kind === "get" ? GET_PAIRS : PAIRS
      for (let i = 0; i < n; i++) {
        const shift = i % STORE_SERVERS.length
        const order = [...STORE_SERVERS.slice(shift), ...STORE_SERVERS.slice(0, shift)]
        const round_ = { order }
        for (const name of order) round_[name] = await measure(servers[name], loads[name][kind])
        round_.load1 = load1()
        const ratio = (a, b) => (round_[a] !== undefined && round_[b] !== undefined ? round_[a].rps / round_[b].rps : undefined)
        round_.sqliteOverMemory = ratio("door-sqlite", "door-memory")
        round_.sqliteOverSdk1Sqlite = ratio("door-sqlite", "sdk1-sqlite")
        rounds.push(round_)
        log(`store ${kind} round ${i + 1} (load ${round_.load1}): ` +
          STORE_SERVERS.map((name) => `${STORE_SERVER_KINDS[name].label} ${Math.round(round_[name].rps)} req/s (${round(round_[name].serverCpuUsPerReq, 1)} µs CPU/req)`).join(", ") +
          (round_.sqliteOverMemory === undefined ? "" : `; door sqlite/memory ${round(round_.sqliteOverMemory)}`) +
          (round_.sqliteOverSdk1Sqlite === undefined ? "" : `; door sqlite/sdk1 sqlite ${round(round_.sqliteOverSdk1Sqlite)}`))
      }
      const mean = (f) => rounds.reduce((sum, r) => sum + f(r), 0) / rounds.length
      const per = {}
      for (const name of STORE_SERVERS) {
        per[name] = {
          label: STORE_SERVER_KINDS[name].label,
          rps: mean((r) => r[name].rps),
          cpuUsPerReq: mean((r) => r[name].serverCpuUsPerReq),
          cpuShare: mean((r) => r[name].serverCpuShare),
          p50ms: mean((r) => r[name].p50ms),
          p99ms: mean((r) => r[name].p99ms),
          responseBytes: bytes[name]
        }
      }
      const ratioOf = (a, b) => (per[a] !== undefined && per[b] !== undefined ? per[a].rps / per[b].rps : undefined)
      const w = {
        workload: kind,
        label: STORE_LABELS[kind],
        loadAtStart,
        request: loads[STORE_SERVERS[0]][kind][0],
        servers: per,
        sqliteOverMemory: ratioOf("door-sqlite", "door-memory"),
        sqliteOverMemoryRounds: rounds.map((r) => r.sqliteOverMemory),
        sqliteOverSdk1Sqlite: ratioOf("door-sqlite", "sdk1-sqlite"),
        sqliteOverSdk1SqliteRounds: rounds.map((r) => r.sqliteOverSdk1Sqlite),
        sdk1SqliteOverMemory: ratioOf("sdk1-sqlite", "sdk1-memory"),
        memoryOverServe: ratioOf("door-memory", "door-serve"),
        // The journal's path alone (tables in memory) over the memory door, and the SQLite door over it: the two parts of the store's cost.
        journalOverMemory: ratioOf("door-journal", "door-memory"),
        sqliteOverJournal: ratioOf("door-sqlite", "door-journal"),
        // CPU per request of the SQLite door over the memory door's: what the store adds to each request.
        sqliteCpuOverMemory: per["door-sqlite"] !== undefined && per["door-memory"] !== undefined ? per["door-sqlite"].cpuUsPerReq / per["door-memory"].cpuUsPerReq : undefined,
        rounds
      }
      w.targets = {
        ...(kind === "send" && w.sqliteOverMemory !== undefined ? { sqliteOverMemory: { target: STORE_TARGETS.sqliteOverMemory, met: w.sqliteOverMemory >= STORE_TARGETS.sqliteOverMemory } } : {}),
        ...(w.sqliteOverSdk1Sqlite !== undefined ? { sqliteOverSdk1Sqlite: { target: STORE_TARGETS.sqliteOverSdk1Sqlite, met: w.sqliteOverSdk1Sqlite >= STORE_TARGETS.sqliteOverSdk1Sqlite } } : {})
      }
      out[kind] = w
    }
    out.fileBytes = {}
    for (const name of STORE_SERVERS) {
      const file = STORE_SERVER_KINDS[name].file
      if (file !== undefined) out.fileBytes[name] = sqliteBytes(file(servers[name]))
    }
    return out
  } finally {
    for (const s of Object.values(servers)) await s.stop()
  }
}

// ---------------------------------------------------------------------------------------------
// 2. SSE fan-out: OBSERVERS stream/watch observers while FANOUT_TASKS stamp tasks emit frames

const makeObserver = (url, index, total, latencies, onDone) => {
  const state = { index, acked: false, frames: 0, last: 0, lost: 0, duplicated: 0, lagged: 0, laggedMissed: 0, gaps: 0, closed: false, done: false, error: undefined }
  let buffer = ""
  let stamped = 0
  const base = index * total
  const finish = () => {
    if (state.done) return
    state.done = true
    onDone(state)
  }
  const req = http.request(url, {
    method: "POST",
    agent: false,
    headers: { "content-type": "application/json" }
  }, (res) => {
    if (res.statusCode !== 200) state.error = `status ${res.statusCode}`
    res.setEncoding("utf8")
    res.on("data", (chunk) => {
      const arrived = process.hrtime.bigint()
      buffer += chunk
      let end
      let start = 0
      while ((end = buffer.indexOf("\n\n", start)) >= 0) {
        const block = buffer.slice(start, end)
        start = end + 2
        if (block.startsWith(":")) continue
        if (block.startsWith("id: ")) {
          const nl = block.indexOf("\n")
          const id = Number(block.slice(4, nl))
          if (id <= state.last) state.duplicated++
          else {
            if (id > state.last + 1) state.lost += id - state.last - 1
            state.last = id
          }
          state.frames++
          if (block.startsWith("event: text", nl + 1)) {
            const at = block.indexOf(`"text":"`, nl)
            const stop = block.indexOf(" ", at + 8)
            if (at >= 0 && stop > at + 8) {
              const emitted = BigInt(block.slice(at + 8, stop))
              latencies[base + stamped++] = Number(arrived - emitted) / 1e6
            }
          }
          if (state.last >= total) finish()
          continue
        }
        if (block.startsWith("event: connection-ack")) state.acked = true
        else if (block.startsWith("event: lagged")) {
          state.lagged++
          const m = /"missed":(\d+)/.exec(block)
          if (m) state.laggedMissed += Number(m[1])
        } else if (block.startsWith("event: gap")) state.gaps++
        else if (block.startsWith("event: capsule-closed")) state.closed = true
      }
      buffer = buffer.slice(start)
    })
    res.on("end", finish)
    res.on("error", (error) => {
      state.error = String(error)
      finish()
    })
  })
  req.on("error", (error) => {
    state.error = String(error)
    finish()
  })
  req.end(JSON.stringify({ jsonrpc: "2.0", id: `watch-${index}`, method: "stream/watch" }))
  state.stamped = () => stamped
  state.abort = () => req.destroy()
  return state
}

/**
 * FANOUT_PAIRS × (raw, door): each run a fresh server (ids from 1), OBSERVERS observers, the same
 * emission. The figure compared is server CPU per delivery (CPU time / frames delivered), which
 * the pacing does not change; latency and emission rate are reported next to it.
 */
const fanout = async () => {
  const runs = []
  for (let i = 0; i < FANOUT_PAIRS; i++) {
    const raw = await fanoutRun("fanout-raw", ["bench/fanout-raw-server.mjs"])
    const door = await fanoutRun("fanout-door", ["bench/fanout-server.mjs"])
    runs.push({ raw, door, cpuRatio: door.cpuUsPerDelivery / raw.cpuUsPerDelivery })
    log(`fan-out pair ${i + 1}: raw ${round(raw.cpuUsPerDelivery)} µs CPU/delivery (p50 ${round(raw.latencyMs.p50)} ms, p99 ${round(raw.latencyMs.p99)} ms, ${Math.round(raw.emitRate)} frames/s), door ${round(door.cpuUsPerDelivery)} µs CPU/delivery (p50 ${round(door.latencyMs.p50)} ms, p99 ${round(door.latencyMs.p99)} ms, ${Math.round(door.emitRate)} frames/s); CPU ratio door/raw ${round(door.cpuUsPerDelivery / raw.cpuUsPerDelivery)}`)
  }
  const mean = (f) => runs.reduce((sum, r) => sum + f(r), 0) / runs.length
  const door = runs.map((r) => r.door)
  const sum = (key) => door.reduce((total, r) => total + r[key], 0)
  return {
    observers: OBSERVERS,
    frames: door[0].frames,
    pairs: runs,
    doorCpuUsPerDelivery: mean((r) => r.door.cpuUsPerDelivery),
    rawCpuUsPerDelivery: mean((r) => r.raw.cpuUsPerDelivery),
    cpuRatio: mean((r) => r.door.cpuUsPerDelivery) / mean((r) => r.raw.cpuUsPerDelivery),
    doorP50ms: median(door.map((r) => r.latencyMs.p50)),
    doorP99ms: median(door.map((r) => r.latencyMs.p99)),
    rawP50ms: median(runs.map((r) => r.raw.latencyMs.p50)),
    rawP99ms: median(runs.map((r) => r.raw.latencyMs.p99)),
    doorEmitRate: mean((r) => r.door.emitRate),
    rawEmitRate: mean((r) => r.raw.emitRate),
    // Correctness over every door run (the raw server does no lag accounting).
    lost: sum("lost"),
    duplicated: sum("duplicated"),
    laggedEvents: sum("laggedEvents"),
    laggedObservers: sum("laggedObservers"),
    undelivered: sum("undelivered"),
    complete: Math.min(...door.map((r) => r.complete)),
    rawComplete: Math.min(...runs.map((r) => r.raw.complete))
  }
}

const fanoutRun = async (name, args) => {
  const server = await startServer(name, args)
  const total = FANOUT_TASKS * (FANOUT_CHUNKS + 3) // working status, chunks, final text, completed status
  const latencies = new Float64Array(OBSERVERS * total).fill(Number.NaN)
  const observers = []
  let finished = 0
  let allDone
  const done = new Promise((resolve) => (allDone = resolve))
  try {
    for (let i = 0; i < OBSERVERS; i++) {
      observers.push(makeObserver(server.url, i, total, latencies, () => {
        if (++finished === OBSERVERS) allDone()
      }))
      if (i % 50 === 49) await sleep(20)
    }
    const ackDeadline = Date.now() + 15_000
    while (observers.some((o) => !o.acked) && Date.now() < ackDeadline) await sleep(20)
    const acked = observers.filter((o) => o.acked).length
    if (acked < OBSERVERS) throw new Error(`only ${acked}/${OBSERVERS} observers acknowledged`)
    log(`fan-out: ${OBSERVERS} observers connected; emitting ${total} frames from ${FANOUT_TASKS} tasks`)

    const t0 = process.hrtime.bigint()
    const serverCpu0 = cpuMicros(server.child.pid)
    const clientCpu0 = process.cpuUsage()
    const tasks = await Promise.all(
      Array.from({ length: FANOUT_TASKS }, (_, i) =>
        rpc(server.url, "message/send", message(`stamp ${FANOUT_CHUNKS} ${FANOUT_EVERY_MS} ${FANOUT_BATCH}`, i)))
    )
    if (tasks.some((t) => t.result?.status?.state !== "submitted")) throw new Error(`a stamp task was not accepted: ${JSON.stringify(tasks)}`)
    const timeout = sleep(FANOUT_TIMEOUT_S * 1000).then(() => "timeout")
    const outcome = await Promise.race([done.then(() => "done"), timeout])
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9
    const serverCpu = (cpuMicros(server.child.pid) - serverCpu0) / 1e6
    const clientCpu = process.cpuUsage(clientCpu0)
    const states = await Promise.all(tasks.map((t) => rpc(server.url, "tasks/get", { id: t.result.id })))
    for (const o of observers) o.abort()

    const lat = []
    for (let i = 0; i < latencies.length; i++) if (!Number.isNaN(latencies[i])) lat.push(latencies[i])
    const sum = (key) => observers.reduce((s, o) => s + o[key], 0)
    const result = {
      observers: OBSERVERS,
      frames: total,
      tasks: FANOUT_TASKS,
      pacing: { chunksPerTask: FANOUT_CHUNKS, everyMs: FANOUT_EVERY_MS, batch: FANOUT_BATCH },
      outcome,
      seconds,
      emitRate: total / seconds,
      serverCpuSeconds: serverCpu,
      observerCpuSeconds: (clientCpu.user + clientCpu.system) / 1e6,
      deliveries: sum("frames"),
      deliveryRate: sum("frames") / seconds,
      complete: observers.filter((o) => o.last === total && o.frames === total).length,
      // Holes in an observer's id sequence: frames it will never get.
      lost: sum("lost"),
      // Frames an observer had not received yet when the run ended (only on a timeout).
      undelivered: observers.reduce((s, o) => s + (total - o.last), 0),
      duplicated: sum("duplicated"),
      laggedEvents: sum("lagged"),
      laggedMissed: sum("laggedMissed"),
      laggedObservers: observers.filter((o) => o.lagged > 0).length,
      gapEvents: sum("gaps"),
      errors: observers.filter((o) => o.error !== undefined).map((o) => o.error).slice(0, 5),
      taskStates: states.map((s) => s.result?.status?.state),
      latencyMs: summarize(lat)
    }
    result.cpuUsPerDelivery = (serverCpu * 1e6) / result.deliveries
    log(`fan-out ${name}: server CPU ${round(result.serverCpuSeconds)} s, observers' CPU ${round(result.observerCpuSeconds)} s`)
    log(`fan-out ${name}: ${outcome} in ${round(seconds)} s; complete ${result.complete}/${OBSERVERS}; lost ${result.lost}; dup ${result.duplicated}; lagged ${result.laggedEvents}; p50 ${round(result.latencyMs.p50)} ms p99 ${round(result.latencyMs.p99)} ms`)
    return result
  } finally {
    for (const o of observers) o.abort()
    await server.stop()
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Cancel latency: tasks/cancel round trip for running "/forever" tasks

const cancelLatency = async () => {
  const door = await startDoor()
  try {
    const ids = []
    for (let i = 0; i < CANCEL_N; i++) ids.push((await rpc(door.url, "message/send", message("/forever", i))).result.id)
    // Wait until every task runs (its fiber exists), so each cancel interrupts a live fiber.
    for (const id of ids) {
      for (let tries = 0; ; tries++) {
        const state = (await rpc(door.url, "tasks/get", { id })).result?.status?.state
        if (state === "working") break
        if (tries > 200) throw new Error(`task ${id} is ${state}, not working`)
        await sleep(5)
      }
    }
    await rpc(door.url, "tasks/get", { id: ids[0] }) // warm connection
    const times = []
    let wrong = 0
    for (const id of ids) {
      const t = process.hrtime.bigint()
      const reply = await rpc(door.url, "tasks/cancel", { id })
      times.push(Number(process.hrtime.bigint() - t) / 1e6)
      if (reply.result?.status?.state !== "canceled") wrong++
    }
    const result = { n: CANCEL_N, notCanceled: wrong, latencyMs: summarize(times) }
    log(`cancel: p50 ${round(result.latencyMs.p50)} ms p99 ${round(result.latencyMs.p99)} ms (${wrong} answers not canceled)`)
    return result
  } finally {
    await door.stop()
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Resource plane: GET of a 1 MiB exported file, door vs a plain node:http static answer

const resourceRead = async () => {
  const workdir = mkdtempSync(join(os.tmpdir(), "bench-resource-"))
  mkdirSync(join(workdir, "out"), { recursive: true })
  const file = join(workdir, "out", "one-mib.bin")
  writeFileSync(file, Buffer.alloc(1024 * 1024, 7))
  // examples/hello exports out/ read-only; its session lives in the temporary workdir.
  const door = await startServer("door", ["dist/main.js", "serve", "examples/hello", "--json", "--workdir", workdir])
  const plain = await startServer("static", ["bench/static-server.mjs", file])
  try {
    const doorReq = [{ method: "GET", path: "/resources/files/one-mib.bin" }]
    const plainReq = [{ method: "GET", path: "/one-mib.bin" }]
    await cannon(door.url, doorReq, WARMUP)
    await cannon(plain.url, plainReq, WARMUP)
    const pairs = []
    for (let i = 0; i < GET_PAIRS; i++) {
      const r = await measure(plain, plainReq)
      const d = await measure(door, doorReq)
      pairs.push({ plain: r, door: d, ratio: d.rps / r.rps })
      log(`resource 1 MiB pair ${i + 1}: static ${Math.round(r.rps)} req/s (${round(r.serverCpuUsPerReq, 1)} µs CPU/req), door ${Math.round(d.rps)} req/s (${round(d.serverCpuUsPerReq, 1)} µs CPU/req)`)
    }
    const mean = (f) => pairs.reduce((s, p) => s + f(p), 0) / pairs.length
    return {
      bytes: 1024 * 1024,
      plainRps: mean((p) => p.plain.rps),
      doorRps: mean((p) => p.door.rps),
      ratio: mean((p) => p.door.rps) / mean((p) => p.plain.rps),
      plainCpuUsPerReq: mean((p) => p.plain.serverCpuUsPerReq),
      doorCpuUsPerReq: mean((p) => p.door.serverCpuUsPerReq),
      doorP99ms: mean((p) => p.door.p99ms),
      plainP99ms: mean((p) => p.plain.p99ms),
      pairs
    }
  } finally {
    await door.stop()
    await plain.stop()
    rmSync(workdir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const started = Date.now()
  const results = {
    date: new Date().toISOString(),
    loadAverage: os.loadavg().map((x) => round(x)),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}` },
    settings: { connections: CONNECTIONS, sliceSeconds: SECONDS, warmupSeconds: WARMUP, mixPairs: PAIRS, getPairs: GET_PAIRS, nodeFlags: NODE_FLAGS }
  }
  if (PARTS.has("throughput")) results.throughput = await throughput()
  if (PARTS.has("store")) results.store = await storeCost()
  if (PARTS.has("fanout")) results.fanout = await fanout()
  if (PARTS.has("cancel")) results.cancel = await cancelLatency()
  if (PARTS.has("resource")) results.resource = await resourceRead()
  results.wallSeconds = (Date.now() - started) / 1000

  const rows = []
  const t = results.throughput
  if (t) {
    for (const kind of ["mix", "send", "get"]) {
      const label = WORKLOAD_LABELS[kind]
      const w = t[WORKLOAD_KEYS[kind]]
      if (w === undefined || !WORKLOADS.includes(kind)) continue
      if (w.doorB !== undefined) rows.push([`  ${w.doorB.label} ${label}`, `${Math.round(w.doorB.rps)} req/s, ${round(w.doorB.cpuUsPerReq, 1)} µs CPU/req`, `${w.doorB.label}/sdk ${round(w.doorB.sdkRatio)}, ${w.doorB.label}/raw ${round(w.doorB.rawRatio)}; door/${w.doorB.label} per round ${w.doorB.doorOverB.map((r) => round(r)).join(", ")}`])
      rows.push([`throughput ${label}, ${CONNECTIONS} conns`, `door ${Math.round(w.doorRps)} req/s, sdk ${Math.round(w.sdkRps)} req/s, raw ${Math.round(w.rawRps)} req/s`, `door/sdk ${round(w.sdkRatio)} (rounds ${w.sdkRatios.map((r) => round(r)).join(", ")}), door/raw ${round(w.ratio)} (rounds ${w.ratios.map((r) => round(r)).join(", ")}); server CPU/req door ${round(w.doorCpuUsPerReq, 1)} µs, sdk ${round(w.sdkCpuUsPerReq, 1)} µs, raw ${round(w.rawCpuUsPerReq, 1)} µs`])
    }
  }
  if (t) {
    for (const kind of ["send1", "get1", "rest-send1", "rest-get1"]) {
      const w = t[WORKLOAD_KEYS[kind]]
      if (w === undefined || !WORKLOADS.includes(kind)) continue
      const label = WORKLOAD_LABELS[kind]
      if (w.doorB !== undefined) rows.push([`  ${w.doorB.label} ${label}`, `${Math.round(w.doorB.rps)} req/s, ${round(w.doorB.cpuUsPerReq, 1)} µs CPU/req`, `${w.doorB.label}/sdk1 ${round(w.doorB.sdk1Ratio)}; door/${w.doorB.label} per round ${w.doorB.doorOverB.map((r) => round(r)).join(", ")}`])
      rows.push([`throughput ${label}, ${CONNECTIONS} conns`, `door ${Math.round(w.doorRps)} req/s, sdk1 ${Math.round(w.sdk1Rps)} req/s`, `door/sdk1 ${round(w.sdk1Ratio, 3)} (rounds ${w.sdk1Ratios.map((r) => round(r)).join(", ")}; target ≥ ${w.target}: ${w.targetMet ? "met" : "MISSED"}); server CPU/req door ${round(w.doorCpuUsPerReq, 1)} µs, sdk1 ${round(w.sdk1CpuUsPerReq, 1)} µs; p99 door ${round(w.doorP99ms)} ms, sdk1 ${round(w.sdk1P99ms)} ms`])
    }
  }
  const st = results.store
  if (st) {
    for (const kind of st.workloads) {
      const w = st[kind]
      const servers = w.servers
      const fig = (name) => `${servers[name].label} ${Math.round(servers[name].rps)} req/s (${round(servers[name].cpuUsPerReq, 1)} µs CPU/req, p99 ${round(servers[name].p99ms)} ms)`
      const verdict = (key) => (w.targets[key] === undefined ? "" : `; target ≥ ${w.targets[key].target}: ${w.targets[key].met ? "met" : "MISSED"}`)
      const ratios = [
        w.sqliteOverMemory === undefined ? undefined : `door sqlite/memory ${round(w.sqliteOverMemory, 3)} (rounds ${w.sqliteOverMemoryRounds.map((r) => round(r)).join(", ")}${verdict("sqliteOverMemory")})`,
        w.sqliteOverSdk1Sqlite === undefined ? undefined : `door sqlite/sdk1 sqlite ${round(w.sqliteOverSdk1Sqlite, 3)} (rounds ${w.sqliteOverSdk1SqliteRounds.map((r) => round(r)).join(", ")}${verdict("sqliteOverSdk1Sqlite")})`,
        w.sqliteCpuOverMemory === undefined ? undefined : `CPU/req door sqlite/memory ${round(w.sqliteCpuOverMemory)}`,
        w.sdk1SqliteOverMemory === undefined ? undefined : `sdk1 sqlite/memory ${round(w.sdk1SqliteOverMemory)}`,
        w.journalOverMemory === undefined ? undefined : `door journal-memory/memory ${round(w.journalOverMemory)}, sqlite/journal-memory ${round(w.sqliteOverJournal)}`,
        w.memoryOverServe === undefined ? undefined : `door memory/serve ${round(w.memoryOverServe)}`
      ].filter((x) => x !== undefined)
      rows.push([`store: ${w.label}, ${CONNECTIONS} conns`, st.servers.map(fig).join(", "), ratios.join("; ")])
    }
  }
  const f = results.fanout
  if (f) {
    rows.push([`SSE fan-out ${f.observers} observers x ${f.frames} frames, ${f.pairs.length} pairs`, `door lost ${f.lost}, duplicated ${f.duplicated}, lagged ${f.laggedEvents} (${f.laggedObservers} observers), complete ${f.complete}/${f.observers}${f.undelivered > 0 ? `, ${f.undelivered} undelivered at timeout` : ""}`, `server CPU/delivery door ${round(f.doorCpuUsPerDelivery)} µs, raw ${round(f.rawCpuUsPerDelivery)} µs (door/raw ${round(f.cpuRatio)}; pairs ${f.pairs.map((p) => round(p.cpuRatio)).join(", ")}); latency median p50/p99 door ${round(f.doorP50ms)}/${round(f.doorP99ms)} ms, raw ${round(f.rawP50ms)}/${round(f.rawP99ms)} ms; emitted door ${Math.round(f.doorEmitRate)}, raw ${Math.round(f.rawEmitRate)} frames/s`])
  }
  const c = results.cancel
  if (c) rows.push([`tasks/cancel of a running task (n=${c.n})`, `${c.notCanceled} not canceled`, `p50 ${round(c.latencyMs.p50)} ms, p99 ${round(c.latencyMs.p99)} ms, max ${round(c.latencyMs.max)} ms`])
  const rr = results.resource
  if (rr) {
    rows.push([`resource plane GET 1 MiB, ${CONNECTIONS} conns`, `door ${Math.round(rr.doorRps)} req/s, node:http static ${Math.round(rr.plainRps)} req/s`, `ratio ${round(rr.ratio)}; server CPU/req door ${round(rr.doorCpuUsPerReq, 1)} µs, static ${round(rr.plainCpuUsPerReq, 1)} µs; p99 door ${round(rr.doorP99ms)} ms, static ${round(rr.plainP99ms)} ms`])
  }
  const width = rows.reduce((w, r) => Math.max(w, r[0].length), 0)
  console.log(`\ndoor benchmark (${results.date}, ${results.machine.cpus} cpus, node ${process.version}, ${round(results.wallSeconds, 0)} s)`)
  for (const r of rows) console.log(`${r[0].padEnd(width)} | ${r[1]} | ${r[2]}`)

  const dir = join(here, "results")
  mkdirSync(dir, { recursive: true })
  const file = env("BENCH_OUT", join(dir, `door-${results.date.slice(0, 10)}.json`))
  // Parts not run this time are kept from an earlier run of the same file (each part carries its own date).
  let kept = {}
  try {
    kept = JSON.parse(readFileSync(file, "utf8"))
  } catch {}
  for (const part of ["throughput", "store", "fanout", "cancel", "resource"]) {
    if (results[part] === undefined && kept[part] !== undefined) results[part] = { ...kept[part], date: kept[part].date ?? kept.date }
  }
  // Likewise throughput workloads not run this time (each keeps the date of the run that measured it).
  if (t && kept.throughput !== undefined) {
    for (const key of Object.values(WORKLOAD_KEYS)) {
      if (t[key] === undefined && kept.throughput[key] !== undefined) t[key] = { date: kept.throughput.date ?? kept.date, ...kept.throughput[key] }
    }
  }
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`results: ${file}`)
  const failed = (f && (f.lost > 0 || f.duplicated > 0 || f.laggedEvents > 0 || f.complete !== f.observers)) || (c && c.notCanceled > 0)
  agent.destroy()
  process.exitCode = failed ? 1 : 0
}

main().catch((error) => {
  console.error(error)
  process.exit(2)
})
