// Prices per-request overhead: each bench/door-variants.mjs variant against the raw server, raw run
// right before each variant run (A B A B ...), same workloads and metrics as bench/door.mjs.
// usage: node bench/variants.mjs [variant ...]   env: BENCH_SECONDS (5) BENCH_ROUNDS (2) VARIANT_LOAD=mix|get
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import http from "node:http"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const LOAD = process.env.VARIANT_LOAD ?? "get"
const variants = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["stock", "adapter"]

const start = (args) => new Promise((resolve, reject) => {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "ignore"] })
  let out = ""
  child.on("exit", (code) => reject(new Error(`exited ${code}`)))
  child.stdout.on("data", (c) => {
    out += c
    const line = out.split("\n").find((l) => l.includes("listening"))
    if (line) {
      child.removeAllListeners("exit")
      resolve({ ...JSON.parse(line), child, stop: () => new Promise((r) => { child.on("exit", r); child.kill("SIGTERM") }) })
    }
  })
})
const post = (url, body) => new Promise((resolve, reject) => {
  const req = http.request(url, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
    let t = ""
    res.on("data", (c) => (t += c)).on("end", () => resolve(JSON.parse(t)))
  })
  req.on("error", reject)
  req.end(body)
})
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(f[11]) + Number(f[12])) * 1e4 // µs (100 ticks/s)
}
const send = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { messageId: "m", role: "user", parts: [{ text: "/complete hi" }] } } })
const headers = { "content-type": "application/json" }
const requests = (known) => {
  const get = { method: "POST", path: "/", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: known } }) }
  return LOAD === "mix" ? [{ method: "POST", path: "/", headers, body: send }, get] : [get]
}
const run = async (server, reqs) => {
  await autocannon({ url: server.url, connections: 10, duration: 2, requests: reqs })
  const before = cpu(server.child.pid)
  const r = await autocannon({ url: server.url, connections: 10, duration: SECONDS, requests: reqs })
  if (r.non2xx || r.errors) throw new Error(`${server.variant ?? "raw"}: non2xx ${r.non2xx} errors ${r.errors}`)
  return { rps: r.requests.total / SECONDS, cpu: (cpu(server.child.pid) - before) / r.requests.total }
}

const raw = await start(["bench/raw-server.mjs"])
const rows = []
for (const variant of variants) {
  const door = await start(["bench/door-variants.mjs", variant])
  const known = (await post(door.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { messageId: "f", role: "user", parts: [{ text: "/forever" }] } } }))).result?.id ?? "none"
  const ratios = [], cpus = [], rps = []
  for (let i = 0; i < ROUNDS; i++) {
    const a = await run(raw, requests(raw.known_task))
    const b = await run(door, requests(known))
    ratios.push(b.rps / a.rps)
    cpus.push([b.cpu, a.cpu])
    rps.push([b.rps, a.rps])
  }
  await door.stop()
  const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length
  const row = { variant, ratio: mean(ratios), ratios, doorRps: mean(rps.map((x) => x[0])), rawRps: mean(rps.map((x) => x[1])), doorCpuUs: mean(cpus.map((x) => x[0])), rawCpuUs: mean(cpus.map((x) => x[1])) }
  rows.push(row)
  console.log(`${LOAD} ${variant.padEnd(16)} ratio ${row.ratio.toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(", ")})  door ${Math.round(row.doorRps)} req/s ${row.doorCpuUs.toFixed(0)} µs CPU/req | raw ${Math.round(row.rawRps)} req/s ${row.rawCpuUs.toFixed(0)} µs CPU/req`)
}
await raw.stop()
