/**
 * Step 3 of `npm run bench:agent` (issue 9): what a delegation costs.
 *
 * Runs `node dist/main.js run examples/delegation --task Ada --json` BENCH_DELEGATION_RUNS times
 * (default 5) and reads each parent's trace.jsonl:
 *   - to the child's door: `delegation_start.startup_ms` (delegate-task called → the child's door
 *     listening);
 *   - to the completion task: the `inference` line that decided `delegate-task` → the `task_start`
 *     of the completion task carrying the delegation id (the child ran its whole task between).
 * Baseline, measured in the same run: a bare `run examples/hello --task Ada --json` from spawn to
 * its listening line, which is what starting any child process of this runtime costs.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const RUNS = Number(process.env.BENCH_DELEGATION_RUNS ?? 5)
const main = path.join(root, "dist/main.js")

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]
}

/** Runs the CLI; resolves with the ms to its listening line and its parsed stdout lines. */
const run = (dir, workdir) =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    let listeningMs
    let out = ""
    const child = spawn(process.execPath, [main, "run", dir, "--task", "Ada", "--json", "--workdir", workdir], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.tmpdir() },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout.on("data", (chunk) => {
      out += chunk
      if (listeningMs === undefined && out.includes("\n")) listeningMs = performance.now() - started
    })
    child.on("exit", (code) => (code === 0 ? resolve({ listeningMs, lines: out.trim().split("\n").map((l) => JSON.parse(l)) }) : reject(new Error(`run ${dir} exited ${code}`))))
  })

/** The session's records (its `--json` lines name them), beneath the capsule directory. */
const traceOf = (records) =>
  fs.readFileSync(path.join(records, "trace.jsonl"), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "bench-delegation-"))
const bare = []
const toDoor = []
const toCompletion = []
try {
  for (let i = 0; i < RUNS; i++) {
    bare.push((await run(path.join(root, "examples/hello"), path.join(scratch, `hello-${i}`))).listeningMs)
    const workdir = path.join(scratch, `parent-${i}`)
    const { lines } = await run(path.join(root, "examples/delegation"), workdir)
    const trace = traceOf(lines[0].records)
    const started = trace.find((l) => l.event_type === "delegation_start")
    const decided = trace.find((l) => l.event_type === "inference" && l.tool_name === "delegate-task")
    const completion = trace.find((l) => l.event_type === "task_start" && l.delegation_id === started.delegation_id)
    toDoor.push(started.startup_ms)
    toCompletion.push(completion.timestamp - decided.timestamp)
  }
} finally {
  fs.rmSync(scratch, { recursive: true, force: true })
}
const p50 = { bare: quantile(bare, 0.5), toDoor: quantile(toDoor, 0.5), toCompletion: quantile(toCompletion, 0.5) }
console.log(`delegation, ${RUNS} runs (p50):`)
console.log(`  bare runtime start (spawn → listening), baseline  ${p50.bare.toFixed(0)} ms`)
console.log(`  delegate-task → child's door listening           ${p50.toDoor.toFixed(0)} ms  (${(p50.toDoor / p50.bare).toFixed(2)}× the bare start)`)
console.log(`  delegate-task → completion task starting         ${p50.toCompletion.toFixed(0)} ms  (${(p50.toCompletion / p50.bare).toFixed(2)}× the bare start)`)
