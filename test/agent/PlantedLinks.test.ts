/**
 * An agent capsule's WASM tool planting links for the loop (issue 8 item 1), end to end through
 * `run <agent dir> --task` (scripted driver, real `tool-plant-links` guest): a link out of the
 * workdir cannot be planted at all, and a link planted inside it at `out/result.txt` is not
 * written through — the task fails naming it. Nothing outside the workdir changes. A read-only
 * subtree binds the loop's tools too (`tool-ro-probe`).
 */
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { call, endTurn, lastLine, toolTurn } from "../lib/AgentE2E.js"
import { type AgentDirOptions, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const cleanups: Array<() => void> = []

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
})

/** An agent directory and a workdir beside `secret.txt`, which no link may reach. */
const layout = async (options: AgentDirOptions) => {
  const dir = await makeAgentCapsuleDir(options)
  const base = realpathSync(mkdtempSync(join(tmpdir(), "agent-planted-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(base, { recursive: true, force: true }))
  const workdir = join(base, "workdir")
  mkdirSync(workdir)
  const secret = join(base, "secret.txt")
  writeFileSync(secret, "SECRET")
  const before = { text: "SECRET", mtime: statSync(secret).mtimeMs }
  const untouched = () => expect({ text: readFileSync(secret, "utf8"), mtime: statSync(secret).mtimeMs }).toEqual(before)
  return { dir, workdir, untouched }
}

const runTask = async (dir: string, workdir: string, task: string) => {
  const run = await runCli(["run", dir, "--workdir", workdir, "--task", task, "--json"])
  return { run, exit: lastLine(run.stdout) }
}

const planting = (plant: ReadonlyArray<readonly [string, string]>): AgentDirOptions => ({
  driverConfig: { replies: [toolTurn(call("c1", "planter", { plant })), endTurn("done")] },
  tools: { planter: "tool-plant-links" }
})

describe("a WASM tool planting links for the agent loop", () => {
  it("cannot plant a link out of the workdir at out/result.txt, logs/guest.log or task.md", async () => {
    const { dir, untouched, workdir } = await layout(planting([
      ["out/result.txt", "../../secret.txt"],
      ["logs/guest.log", "../../secret.txt"],
      ["task.md", "../secret.txt"]
    ]))
    const { exit } = await runTask(dir, workdir, "plant links")
    expect(exit).toMatchObject({ event: "exit", status: "ok" })
    expect(readFileSync(join(workdir, "out", "result.txt"), "utf8")).toBe("done")
    expect(lstatSync(join(workdir, "out", "result.txt")).isSymbolicLink()).toBe(false)
    expect(lstatSync(join(workdir, "logs", "guest.log"), { throwIfNoEntry: false })).toBeUndefined()
    expect(readFileSync(join(workdir, "task.md"), "utf8")).toBe("plant links")
    untouched()
  })

  it("a link planted inside the workdir at out/result.txt: the loop does not write through it and the task fails naming it", async () => {
    const { dir, untouched, workdir } = await layout(planting([["out/result.txt", "../task.md"]]))
    const { exit, run } = await runTask(dir, workdir, "the task text")
    expect(run.code).toBe(1)
    expect(exit).toMatchObject({ event: "exit", status: "failed", state: "failed" })
    expect(exit.message).toBe("out/result.txt is a symbolic link; refusing to follow it out of the workdir")
    expect(exit.result).toBe("out/result.txt is a symbolic link; refusing to follow it out of the workdir")
    expect(readFileSync(join(workdir, "task.md"), "utf8")).toBe("the task text")
    untouched()
  })
})

describe("read_only binds the loop's WASM tools", () => {
  it("every change to ro/ is refused not-permitted; ro/ keeps its bytes", async () => {
    const { dir, workdir } = await layout({
      driverConfig: { replies: [toolTurn(call("c1", "prober", "ro")), endTurn("probed")] },
      tools: { prober: "tool-ro-probe" },
      capabilities: "  filesystem:\n    read_only: [ro]\n"
    })
    mkdirSync(join(workdir, "ro", "sub"), { recursive: true })
    writeFileSync(join(workdir, "ro", "keep.txt"), "KEEP")
    const { exit } = await runTask(dir, workdir, "probe")
    expect(exit).toMatchObject({ event: "exit", status: "ok" })
    const report = readFileSync(join(workdir, "ro-report.txt"), "utf8").split("\n")
    expect(report.slice(0, -1).every((line) => line.endsWith(": refused:not-permitted"))).toBe(true)
    expect(report).toHaveLength(15)
    expect(report.at(-1)).toBe("outside: ok")
    expect(readFileSync(join(workdir, "ro", "keep.txt"), "utf8")).toBe("KEEP")
  })
})
