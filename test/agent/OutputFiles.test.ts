/**
 * A task's output files come back as file parts (`serve <agent dir>`, the CLI; `npm run build`
 * first): what the task wrote under `exports.files.root` is one `files` artifact, a small file
 * inline (its bytes), a large one a link to the door's resource plane that serves it; files
 * that were there before the task, and the runtime's own `out/result.txt`, are not in it.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { makeAgentCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe("output files", () => {
  it("come back as file parts: small ones inline, large ones linked on the resource plane", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: {
        replies: [
          { stop_reason: "tool_call", content: [{ type: "tool_call", id: "c1", name: "sh", input: { command: "printf hi > out/small.txt; printf '%070000d' 0 > out/big.txt" } }] },
          { stop_reason: "end_turn", content: [{ type: "text", text: "wrote them" }] }
        ]
      },
      capabilities: "  shell:\n    allow: [sh]\n",
      extra: "exports:\n  files:\n    root: out\n    mode: read-only\n    max_bytes: 1048576\n"
    })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const { listening } = await serveCli(dir, {}, cleanups)
    mkdirSync(join(listening.workdir, "out"), { recursive: true })
    writeFileSync(join(listening.workdir, "out", "before.txt"), "old")
    await new Promise((resolve) => setTimeout(resolve, 20))
    const reply = await rpc(listening.url, "SendMessage", { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "write" }] } })
    const task = reply.body.result.task
    expect(task.status.state, JSON.stringify(reply.body)).toBe("TASK_STATE_COMPLETED")
    const files = task.artifacts.find((artifact: { name: string }) => artifact.name === "files")
    expect(files.parts).toEqual([
      { url: `${listening.url}resources/files/big.txt`, filename: "big.txt" },
      { raw: Buffer.from("hi").toString("base64"), filename: "small.txt" }
    ])
    const linked = await fetch(files.parts[0].url)
    expect(linked.status).toBe(200)
    expect((await linked.text()).length).toBe(70000)
    // The 0.3 shape of the same artifact, and the reference's text summary.
    const old = (await rpc(listening.url, "tasks/get", { id: task.id }, { headers: { "a2a-version": "0.3" } })).body.result
    expect(old.artifacts.find((artifact: { name: string }) => artifact.name === "files").parts[1]).toEqual({ kind: "file", file: { bytes: "aGk=", name: "small.txt" } })
  }, 60_000)
})
