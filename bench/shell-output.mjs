/**
 * A step of `npm run bench:agent` after bench/agent.mjs (issue 17, item 1): what a shell call printing 1 GB costs the
 * runtime's memory. Serves the `shellOutputDir` capsule of bench/agent-fixtures.ts (scripted
 * driver: turn 1 = `head -c 1000000000 /dev/zero` under `shell.allow: [head]`, turn 2 = end_turn)
 * with `node dist/main.js serve`, on the sealed tier (bubblewrap) and on the advisory one
 * (MURMUR_BWRAP=/bin/false), and sends it BENCH_SHELL_OUTPUT_TASKS (default 3) blocking tasks.
 * Figures from /proc/<pid>/status of the served process: VmRSS idle after listening, and per task
 * VmHWM (the peak resident set) after the peak was reset to the task's start through
 * /proc/<pid>/clear_refs; the first task also pays the first driver worker and shell call. Reads
 * each task's `shell` trace line (bytes read, dropped, exit code, duration) and its log's size.
 * Control: the same capsule with the command cut to `head -c 10 /dev/zero`, so what any task
 * costs (driver worker, trace, the shell call itself) is told apart from what the output costs.
 * Writes bench/results/shell-output-<date>.json.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { jsonRpc, serveJson } from "./serve-json.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const fixtures = JSON.parse(fs.readFileSync(path.join(root, ".cache/bench/agent-fixtures.json"), "utf8"))
const TASKS = Number(process.env.BENCH_SHELL_OUTPUT_TASKS ?? 3)
const DATE = process.env.BENCH_DATE || new Date().toISOString().slice(0, 10)
const MiB = 1024 * 1024

const serve = (dir, extraEnv) => serveJson({ root, dir, env: { CAPSULE_RUNTIME_CACHE_DIR: fixtures.cliCacheDir, ...extraEnv } })

const rpc = jsonRpc()
let nextId = 1

const status = (pid, field) => Number(new RegExp(`${field}:\\s*(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024
const mib = (bytes) => Math.round((bytes / MiB) * 10) / 10

const controlDir = `${fixtures.shellOutputDir}-control`
fs.cpSync(fixtures.shellOutputDir, controlDir, { recursive: true })
const manifest = path.join(controlDir, "murmur.yaml")
fs.writeFileSync(manifest, fs.readFileSync(manifest, "utf8").replace("-c 1000000000 /dev/zero", "-c 10 /dev/zero"))

const measureTier = async (tier, dir = fixtures.shellOutputDir) => {
  const { child, listening } = await serve(dir, tier.startsWith("advisory") ? { MURMUR_BWRAP: "/bin/false" } : {})
  const exited = new Promise((r) => child.on("exit", r))
  const { url, workdir, records } = listening
  const idle = status(child.pid, "VmRSS")
  const tasks = []
  for (let i = 0; i < TASKS; i++) {
    const start = status(child.pid, "VmRSS")
    fs.writeFileSync(`/proc/${child.pid}/clear_refs`, "5")
    const t0 = Date.now()
    const reply = await rpc(url, "message/send", { message: { messageId: `msg-${nextId++}`, role: "user", parts: [{ kind: "text", text: "print" }] }, configuration: { blocking: true } })
    if (reply.error || reply.result.status.state !== "completed") throw new Error(`task ended ${JSON.stringify(reply.error ?? reply.result.status)}`)
    tasks.push({ startRss: start, peak: status(child.pid, "VmHWM"), wallMs: Date.now() - t0 })
  }
  const shells = fs.readFileSync(path.join(records, "trace.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.event_type === "shell")
  const containment = JSON.parse(fs.readFileSync(path.join(records, "trace.jsonl"), "utf8").split("\n")[0]).containment_achieved
  child.kill("SIGTERM")
  await exited
  return {
    tier,
    containmentAchieved: containment,
    idleRssMiB: mib(idle),
    tasks: tasks.map((task, i) => ({
      startRssMiB: mib(task.startRss),
      peakRssMiB: mib(task.peak),
      peakOverStartMiB: mib(task.peak - task.startRss),
      peakOverIdleMiB: mib(task.peak - idle),
      wallMs: task.wallMs,
      shell: {
        exitCode: shells[i]?.exit_code,
        stdoutBytes: shells[i]?.stdout_bytes,
        droppedBytes: shells[i]?.dropped_bytes,
        durationMs: shells[i]?.duration_ms,
        logBytes: shells[i]?.output_path === undefined ? undefined : fs.statSync(path.join(workdir, shells[i].output_path)).size
      }
    }))
  }
}

const load = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number)
const tiers = [
  await measureTier("sealed"),
  await measureTier("sealed, control: 10 bytes", controlDir),
  await measureTier("advisory"),
  await measureTier("advisory, control: 10 bytes", controlDir)
]
fs.rmSync(fixtures.shellOutputDir, { recursive: true, force: true })
fs.rmSync(controlDir, { recursive: true, force: true })

const result = {
  date: new Date().toISOString(),
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`, loadavg: load },
  settings: { tasks: TASKS, command: "head -c 1000000000 /dev/zero", maxOutputBytes: "default (16 MiB)" },
  tiers
}
const out = path.join(root, `bench/results/shell-output-${DATE}.json`)
fs.mkdirSync(path.dirname(out), { recursive: true })
fs.writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)

console.log(`shell output: a call printing 1 GB (head -c 1000000000 /dev/zero), ${TASKS} tasks per tier; load ${load.join(" ")}`)
for (const t of tiers) {
  console.log(`  ${t.tier} (achieved ${t.containmentAchieved}): runtime RSS idle after listening ${t.idleRssMiB} MiB`)
  t.tasks.forEach((task, i) =>
    console.log(`    task ${i + 1}: peak RSS ${task.peakRssMiB} MiB (+${task.peakOverStartMiB} over its start, +${task.peakOverIdleMiB} over idle); shell exit ${task.shell.exitCode}, read ${task.shell.stdoutBytes} B, dropped ${task.shell.droppedBytes} B, log ${task.shell.logBytes} B, ${task.shell.durationMs} ms`))
}
console.log(`wrote ${path.relative(root, out)}`)
