// Where the store's time goes in a --cpu-prof profile of bench/store-door.mjs (taken by
// `BENCH_PARTS=store BENCH_STORE_PROFILE=<dir> node bench/door.mjs`, best with
// BENCH_STORE_SERVERS=door-sqlite BENCH_STORE_WORKLOADS=send: one server, one workload). Samples
// before the first request (start-up: module loading, migrations) are left out: the window starts
// at the first sample with a door frame (dist/http/) on its stack.
// Two views of the busy samples:
//   inclusive: the share of samples with a frame of the area anywhere on the stack (areas overlap:
//              the journal's commit includes @effect/sql, which includes libsql);
//   self:      each sample counted once, for the innermost frame that belongs to an area (else
//              "effect runtime", "node internals" or "other" by its own frame).
// and the top self-time functions.
// usage: node bench/store-profile.mjs <file.cpuprofile> [top=25]
import { readFileSync } from "node:fs"

const [file, topArg = "25"] = process.argv.slice(2)
if (file === undefined) {
  console.error("usage: node bench/store-profile.mjs <file.cpuprofile> [top]")
  process.exit(2)
}
const profile = JSON.parse(readFileSync(file, "utf8"))

/** Areas by a frame's URL (or function name for natives), innermost match wins in the self view. */
const AREAS = [
  ["sqlite (libsql native + its JS)", (f) => f.url.includes("/libsql/")],
  ["@effect/sql (statements, compiler, transactions, spans)", (f) => f.url.includes("/@effect/sql/")],
  ["store code (dist/store/: journal, tables, client)", (f) => f.url.includes("/dist/store/")],
  ["door HTTP + JSON-RPC (dist/http/, dist/layers/)", (f) => f.url.includes("/dist/http/") || f.url.includes("/dist/layers/")],
  ["echo capsule (dist/services/EchoCapsule.js)", (f) => f.url.includes("/dist/services/EchoCapsule.js")],
  ["task registry, runner, event log (dist/services/)", (f) => f.url.includes("/dist/services/")],
  ["other runtime code (dist/)", (f) => f.url.includes("/dist/") && !f.url.includes("node_modules")],
  ["@effect/platform(-node)", (f) => f.url.includes("/@effect/platform")]
]
const fallback = (f) => {
  if (f.functionName === "(garbage collector)") return "gc"
  if (f.functionName === "(idle)") return "idle"
  if (f.functionName === "(program)") return "program (native/unattributed)"
  if (f.url.includes("/effect/dist/")) return "effect runtime"
  if (f.url.startsWith("node:") || f.url === "") return "node internals"
  return "other"
}

const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const frameOf = (n) => ({ url: n.callFrame.url, functionName: n.callFrame.functionName, line: n.callFrame.lineNumber + 1 })
const stackOf = (id) => {
  const frames = []
  for (let at = id; at !== undefined; at = parent.get(at)) frames.push(frameOf(nodes.get(at)))
  return frames // innermost first
}

const stacks = new Map()
const stack = (id) => stacks.get(id) ?? stacks.set(id, stackOf(id)).get(id)
const dt = profile.timeDeltas
let started = false
let busy = 0
let idle = 0
const inclusive = new Map()
const self = new Map()
const fns = new Map()
for (let i = 0; i < profile.samples.length; i++) {
  const frames = stack(profile.samples[i])
  if (!started) {
    if (!frames.some((f) => f.url.includes("/dist/http/"))) continue
    started = true
  }
  const weight = dt[i] ?? 0
  const leaf = frames[0]
  if (leaf.functionName === "(idle)") {
    idle += weight
    continue
  }
  busy += weight
  const seen = new Set()
  let innermost
  for (const f of frames) {
    for (const [name, test] of AREAS) {
      if (!test(f)) continue
      if (innermost === undefined) innermost = name
      if (!seen.has(name)) {
        seen.add(name)
        inclusive.set(name, (inclusive.get(name) ?? 0) + weight)
      }
      break
    }
  }
  const selfArea = innermost ?? fallback(leaf)
  self.set(selfArea, (self.get(selfArea) ?? 0) + weight)
  const key = `${leaf.functionName || "(anon)"} ${leaf.url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/dist\//, "dist/")}:${leaf.line}`
  fns.set(key, (fns.get(key) ?? 0) + weight)
}

const pct = (x) => `${((100 * x) / busy).toFixed(1).padStart(5)}%`
console.log(`profile ${file}: ${(busy / 1e6).toFixed(1)} s busy after the first request, ${(idle / 1e6).toFixed(1)} s idle`)
console.log("inclusive (a frame of the area anywhere on the stack; areas overlap):")
for (const [name, us] of [...inclusive].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(us)}  ${name}`)
console.log("self (innermost area on the stack, else the leaf's kind):")
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(us)}  ${name}`)
console.log(`top ${topArg} self-time functions:`)
for (const [name, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg))) console.log(`  ${pct(us)}  ${name}`)
