// What one request costs each SQLite store in statements and transactions: starts the door on a
// fresh SQLite file (bench/store-door.mjs) and the SDK 1.x server with its SQLite task store
// (bench/sdk1-server.mjs), each with `--count-sql` (bench/sql-count.mjs), then sends N blocking
// SendMessage requests (bench/door.mjs's store `send` workload, each with its own messageId) over
// 10 connections, then N GetTask of a working task, and prints what reached libsql per request:
// statements executed, transactions (BEGIN; the SDK's writes autocommit, one implicit transaction
// each), prepares, and executions by statement text. Counts are taken (SIGUSR2) before and after
// each workload, so start-up, migrations and the seed task are left out.
// usage: node bench/store-count.mjs [N=5000] [out.json]   (after `npm run build`; out.json: the counts per request as JSON)
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const N = Number(process.argv[2] ?? 5000)
const OUT = process.argv[3]
const results = { date: new Date().toISOString(), loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100), requestsPerWorkload: N, connections: 10, servers: {} }
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const SERVERS = {
  "door sqlite": (home, counts) => ["bench/store-door.mjs", "--store", `sqlite:${join(home, "store.db")}`, "--max-active", "100000", "--queue-depth", "100000", "--count-sql", counts],
  "sdk1 sqlite": (home, counts) => ["bench/sdk1-server.mjs", "--store", `sqlite:${join(home, "a2a.db")}`, "--count-sql", counts]
}

const start = (args, home) =>
  new Promise((resolve, reject) => {
    const env = { ...process.env, MURMUR_HOME: home }
    delete env.MURMUR_STORE
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "ignore"] })
    let out = ""
    child.on("exit", (code) => reject(new Error(`${args[0]} exited (${code})`)))
    child.stdout.on("data", (chunk) => {
      out += chunk
      const line = out.split("\n").find((l) => l.includes(`"listening"`))
      if (line !== undefined) resolve({ child, ...JSON.parse(line) })
    })
  })

const post = (url, body) =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { "content-type": "application/json", "a2a-version": "1.0" } }, (res) => {
      let text = ""
      res.on("data", (c) => (text += c))
      res.on("end", () => resolve(JSON.parse(text)))
    })
    req.on("error", reject)
    req.end(JSON.stringify(body))
  })

const load = (url, request) =>
  new Promise((resolve, reject) => autocannon({ url, connections: 10, amount: N, requests: [request] }, (error, result) => (error ? reject(error) : resolve(result))))

/** The counts as the server has them now (it writes them on SIGUSR2). */
const snapshot = async (child, file) => {
  rmSync(file, { force: true })
  child.kill("SIGUSR2")
  for (let tries = 0; tries < 200; tries++) {
    try {
      return JSON.parse(readFileSync(file, "utf8"))
    } catch {
      await sleep(10)
    }
  }
  throw new Error(`no counts in ${file}`)
}

const headers = { "content-type": "application/json", "a2a-version": "1.0" }
let seq = 0
const send = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "bench-0", role: "ROLE_USER", parts: [{ text: "/complete hi" }] }, configuration: { returnImmediately: false } } })
const [head, tail] = send.split("bench-0")
const sendRequest = { method: "POST", path: "/", headers, body: send, setupRequest: (req) => ({ ...req, body: `${head}m${(++seq).toString(36)}${tail}` }) }
const getRequest = (id) => ({ method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "GetTask", params: { id } }) })

for (const [name, args] of Object.entries(SERVERS)) {
  const home = mkdtempSync(join(os.tmpdir(), "bench-store-count-"))
  const file = join(home, "counts.json")
  const server = await start(args(home, file), home)
  try {
    let known = server.known_task
    if (known === undefined) {
      const seeded = await post(server.url, {
        jsonrpc: "2.0",
        id: 0,
        method: "SendMessage",
        params: { message: { messageId: "seed", role: "ROLE_USER", parts: [{ text: "/forever" }] }, configuration: { returnImmediately: true } }
      })
      known = seeded.result.task.id
    }
    await sleep(100)
    for (const [kind, request] of [["send", sendRequest], ["get", getRequest(known)]]) {
      const before = await snapshot(server.child, file)
      const result = await load(server.url, request)
      await sleep(100)
      const after = await snapshot(server.child, file)
      const n = result.requests.total
      const per = (key) => ((after[key] - before[key]) / n).toFixed(2)
      const byText = {}
      for (const [text, count] of Object.entries(after.byText)) if (count > (before.byText[text] ?? 0)) byText[text] = (count - (before.byText[text] ?? 0)) / n
      results.servers[name] ??= {}
      results.servers[name][kind] = { requests: n, errors: result.errors, non2xx: result.non2xx, statements: Number(per("executed")), begin: Number(per("begin")), commit: Number(per("commit")), prepares: Number(per("prepare")), byText }
      console.log(`${name} ${kind}: ${n} requests (errors ${result.errors}, non-2xx ${result.non2xx}); per request: ${per("executed")} statements, ${per("begin")} BEGIN, ${per("commit")} COMMIT, ${per("prepare")} prepares`)
      for (const [text, count] of Object.entries(after.byText)) {
        const extra = count - (before.byText[text] ?? 0)
        if (extra > 0) console.log(`  ${(extra / n).toFixed(2).padStart(6)}  ${text}`)
      }
    }
  } finally {
    server.child.removeAllListeners("exit")
    server.child.kill("SIGTERM")
    await new Promise((resolve) => server.child.on("exit", resolve))
    rmSync(home, { recursive: true, force: true })
  }
}

if (OUT !== undefined) writeFileSync(OUT, `${JSON.stringify(results, null, 2)}\n`)
