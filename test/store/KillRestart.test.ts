/**
 * `serve` with a SQLite store, killed with -9 at random moments while tasks run, queue and
 * stream, then started again on the same store: every task that got an answer is found and ends
 * (the queued ones run, the running one fails saying why), none is lost or doubled, event ids
 * only grow, and a watcher resuming with `Last-Event-ID` gets every later frame once, in order,
 * with no gap. Real processes, real SIGKILL.
 */
import { afterEach, describe, expect, it } from "vitest"
import * as fc from "fast-check"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { call, endTurn, toolTurn } from "../lib/AgentE2E.js"
import { listeningCli, makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"
import { a2aMessage, openStream, rpc, type SseEvent, sleep, waitForState } from "../lib/Door.js"
import { freshSchemaUrl, postgresAvailable } from "../lib/Postgres.js"

const postgres = await postgresAvailable()

/** The stores the property runs against, and how many kills each gets. */
const stores: ReadonlyArray<{ readonly name: string; readonly make: () => Promise<string>; readonly runs: number }> = [
  { name: "SQLite", make: async () => `sqlite:${join(mkdtempSync(join(tmpdir(), "kill-store-")), "session.db")}`, runs: 3 },
  ...(postgres ? [{ name: "PostgreSQL", make: freshSchemaUrl, runs: 2 }] : [])
]

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const terminal = ["completed", "failed", "canceled", "rejected"]

/** Reads a watch stream in the background: every event, until the stream ends or breaks. */
const watch = async (url: string, headers: Record<string, string> = {}) => {
  const controller = new AbortController()
  const { events } = await openStream(url, "stream/watch", {}, { headers, signal: controller.signal })
  const seen: Array<SseEvent> = []
  const done = (async () => {
    try {
      for await (const event of events) seen.push(event)
    } catch {
      // The server was killed, or the test stopped reading.
    }
  })()
  cleanups.push(() => controller.abort())
  return { seen, stop: async () => (controller.abort(), await done) }
}

const finalOf = (event: SseEvent): string | undefined => {
  if (event.event !== "status" || event.data === undefined) return undefined
  const data = JSON.parse(event.data) as { readonly id?: string; readonly final?: boolean }
  return data.final === true ? data.id : undefined
}

describe.each(stores)("serve with a $name store, killed with -9 and started again", ({ make, runs }) => {
  it("keeps every answered task, runs the queued ones, fails the interrupted one, and resumes watchers without gap or repeat", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: { replies: [toolTurn(call("c1", "sleep", { command: "0.3" })), endTurn("done")] },
      capabilities: "  shell:\n    allow: [sleep]\n",
      extra: "lifecycle:\n  task_acceptance: queue\n  queue_depth: 8\n"
    })
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 2_500 }), async (killAfter) => {
        const args = ["serve", dir, "--json", "--store", await make(), "--max-active", "1"]
        const first = await listeningCli(args, {}, cleanups)
        const url = first.listening.url as string
        const watcher = await watch(url)
        const answered: Array<string> = []
        for (const text of ["one", "two", "three"]) {
          const reply = await rpc(url, "message/send", { message: a2aMessage(text), configuration: { blocking: false } })
          expect(reply.status).toBe(200)
          answered.push(reply.body.result.id as string)
        }
        await sleep(killAfter)
        first.child.kill("SIGKILL")
        await first.exited
        await watcher.stop()
        const lastSeen = Math.max(0, ...watcher.seen.flatMap((event) => event.id === undefined ? [] : [event.id]))
        const finalBefore = new Set(watcher.seen.flatMap((event) => finalOf(event) ?? []))

        const second = await listeningCli(args, {}, cleanups)
        const again = second.listening.url as string
        expect(second.listening.session_id).toBe(first.listening.session_id)
        const resumed = await watch(again, { "Last-Event-ID": String(lastSeen) })
        for (const taskId of answered) {
          const task = await waitForState(again, taskId, terminal, 30_000)
          expect(["completed", "failed"], JSON.stringify(task.status)).toContain(task.status.state)
          if (task.status.state === "failed") expect(JSON.stringify(task.status)).toContain("restarted")
        }
        // Every task, once: the store holds the three and no other.
        const listed = await rpc(again, "ListTasks", {}, { headers: { "A2A-Version": "1.0" } })
        expect((listed.body.result.tasks as Array<{ id: string }>).map((task) => task.id).sort()).toEqual([...answered].sort())
        // The resumed watcher: from the frame after the last one seen, every id once, up to each task's end.
        const deadline = Date.now() + 10_000
        const finals = () => new Set([...finalBefore, ...resumed.seen.flatMap((event) => finalOf(event) ?? [])])
        while (answered.some((taskId) => !finals().has(taskId)) && Date.now() < deadline) await sleep(20)
        await resumed.stop()
        expect(answered.filter((taskId) => !finals().has(taskId))).toEqual([])
        expect(resumed.seen.some((event) => event.event === "gap")).toBe(false)
        const ids = resumed.seen.flatMap((event) => event.id === undefined ? [] : [event.id])
        expect(ids).toEqual(ids.map((_, i) => lastSeen + 1 + i))
        // The trace is whole: every line is JSON (a line is one write; a kill leaves no half line).
        for (const line of readFileSync(join(second.listening.records as string, "trace.jsonl"), "utf8").trim().split("\n")) {
          expect(() => JSON.parse(line)).not.toThrow()
        }
        second.child.kill("SIGTERM")
        await second.exited
      }),
      { numRuns: runs }
    )
  }, 240_000)
})
