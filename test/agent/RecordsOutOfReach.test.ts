/**
 * The trace is the audit record, so no guest or command may write it: a session's records
 * (`trace.jsonl`, `blobs/`) are kept in `<capsule dir>/.murmur/sessions/<session>`, outside the
 * workdir, in the default layout and with `--workdir`. End to end through `run --task --json`
 * (`npm run build` first): a sealed shell command that tries to truncate every `trace.jsonl` it
 * can name (in its cwd, under `.murmur/`, and at the records' host path) truncates none, and the
 * trace is whole afterwards. A `--workdir` that would contain the records is refused.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { call, driverRequest, endTurn, ofType, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
})

/** A sealed capsule whose model runs one `sh` command that tries to truncate every trace it can name. */
const vandal = async () => {
  const placeholder = "@DIR@"
  const command = `for f in trace.jsonl .murmur/*/trace.jsonl ${placeholder}/.murmur/sessions/*/trace.jsonl ${placeholder}/workdir/*/trace.jsonl; do if [ -e "$f" ]; then (: > "$f") 2>/dev/null && echo "TRUNCATED $f" || echo "refused $f"; fi; done; echo probe-done`
  const dir = await makeAgentCapsuleDir({
    driverConfig: { replies: [toolTurn(call("c1", "sh", { command })), endTurn("done")] },
    capabilities: "  containment: sealed\n  shell:\n    allow: [sh]\n"
  })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const manifest = join(dir, "murmur.yaml")
  writeFileSync(manifest, readFileSync(manifest, "utf8").replaceAll(placeholder, dir))
  return dir
}

const checkRun = (run: Awaited<ReturnType<typeof runCli>>, dir: string) => {
  expect(run.code, run.stderr).toBe(0)
  const exit = exitEvent(run)
  const result = driverRequest(exit.workdir, 2).messages.find((message: { role: string }) => message.role === "tool").content[0].text as string
  expect(result).toContain("probe-done")
  expect(result).not.toMatch(/^TRUNCATED /m)
  expect(exit.records).toBe(join(dir, ".murmur", "sessions", JSON.parse(run.stdout.split("\n")[0]!).session_id))
  expect(relative(exit.workdir, exit.records).startsWith("..")).toBe(true)
  const trace = traceLines(exit.records)
  expect(trace[0]!.event_type).toBe("session_start")
  expect(ofType(trace, "shell")).toEqual([expect.objectContaining({ exit_code: 0 })])
  expect(trace.map((line) => line.event_type).slice(-2)).toEqual(["task_end", "session_end"])
  expect(existsSync(join(exit.workdir, "trace.jsonl"))).toBe(false)
}

describe("a session's records are out of its commands' reach", () => {
  it("default layout: a sealed shell command cannot truncate trace.jsonl; the trace is whole", async () => {
    const dir = await vandal()
    checkRun(await runCli(["run", dir, "--task", "vandalise", "--json"]), dir)
  })

  it("--workdir: nothing of the records is under .murmur/<session>; the command truncates nothing", async () => {
    const dir = await vandal()
    const workdir = join(dir, "elsewhere")
    mkdirSync(workdir)
    checkRun(await runCli(["run", dir, "--workdir", workdir, "--task", "vandalise", "--json"]), dir)
  })

  it("a --workdir that contains the capsule directory's records is refused before anything runs", async () => {
    const dir = await vandal()
    const run = await runCli(["run", dir, "--workdir", dir, "--task", "vandalise", "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error).toMatchObject({ code: "E-RUN-002", message: expect.stringContaining("contains the session records") })
    expect(existsSync(join(dir, "out"))).toBe(false)
  })
})
