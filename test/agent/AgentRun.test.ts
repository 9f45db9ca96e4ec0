/**
 * `run <agent dir>` through the CLI binary (`npm run build` first): one task (`--task`, `task.md`
 * or the first A2A task within the idle window) with the door listening, then the session ends.
 */
import { existsSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type AgentDirOptions, exitEvent, listeningCli, makeAgentCapsuleDir, runCli, until } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const agentDir = async (options: AgentDirOptions) => {
  const dir = await makeAgentCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const lines = (stdout: string) => stdout.trim().split("\n").map((line) => JSON.parse(line))

const traceTypes = (workdir: string): Array<string> =>
  readFileSync(join(workdir, "trace.jsonl"), "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line).event_type)

const done = (value: string) => ({ replies: [{ stop_reason: "end_turn", content: [{ type: "text", text: value }] }] })

describe("run <agent dir> (CLI)", () => {
  it("--task runs one task with the door listening: listening first, exit ok last, result and one session in the trace", async () => {
    const dir = await agentDir({ driverConfig: done("Hello back.") })
    const run = await runCli(["run", dir, "--task", "hi", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const [listening, ...rest] = lines(run.stdout)
    expect(listening).toMatchObject({ event: "listening", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/) })
    expect(listening.workdir).toBe(join(dir, "workdir", listening.session_id))
    const exit = rest.at(-1)
    expect(exit).toEqual({ event: "exit", status: "ok", workdir: listening.workdir, records: listening.records, task_id: expect.stringMatching(/^tsk_/) })
    expect(readFileSync(join(listening.workdir, "out", "result.txt"), "utf8")).toBe("Hello back.")
    const types = traceTypes(listening.records)
    expect(types.filter((type) => type === "session_start")).toHaveLength(1)
    expect(types.filter((type) => type === "session_end")).toHaveLength(1)
    expect(types[0]).toBe("session_start")
    expect(types.at(-1)).toBe("session_end")
    expect(types.filter((type) => type === "task_start")).toHaveLength(1)
  })

  it("prints status and workdir without --json; an existing <workdir>/task.md is the task", async () => {
    const dir = await agentDir({ driverConfig: done("From the file.") })
    const workdir = join(dir, "mine")
    mkdirSync(workdir)
    writeFileSync(join(workdir, "task.md"), "do the file task")
    const run = await runCli(["run", dir, "--workdir", workdir, "--idle-timeout", "1"])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`status:  ok\nworkdir: ${workdir}`)
    expect(readFileSync(join(workdir, "out", "result.txt"), "utf8")).toBe("From the file.")
  })

  it("a driver error fails the task: exit 1, status failed", async () => {
    const dir = await agentDir({ driverConfig: { replies: [{ stop_reason: "error", error: "provider exploded" }] } })
    const run = await runCli(["run", dir, "--task", "hi", "--json"])
    expect(run.code).toBe(1)
    const exit = exitEvent(run)
    expect(exit).toMatchObject({ event: "exit", status: "failed", task_id: expect.stringMatching(/^tsk_/) })
    const text = await runCli(["run", dir, "--task", "hi"])
    expect(text.code).toBe(1)
    expect(text.stdout).toContain("status:  failed")
  })

  it("no task within --idle-timeout: exit 1 with E-RUN-011 and no task run", async () => {
    const dir = await agentDir({ driverConfig: done("never") })
    const run = await runCli(["run", dir, "--idle-timeout", "1", "--json"])
    expect(run.code).toBe(1)
    const [listening] = lines(run.stdout)
    expect(listening.event).toBe("listening")
    const exit = exitEvent(run)
    expect(exit).toMatchObject({ event: "exit", status: "failed", error: { code: "E-RUN-011", message: "no task arrived within 1 s" } })
    expect(traceTypes(listening.records)).toEqual(["session_start", "session_end"])
    const text = await runCli(["run", dir, "--idle-timeout", "1"])
    expect(text.code).toBe(1)
    expect(text.stderr).toContain("error[E-RUN-011]: no task arrived within 1 s")
  })

  it("under task_acceptance: none only a local task runs", async () => {
    const dir = await agentDir({ driverConfig: done("Local."), extra: "lifecycle:\n  task_acceptance: none\n" })
    const refused = await runCli(["run", dir, "--json"])
    expect(refused.code).toBe(1)
    expect(exitEvent(refused).error.code).toBe("E-RUN-011")
    const run = await runCli(["run", dir, "--task", "hi", "--json"])
    expect(run.code, run.stderr).toBe(0)
    expect(exitEvent(run).status).toBe("ok")
  })

  it("without --task, runs the first task sent over A2A, then exits", async () => {
    const dir = await agentDir({ driverConfig: done("Over the door.") })
    const { exited, listening, stdout } = await listeningCli(["run", dir, "--json"], {}, cleanups)
    const reply = await rpc(listening.url, "message/send", { message: referenceMessage("over A2A"), configuration: { blocking: true } })
    expect(reply.body.error).toBeUndefined()
    expect(reply.body.result.status.state).toBe("completed")
    expect((await exited).code).toBe(0)
    const exit = lines(stdout()).at(-1)
    expect(exit).toEqual({ event: "exit", status: "ok", workdir: listening.workdir, records: listening.records, task_id: reply.body.result.id })
    expect(readFileSync(join(listening.workdir, "out", "result.txt"), "utf8")).toBe("Over the door.")
  })

  it("under queue + sleep, outlives its first task, runs later A2A tasks, and reports the last one when a signal ends it", async () => {
    const dir = await agentDir({
      driverConfig: { replies: [{ stop_reason: "end_turn", content: [{ type: "text", text: "answered" }] }] },
      extra: "lifecycle:\n  task_acceptance: queue\n  after_task: sleep\n"
    })
    const { child, exited, listening, stdout } = await listeningCli(["run", dir, "--task", "local one", "--json"], {}, cleanups)
    await until(() => stdout().includes(`"event":"task"`), "the first task's line")
    const [, first] = lines(stdout())
    expect(first).toEqual({ event: "task", status: "ok", task_id: expect.stringMatching(/^tsk_/) })
    expect(existsSync(join(listening.workdir, "task.md"))).toBe(false)
    const reply = await rpc(listening.url, "message/send", { message: referenceMessage("over A2A"), configuration: { blocking: true } })
    expect(reply.body.result.status.state).toBe("completed")
    expect(child.exitCode).toBeNull()
    child.kill("SIGINT")
    expect((await exited).code).toBe(0)
    expect(lines(stdout()).at(-1)).toEqual({ event: "exit", status: "ok", workdir: listening.workdir, records: listening.records, task_id: reply.body.result.id })
    const starts = readFileSync(join(listening.records, "trace.jsonl"), "utf8").split("\n").filter((line) => line.length > 0)
      .map((line) => JSON.parse(line)).filter((line) => line.event_type === "task_start")
    expect(starts.map((line) => line.source)).toEqual(["task_md", "a2a"])
  })
})
