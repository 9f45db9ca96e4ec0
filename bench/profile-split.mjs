// The served process's main-thread CPU by area, from a --cpu-prof profile taken over
// `dist/main-modules.js` (the CLI entry over tsc's modules, so frames name the runtime's files;
// the bundle would name only dist/main.js). Each sample counts once, for the innermost frame of
// the runtime on its stack; samples with none are GC, Effect's fiber runtime or Node. Samples
// before the first agent-loop frame (start-up) are left out. Used by bench/agent.mjs with
// BENCH_AGENT_PROFILE=1, so a rise shows up by area at once.
import { readFileSync } from "node:fs"

const AREAS = [
  ["dist/agent/Tokens.js", "token counting"],
  ["dist/sandbox/", "sandbox: guest runs, worker starts and pool refills"],
  ["dist/agent/", "agent loop"],
  ["dist/records/", "trace and workdir files"],
  ["dist/shell/", "shell"],
  ["dist/http/", "door"],
  ["dist/layers/", "door server and logging"],
  ["dist/services/", "task registry, runner and events"],
  ["dist/", "other runtime code"]
]

const areaOf = (url) => {
  const at = url.indexOf("/dist/")
  if (at < 0 || url.includes("node_modules")) return undefined
  const file = url.slice(at + 1)
  return AREAS.find(([prefix]) => file.startsWith(prefix))?.[1]
}

export const splitByArea = (file, tasks) => {
  const profile = JSON.parse(readFileSync(file, "utf8"))
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const leafArea = new Map()
  const areaFor = (id) => {
    if (leafArea.has(id)) return leafArea.get(id)
    let found
    for (let at = id; at !== undefined && found === undefined; at = parent.get(at)) found = areaOf(nodes.get(at).callFrame.url)
    if (found === undefined) {
      const frame = nodes.get(id).callFrame
      found = frame.functionName === "(garbage collector)" ? "GC"
        : frame.functionName === "(idle)" || frame.functionName === "(program)" ? "idle"
        : frame.url.includes("node_modules/effect/") || frame.url.includes("node_modules/@effect/") ? "Effect and @effect/* with no runtime frame"
        : "Node and other libraries with no runtime frame"
    }
    leafArea.set(id, found)
    return found
  }
  const started = profile.samples.findIndex((id) => {
    for (let at = id; at !== undefined; at = parent.get(at)) if (nodes.get(at).callFrame.url.includes("/dist/agent/AgentLoop.js")) return true
    return false
  })
  const totals = new Map()
  for (let i = Math.max(0, started); i < profile.samples.length; i++) {
    const area = areaFor(profile.samples[i])
    if (area === "idle") continue
    totals.set(area, (totals.get(area) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000)
  }
  const rows = [...totals].sort((a, b) => b[1] - a[1]).map(([area, ms]) => ({ area, msPerTask: Math.round(ms / tasks * 100) / 100 }))
  return { tasks, busyMsPerTask: Math.round(rows.reduce((sum, row) => sum + row.msPerTask, 0) * 100) / 100, rows }
}

if (process.argv[2] !== undefined) console.log(JSON.stringify(splitByArea(process.argv[2], Number(process.argv[3] ?? 1)), null, 2))
