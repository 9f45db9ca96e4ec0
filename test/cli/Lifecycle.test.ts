/**
 * Issue 23 item 1, through `node dist/main.js`: declaring `lifecycle: { conversation: threaded }`
 * alone leaves task acceptance at `queue` (it turned it into `single`, and every later task was
 * refused "capsule is busy"), and `validate --strict` passes it; a combination in which one key
 * undoes another (threaded under `single`, `after_task: sleep` without `queue`) is
 * `W-LIFECYCLE`, printed by `validate` (fatal with `--strict`) and by `serve` at start.
 * (`npm run build` first.)
 */
import { rmSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { cliScratch } from "../lib/Scratch.js"
import { makeAgentCapsuleDir, runCli, serveCli, until } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const { cleanups, env } = cliScratch()

const replies = ["one", "two"].map((text) => ({ stop_reason: "end_turn", content: [{ type: "text", text }] }))

const capsule = async (lifecycle: string) => {
  // The endpoint in the grant: validate --strict would fail on W-VAL-001 otherwise.
  const dir = await makeAgentCapsuleDir({ driverConfig: { replies }, capabilities: "  network:\n    allow: [\"http://127.0.0.1:9\"]\n", extra: `lifecycle: ${lifecycle}\n` })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe("lifecycle defaults do not move when another key is declared", () => {
  it("conversation: threaded alone validates strictly and takes a second task in the same context", async () => {
    const dir = await capsule("{ conversation: threaded }")
    const checked = await runCli(["validate", dir, "--strict"], env)
    expect(checked.code, checked.stderr).toBe(0)
    expect(checked.stderr).toBe("")
    const { listening, stderr } = await serveCli(dir, env, cleanups)
    for (const text of ["my name is Ada", "what is my name?"]) {
      const reply = await rpc(listening.url, "message/send", { message: referenceMessage(text, { contextId: "ctx-1" }), configuration: { blocking: true } })
      expect(reply.body.result.status.state, JSON.stringify(reply.body)).toBe("completed")
    }
    expect(stderr()).not.toContain("W-LIFECYCLE")
  }, 90_000)

  it("threaded under single, and sleep without queue: validate names each, --strict fails, serve warns at start", async () => {
    const dir = await capsule("{ conversation: threaded, task_acceptance: single, after_task: sleep }")
    const lax = await runCli(["validate", dir], env)
    expect(lax.code, lax.stderr).toBe(0)
    const warnings = lax.stderr.trim().split("\n")
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/^warning\[W-LIFECYCLE\]: lifecycle\.conversation: threaded under task_acceptance: single: .*'capsule is busy'/)
    expect(warnings[1]).toMatch(/^warning\[W-LIFECYCLE\]: lifecycle\.after_task: sleep has no effect under task_acceptance: single/)
    const strict = await runCli(["validate", dir, "--strict"], env)
    expect(strict.code).toBe(1)
    expect(strict.stderr).toMatch(/: 2 warnings\n$/)
    const served = await serveCli(dir, env, cleanups)
    await until(() => served.stderr().includes("warning[W-LIFECYCLE]: lifecycle.conversation: threaded under task_acceptance: single"), "serve's warning")
  }, 90_000)
})
