// Profiles a door workload: starts the door (or the raw server) with --cpu-prof, drives it with
// autocannon, stops it and summarises the .cpuprofile by self time: per bucket (node internals,
// effect runtime, @effect/platform, project code, GC, idle) and the top functions.
// usage: node bench/profile.mjs [mix|get|send] [door|raw|variant:<name>] [seconds]   (after `npm run build`)
//        node bench/profile.mjs [send1|get1|rest-send1|rest-get1] [door|sdk1] [seconds]   (A2A 1.0: bench/door.mjs's
//        1.0 workloads, `A2A-Version: 1.0`, the door's known task a `/forever` task started over 1.0)
//        node bench/profile.mjs summary <file.cpuprofile>   (summarise a profile taken elsewhere, e.g. the
//        fan-out server's: BENCH_PARTS=fanout BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=<dir>" node bench/door.mjs)
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import http from "node:http"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const [kind = "mix", target = "door", secondsArg = "8"] = process.argv.slice(2)
const seconds = Number(secondsArg)
let profileFile
if (kind === "summary") profileFile = target
else profileFile = await runLoad()

async function runLoad() {
const dir = mkdtempSync(join(tmpdir(), "door-prof-"))
  // target: raw | door | variant:<name> (bench/door-variants.mjs)
  const args = target === "raw"
    ? ["bench/raw-server.mjs"]
    : target === "sdk1"
    ? ["bench/sdk1-server.mjs"]
    : target.startsWith("variant:")
    ? ["bench/door-variants.mjs", target.slice(8)]
    : ["dist/main.js", "serve", "--json", "--max-active", "100000", "--queue-depth", "100000"]
  const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${dir}`, ...(process.env.PROF_NODE_FLAGS ?? "").split(" ").filter(Boolean), ...args], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
  const info = await new Promise((resolve) => {
    let out = ""
    child.stdout.on("data", (c) => {
      out += c
      const line = out.split("\n").find((l) => l.includes("listening"))
      if (line) resolve(JSON.parse(line))
    })
  })
  const post = (body, extra = {}) => new Promise((resolve, reject) => {
    const req = http.request(info.url, { method: "POST", headers: { "content-type": "application/json", ...extra } }, (res) => {
      let t = ""
      res.on("data", (c) => (t += c)).on("end", () => resolve(JSON.parse(t)))
    })
    req.on("error", reject)
    req.end(body)
  })
  const v1 = ["send1", "get1", "rest-send1", "rest-get1"].includes(kind)
  const send = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { messageId: "m", role: "user", parts: [{ text: "/complete hi" }] } } })
  const known = info.known_task ?? (v1
    ? (await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "/forever" }] }, configuration: { returnImmediately: true } } }), { "a2a-version": "1.0" })).result.task.id
    : undefined) ?? (await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { messageId: "m", role: "user", parts: [{ text: "/forever" }] } } }))).result.id
  const get = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: known } })
  const headers = { "content-type": "application/json" }
  const headers1 = { ...headers, "a2a-version": "1.0" }
  const sendParams1 = { message: { messageId: "bench-0", role: "ROLE_USER", parts: [{ text: "/complete hi" }] }, configuration: { returnImmediately: true } }
  const requests = kind === "send1"
    ? [{ method: "POST", path: "/", headers: headers1, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: sendParams1 }) }]
    : kind === "get1"
    ? [{ method: "POST", path: "/", headers: headers1, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "GetTask", params: { id: known } }) }]
    : kind === "rest-send1"
    ? [{ method: "POST", path: "/message:send", headers: headers1, body: JSON.stringify(sendParams1) }]
    : kind === "rest-get1"
    ? [{ method: "GET", path: `/tasks/${encodeURIComponent(known)}`, headers: { "a2a-version": "1.0" } }]
    : kind === "get"
    ? [{ method: "POST", path: "/", headers, body: get }]
    : kind === "send"
    ? [{ method: "POST", path: "/", headers, body: send }]
    : [{ method: "POST", path: "/", headers, body: send }, { method: "POST", path: "/", headers, body: get }]
  const result = await autocannon({ url: info.url, connections: 10, duration: seconds, requests })
  console.log(`${target} ${kind}: ${Math.round(result.requests.total / seconds)} req/s, non2xx ${result.non2xx}, errors ${result.errors}`)
  await new Promise((resolve) => {
    child.on("exit", resolve)
    child.kill("SIGINT")
  })
  return join(dir, readdirSync(dir).find((f) => f.endsWith(".cpuprofile")))
}
const profile = JSON.parse(readFileSync(profileFile, "utf8"))
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map()
const dt = profile.timeDeltas
for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0))
const bucketOf = (cf) => {
  const url = cf.url
  if (cf.functionName === "(garbage collector)") return "gc"
  if (cf.functionName === "(idle)") return "idle"
  if (cf.functionName === "(program)") return "program (native/unattributed)"
  if (url.includes("node_modules/effect/")) return "effect runtime"
  if (url.includes("@effect/platform-node")) return "@effect/platform-node"
  if (url.includes("@effect/platform")) return "@effect/platform"
  if (url.includes("/dist/") || url.includes("/bench/")) return "project"
  if (url.startsWith("node:") || url === "") return "node internals"
  return "other"
}
const buckets = new Map()
const funcs = new Map()
let total = 0
for (const [id, us] of self) {
  const node = byId.get(id)
  const cf = node.callFrame
  const b = bucketOf(cf)
  buckets.set(b, (buckets.get(b) ?? 0) + us)
  const key = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "").replace(/.*\/dist\//, "dist/")}:${cf.lineNumber + 1}`
  funcs.set(key, (funcs.get(key) ?? 0) + us)
  total += us
}
const busy = total - (buckets.get("idle") ?? 0)
console.log(`profile ${profileFile}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy`)
for (const [b, us] of [...buckets].sort((a, b) => b[1] - a[1])) console.log(`  ${b.padEnd(32)} ${((100 * us) / busy).toFixed(1)}%${b === "idle" ? " (of busy)" : ""}`)
console.log("top self-time functions (% of busy):")
for (const [f, us] of [...funcs].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROF_TOP ?? 30))) console.log(`  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${f}`)

// Inclusive time (outermost frame on each stack) for functions whose "name file" matches PROF_INCLUSIVE (comma-separated regexes).
if (process.env.PROF_INCLUSIVE) {
  const patterns = process.env.PROF_INCLUSIVE.split(",").map((p) => new RegExp(p))
  const keyOf = (cf) => `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "").replace(/.*\/dist\//, "dist/")}:${cf.lineNumber + 1}`
  const inclusive = new Map()
  const walk = (id, active) => {
    const node = byId.get(id)
    const key = keyOf(node.callFrame)
    const matched = patterns.filter((p) => p.test(key)).map(String)
    const entering = matched.filter((m) => !active.has(m))
    const next = entering.length > 0 ? new Set([...active, ...entering]) : active
    const own = self.get(id) ?? 0
    for (const m of next) inclusive.set(m, (inclusive.get(m) ?? 0) + own)
    for (const child of node.children ?? []) walk(child, next)
  }
  walk(profile.nodes[0].id, new Set())
  console.log("inclusive (% of busy):")
  for (const [m, us] of [...inclusive].sort((a, b) => b[1] - a[1])) console.log(`  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${m}`)
}
