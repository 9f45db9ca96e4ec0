/**
 * A failed `run` says why once: the status message already carries the reason that
 * out/result.txt holds ("error: …"), so stderr names it one time, and stdout keeps the two lines
 * the reference's integration tests parse (`status:  failed`, `workdir: …`).
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

let dir: string | undefined
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

it("a driver error is printed once, with the task's state, then status and workdir", async () => {
  dir = await makeAgentCapsuleDir({ driverConfig: { replies: [{ stop_reason: "error", error: "provider exploded" }] } })
  const run = await runCli(["run", dir, "--task", "hi"])
  expect(run.code).toBe(1)
  const workdir = run.stdout.match(/^workdir: (.+)$/m)?.[1]
  expect(run.stdout).toContain(`status:  failed\nworkdir: ${workdir}`)
  // The reason is really in the file, so a missing repeat is the fix and not a lost reason.
  expect(readFileSync(join(workdir!, "out", "result.txt"), "utf8")).toContain("provider exploded")
  expect(run.stderr.match(/provider exploded/g), run.stderr).toHaveLength(1)
  expect(run.stderr).toMatch(/^task tsk_[0-9a-f]+ failed: .*provider exploded/m)
})
