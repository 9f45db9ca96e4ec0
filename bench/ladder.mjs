// The adapter ladder: each bench/ladder-server.mjs rung as its own server, measured in turn
// (round-robin, ROUNDS rounds of 2.5 s after a warm-up) with autocannon at 10 connections,
// printing median req/s and median server CPU per request (from /proc). After `npm run build`.
// usage: LEVELS=L0,L2,L3,L4,L5 ROUNDS=3 node bench/ladder.mjs
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const start = (level) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ["bench/ladder-server.mjs", level], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    child.stdout.on("data", (c) => {
      out += c
      if (out.includes("\n")) resolve({ ...JSON.parse(out.split("\n")[0]), child, level })
    })
  })
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(f[11]) + Number(f[12])) * 1e4
}
const levels = (process.env.LEVELS ?? "L0,L2,L3,L4,L5").split(",")
const servers = []
for (const l of levels) servers.push(await start(l))
const requests = [{ method: "POST", path: "/", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: "x" } }) }]
for (const s of servers) await autocannon({ url: s.url, connections: 10, duration: 1.5, requests })
const results = Object.fromEntries(levels.map((l) => [l, []]))
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) {
  for (const s of servers) {
    const c0 = cpu(s.child.pid)
    const r = await autocannon({ url: s.url, connections: 10, duration: 2.5, requests })
    results[s.level].push([r.requests.total / 2.5, (cpu(s.child.pid) - c0) / r.requests.total])
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const l of levels) {
  console.log(`${l.padEnd(4)} ${String(Math.round(median(results[l].map((x) => x[0])))).padStart(6)} req/s  ${median(results[l].map((x) => x[1])).toFixed(1).padStart(6)} µs CPU/req`)
}
for (const s of servers) s.child.kill()
