/**
 * `serve` whose SQLite store fills its disk (a small tmpfs this test mounts): new tasks are
 * refused with a message that says why while commits fail, nothing committed before is lost,
 * the process stays healthy, and the session carries on by itself when space returns. Needs
 * root to mount; elsewhere it skips with one line.
 */
import { afterEach, describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { listeningCli } from "../lib/CapsuleDirs.js"
import { makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"
import { endTurn } from "../lib/AgentE2E.js"
import { a2aMessage, rpc, sleep, waitForState } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const mounted = (() => {
  if (process.getuid?.() !== 0) return undefined
  const dir = mkdtempSync(join(tmpdir(), "full-disk-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", dir], { stdio: "ignore" })
    return dir
  } catch {
    return undefined
  }
})()
if (mounted === undefined) console.log("skipped: the disk-full test (it mounts a tmpfs, which needs root and mount(8))")

/** Fills what is left of the tmpfs; returns the filler files to delete. */
const fill = (dir: string): Array<string> => {
  const files: Array<string> = []
  for (let i = 0; ; i++) {
    const file = join(dir, `filler-${i}`)
    try {
      const free = statfsSync(dir).bavail * statfsSync(dir).bsize
      writeFileSync(file, Buffer.alloc(Math.max(4096, Math.min(free, 1 << 20))))
      files.push(file)
    } catch {
      files.push(file)
      return files
    }
  }
}

describe.skipIf(mounted === undefined)("serve with its SQLite store on a full disk", () => {
  it("refuses new tasks saying why, keeps what was committed, and carries on when space returns", async () => {
    const disk = mounted!
    cleanups.push(() => void execFileSync("umount", ["-l", disk], { stdio: "ignore" }))
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [endTurn("done")] },
      extra: "lifecycle:\n  task_acceptance: queue\n  queue_depth: 8\n"
    })
    const served = await listeningCli(["serve", dir, "--json", "--store", `sqlite:${join(disk, "session.db")}`], {}, cleanups)
    const url = served.listening.url as string
    const before = await rpc(url, "message/send", { message: a2aMessage("before") })
    expect(before.body.result.status.state).toBe("completed")

    const fillers = fill(disk)
    // Commits fail now: the first change after the disk filled waits, and the session refuses new work.
    const stuck = rpc(url, "message/send", { message: a2aMessage("while full"), configuration: { blocking: false } })
    let refused: any
    for (let i = 0; i < 100 && refused === undefined; i++) {
      await sleep(100)
      const reply = await rpc(url, "message/send", { message: a2aMessage(`probe ${i}`), configuration: { blocking: false } })
      if (reply.body.result?.status?.state === "rejected") refused = reply.body.result
    }
    expect(refused?.status?.message?.parts?.[0]?.text).toContain("store cannot be written")
    // Healthy meanwhile: what was committed reads back.
    expect((await rpc(url, "tasks/get", { id: before.body.result.id })).body.result.status.state).toBe("completed")

    for (const file of fillers) rmSync(file, { force: true })
    const waited = await stuck
    expect(waited.status).toBe(200)
    await waitForState(url, waited.body.result.id, ["completed"], 20_000)
    const after = await rpc(url, "message/send", { message: a2aMessage("after") })
    expect(after.body.result.status.state).toBe("completed")
    served.child.kill("SIGTERM")
    await served.exited

    // Everything answered is in the store: a restart finds it.
    const again = await listeningCli(["serve", dir, "--json", "--store", `sqlite:${join(disk, "session.db")}`], {}, cleanups)
    for (const id of [before.body.result.id, waited.body.result.id, after.body.result.id]) {
      expect((await rpc(again.listening.url, "tasks/get", { id })).body.result.status.state).toBe("completed")
    }
  }, 120_000)
})
