/**
 * `capabilities.resources.workdir_max_bytes`: a workdir past its budget ends the session
 * (E-RUN-013): the command that would start is refused, the task stops, later tasks end without a
 * turn. Through `serve` (`npm run build` first) with the scripted driver and real shell commands;
 * the walk itself on a real tree.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { workdirBytes } from "../../src/shell/WorkdirQuota.js"
import { call, driverCalls, endTurn, ofType, text, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { listeningCli, makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
const temp = () => {
  const dir = mkdtempSync(join(tmpdir(), "workdir-quota-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe("workdirBytes", () => {
  it("sums file sizes beneath the root without following links, and stops once past the bound", async () => {
    const root = temp()
    const outside = temp()
    writeFileSync(join(outside, "huge"), Buffer.alloc(50_000))
    mkdirSync(join(root, "a", "b"), { recursive: true })
    writeFileSync(join(root, "one"), Buffer.alloc(1000))
    writeFileSync(join(root, "a", "b", "two"), Buffer.alloc(2000))
    symlinkSync(outside, join(root, "a", "link"))
    const link = join(root, "a", "link")
    const linkBytes = (await import("node:fs")).lstatSync(link).size
    expect(await workdirBytes(root, 1_000_000)).toBe(3000 + linkBytes)
    expect(await workdirBytes(root, 500)).toBeGreaterThan(500)
  })
})

describe("capabilities.resources.workdir_max_bytes", () => {
  it("ends the session past the budget: the next command is refused, the task fails E-RUN-013, later tasks make no call", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: {
        replies: [
          toolTurn(text("Growing."), call("c1", "truncate", { command: "-s 200000 big.bin" })),
          toolTurn(text("Echoing."), call("c2", "echo", { command: "after" })),
          endTurn("done")
        ]
      },
      capabilities: "  shell:\n    allow: [truncate, echo]\n  resources:\n    workdir_max_bytes: 100000\n",
      extra: "lifecycle:\n  task_acceptance: queue\n  after_task: sleep\n"
    })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const served = await listeningCli(["serve", dir, "--json", "--port", "0"], { MURMUR_HOME: temp() }, cleanups)
    const send = async (words: string) =>
      (await rpc(served.listening.url, "message/send", { message: referenceMessage(words), configuration: { blocking: true } })).body.result

    const first = await send("grow")
    expect(first.status.state).toBe("failed")
    expect(JSON.stringify(first.status.message)).toContain("E-RUN-013: the workdir holds more than capabilities.resources.workdir_max_bytes (100000 bytes")
    const calls = driverCalls(served.listening.workdir)
    const second = await send("again")
    expect(second.status.state).toBe("failed")
    expect(JSON.stringify(second.status.message)).toContain("E-RUN-013")
    expect(driverCalls(served.listening.workdir)).toBe(calls)

    const trace = traceLines(served.listening.records)
    // truncate ran; echo never started.
    expect(ofType(trace, "shell").map((line) => line.command)).toEqual(["-s 200000 big.bin"])
    const exceeded = ofType(trace, "workdir_limit_exceeded")
    expect(exceeded[0]).toMatchObject({ task_id: first.id, limit_bytes: 100000 })
    expect(exceeded[0]!.bytes).toBeGreaterThan(100000)
    expect(ofType(trace, "task_end").map((line) => line.exit_status)).toEqual(["failed", "failed"])
  }, 60_000)
})
