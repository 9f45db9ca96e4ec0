/**
 * `artifacts[].capabilities.state`: the artifact's guest gets a second preopen, `state`, at
 * `$MURMUR_HOME/state/<store>/` (mode 0700), kept across sessions and confined like the workdir;
 * a store name that is not one path segment is refused (E-CAP-011), and a link planted at the
 * store's place refuses the launch instead of being preopened. Through `run` (`npm run build`
 * first) with the scripted driver and a real tool component in a real worker.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, driverRequest, endTurn, ofType, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const cleanups: Array<string> = []
afterAll(() => {
  for (const dir of cleanups) rmSync(dir, { recursive: true, force: true })
})
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  cleanups.push(dir)
  return dir
}

/** An agent whose `notes` tool (the state probe) declares `state` (`store` given, or its default). */
const capsule = async (state: string) => {
  const dir = await makeAgentCapsuleDir({
    driverConfig: { replies: [toolTurn(call("c1", "notes", { append: "A" })), endTurn("ok")] },
    tools: { notes: "tool-state-probe" }
  })
  cleanups.push(dir)
  const manifest = readFileSync(join(dir, "murmur.yaml"), "utf8")
    .replace("  - name: notes\n    version: 0.1.0\n    runtime: tool\n", `  - name: notes\n    version: 0.1.0\n    runtime: tool\n    capabilities:\n      state:${state}\n`)
  writeFileSync(join(dir, "murmur.yaml"), manifest)
  return dir
}

/** What the tool answered in the run's second driver request. */
const toolAnswer = (workdir: string) => {
  const message = driverRequest(workdir, 2).messages.find((m: { role: string }) => m.role === "tool")
  const text: string = message.content[0].text
  return JSON.parse(text.slice(text.indexOf("\n") + 1, text.lastIndexOf("\n")))
}

describe("capabilities.state on an artifact entry", () => {
  it("preopens $MURMUR_HOME/state/<store>/ as state: what one session writes, the next reads; nothing escapes it", async () => {
    const home = temp("state-home-")
    const dir = await capsule("\n        store: notes-store")
    const first = await runCli(["run", dir, "--task", "one", "--json"], { MURMUR_HOME: home })
    expect(first.code, first.stderr).toBe(0)
    expect(first.stderr).not.toContain("capabilities.state")
    expect(toolAnswer(exitEvent(first).workdir)).toEqual({ preopens: [".", "state"], before: "", escape: "refused:not-permitted" })

    const second = await runCli(["run", dir, "--task", "two", "--json"], { MURMUR_HOME: home })
    expect(second.code, second.stderr).toBe(0)
    expect(toolAnswer(exitEvent(second).workdir)).toMatchObject({ before: "A" })

    const store = join(home, "state", "notes-store")
    expect(readFileSync(join(store, "notes.txt"), "utf8")).toBe("AA")
    expect(lstatSync(store).mode & 0o777).toBe(0o700)
    expect(readdirSync(join(home, "state"))).toEqual(["notes-store"])
    const [start] = ofType(traceLines(exitEvent(second).records), "session_start")
    expect(start!.effective_grants.guests.notes).toMatchObject({ preopen: ".", state: "notes-store" })
  }, 90_000)

  it("names the store after the artifact when the block gives none", async () => {
    const home = temp("state-home-")
    const dir = await capsule(" {}")
    const run = await runCli(["run", dir, "--task", "one"], { MURMUR_HOME: home })
    expect(run.code, run.stderr).toBe(0)
    expect(readFileSync(join(home, "state", "notes", "notes.txt"), "utf8")).toBe("A")
  }, 60_000)

  it("refuses a store name that is not one path segment (E-CAP-011)", async () => {
    for (const store of ["../up", "a/b", ".."]) {
      const dir = await capsule(`\n        store: "${store}"`)
      const result = await runCli(["validate", dir])
      expect(result.code, store).not.toBe(0)
      expect(result.stderr + result.stdout, store).toContain("E-CAP-011")
    }
  }, 60_000)

  it("refuses to launch when a link stands where the store should be, and leaves its target alone", async () => {
    const home = temp("state-home-")
    const elsewhere = temp("state-elsewhere-")
    mkdirSync(join(home, "state"), { recursive: true })
    symlinkSync(elsewhere, join(home, "state", "notes"))
    const dir = await capsule(" {}")
    const run = await runCli(["run", dir, "--task", "one"], { MURMUR_HOME: home })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("E-RUN-002")
    expect(readdirSync(elsewhere)).toEqual([])
    expect(existsSync(join(home, "state", "notes", "notes.txt"))).toBe(false)
  }, 60_000)
})
