/**
 * A delegated child never outlives the process that started it: the parent keeps the child's
 * stdin open after the task document, and the child stops, with its own shell commands, once that
 * pipe closes, which is what the kernel does when the parent is killed with -9. A real `run`
 * process and a real `sleep` under the shell allowlist.
 */
import { spawn, spawnSync } from "node:child_process"
import { afterEach, describe, expect, it } from "vitest"
import { encodeDelegationInput } from "../../src/delegation/DelegationInput.js"
import { encodeSpawnerHandle } from "../../src/delegation/SpawnerHandle.js"
import { call, endTurn, toolTurn } from "../lib/AgentE2E.js"
import { cliCacheDir, makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"

const main = new URL("../../dist/main.js", import.meta.url).pathname
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const cleanups: Array<() => void> = []
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()))

/** Pids of processes whose command line holds `marker`. */
const running = (marker: string) =>
  spawnSync("pgrep", ["-f", marker], { encoding: "utf8" }).stdout.split("\n").filter((line) => line.trim() !== "")

describe("a delegated child's lifeline", () => {
  it("stops the child and its shell command when the parent's end of stdin closes", async () => {
    const seconds = "41.731"
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [toolTurn(call("c1", "sleep", { command: seconds })), endTurn("done")] },
      capabilities: "  shell:\n    allow: [sleep]\n"
    })
    const child = spawn(process.execPath, [main, "run", dir, "--json", "--host", "127.0.0.1", "--port", "0"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir,
        MURMUR_STORE: "memory",
        MURMUR_SPAWNER: encodeSpawnerHandle({ sessionId: "ses_0123abcd", contextId: "ctx_lifeline", delegationId: "dlg_0123abcd", depth: 1, maxDepth: 2, input: "stdin" })
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
    cleanups.push(() => child.kill("SIGKILL"))
    let stderr = ""
    child.stderr.on("data", (chunk) => (stderr += chunk))
    // The task on one line, and the pipe left open: the parent is alive.
    child.stdin.write(encodeDelegationInput({ task: "sleep for a while", secret: "0123456789abcdef0123" }))
    const deadline = Date.now() + 30_000
    while (running(`sleep ${seconds}`).length === 0) {
      if (Date.now() > deadline) throw new Error(`the child's shell command never started; stderr: ${stderr}`)
      await sleep(100)
    }
    // Still running a moment later: an open pipe is a live parent.
    await sleep(500)
    expect(child.exitCode).toBeNull()
    const closedAt = Date.now()
    child.stdin.destroy()
    await exited
    expect(Date.now() - closedAt).toBeLessThan(10_000)
    const gone = Date.now() + 5_000
    while (running(`sleep ${seconds}`).length > 0 && Date.now() < gone) await sleep(100)
    expect(running(`sleep ${seconds}`)).toEqual([])
  }, 60_000)
})
