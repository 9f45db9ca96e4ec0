/**
 * The ticking capsule of test/lib/FleetCapsule.ts, served by today's single-process `serve`:
 * a `message/stream` task streams at least `ticks` frames spread over time, then completes, and
 * the session takes many tasks at once (they queue).
 */
import { rmSync } from "node:fs"
import { afterEach, describe, expect, it } from "vitest"
import { listeningCli } from "./CapsuleDirs.js"
import { a2aMessage, openStream, rpc, type SseEvent, waitForState } from "./Door.js"
import { makeTickingCapsuleDir } from "./FleetCapsule.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const serveTicking = async (options: Parameters<typeof makeTickingCapsuleDir>[0]) => {
  const dir = await makeTickingCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const served = await listeningCli(["serve", "--json", "--port", "0", "--store", "memory", dir], {}, cleanups)
  return served.listening.url
}

describe("makeTickingCapsuleDir", () => {
  it("streams ticks frames about tickMs apart, then completes", async () => {
    const ticks = 30
    const tickMs = 100
    const url = await serveTicking({ ticks, tickMs })
    const controller = new AbortController()
    cleanups.push(() => controller.abort())
    const { response, events } = await openStream(url, "message/stream", { message: a2aMessage("tick") }, { signal: controller.signal })
    expect(response.status).toBe(200)
    const frames: Array<{ readonly at: number; readonly event: SseEvent; readonly result: any }> = []
    for await (const event of events) {
      if (event.data === undefined) continue
      const result = JSON.parse(event.data).result
      frames.push({ at: Date.now(), event, result })
      if (result?.kind === "status-update" && result.final === true) break
    }
    const timeline = frames.map((frame) => `${frame.at - frames[0]!.at} ms #${frame.event.id} ${frame.result?.kind}`).join("\n")
    const last = frames.at(-1)!.result
    expect(last.status.state, JSON.stringify(last)).toBe("completed")
    expect(frames.filter((frame) => frame.result?.kind === "artifact-update").length, timeline).toBeGreaterThanOrEqual(ticks)
    expect(frames.at(-1)!.at - frames[0]!.at, timeline).toBeGreaterThanOrEqual(ticks * tickMs * 0.5)
  })

  it("takes many tasks at once: they queue and all complete", async () => {
    const url = await serveTicking({ ticks: 2, tickMs: 50 })
    const ids: Array<string> = []
    for (let i = 0; i < 12; i++) {
      const reply = await rpc(url, "message/send", { message: a2aMessage(`task ${i}`), configuration: { blocking: false } })
      expect(reply.status).toBe(200)
      expect(reply.body.result?.status?.state, JSON.stringify(reply.body)).not.toBe("rejected")
      ids.push(reply.body.result.id)
    }
    for (const id of ids) expect((await waitForState(url, id, ["completed", "failed", "canceled", "rejected"], 30_000)).status.state).toBe("completed")
  })
})
