/**
 * Shared pieces of the agent end-to-end tests (test/agent/EndToEnd*.test.ts): scripted-driver
 * replies, reading a session's trace.jsonl, the SSE frames of a `message/stream` call, and the
 * `run <dir> --task` invocation with its parsed stdout.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { type AgentDirOptions, type CliResult, makeAgentCapsuleDir, runCli } from "./CapsuleDirs.js"
import type { SseEvent } from "./Door.js"
import { dataOf } from "./DoorKit.js"

export const text = (value: string) => ({ type: "text", text: value })
export const thinking = (value: string) => ({ type: "thinking", thinking: value })
export const call = (id: string, name: string, input: unknown) => ({ type: "tool_call", id, name, input })
export const toolTurn = (...content: Array<unknown>) => ({ stop_reason: "tool_call", content })
export const endTurn = (value: string) => ({ stop_reason: "end_turn", content: [text(value)] })

export const sha256 = (body: string) => createHash("sha256").update(body).digest("hex")

export type TraceLine = Record<string, any>

/** The lines of `<records>/trace.jsonl`: `records` is the session's records directory (the `records` of a `--json` listening or exit line). */
export const traceLines = (records: string): Array<TraceLine> =>
  readFileSync(join(records, "trace.jsonl"), "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))

export const ofType = (lines: ReadonlyArray<TraceLine>, type: string) => lines.filter((line) => line.event_type === type)

export const resultFile = (workdir: string) => readFileSync(join(workdir, "out", "result.txt"), "utf8")

/** The request the scripted driver received on its `n`th call (1-based), as it wrote it. */
export const driverRequest = (workdir: string, n: number): any => JSON.parse(readFileSync(join(workdir, `driver-request-${n}.json`), "utf8"))

export const driverCalls = (workdir: string) => {
  const path = join(workdir, "driver-calls.log")
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter((line) => line.length > 0).length : 0
}

/** A frame reduced to what the tests compare: its event name and its JSON data. */
export interface Frame {
  readonly event: string
  readonly data: any
}

export const frames = (events: ReadonlyArray<SseEvent>): Array<Frame> =>
  events.filter((event) => event.event !== undefined).map((event) => ({ event: event.event!, data: dataOf(event) }))

/** `binary` resolved on `PATH` and canonicalized, as the shell trace line names it. */
export const resolvedOnPath = (binary: string): string => {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir.length === 0) continue
    const candidate = join(dir, binary)
    try {
      if (statSync(candidate).isFile()) return realpathSync(candidate)
    } catch {
      // not here
    }
  }
  throw new Error(`${binary} is not on PATH`)
}

/** The five keys every line starts with, in order (spec §6). */
export const HEADER = ["event_type", "event_id", "parent_id", "session_id", "timestamp"]

/** `evt_` + a UUIDv7 in simple form. */
export const EVENT_ID = /^evt_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/

/** The keys of `line` that `required` lists and the line lacks. */
export const missingKeys = (line: TraceLine, required: ReadonlyArray<string>) => required.filter((key) => !(key in line))

export const lastLine = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1)!)

export interface TaskRun {
  readonly dir: string
  readonly run: CliResult
  readonly listening: any
  readonly exit: any
  readonly workdir: string
  readonly records: string
  readonly trace: Array<TraceLine>
}

/** `node dist/main.js run <agent dir> --task TEXT --json` on a fresh capsule directory. */
export const runTask = async (options: AgentDirOptions, task: string, cleanups: Array<() => void>): Promise<TaskRun> => {
  const dir = await makeAgentCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const run = await runCli(["run", dir, "--task", task, "--json"])
  const lines = run.stdout.trim().split("\n")
  const listening = JSON.parse(lines[0]!)
  const workdir: string = listening.workdir
  const records: string = listening.records
  return { dir, run, listening, exit: lastLine(run.stdout), workdir, records, trace: existsSync(join(records, "trace.jsonl")) ? traceLines(records) : [] }
}
