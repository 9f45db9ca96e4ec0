/**
 * `lifecycle.conversation: threaded` through `serve --json` (the scripted driver fixture writes
 * each request it receives, so the test asserts on the history the "model" got): three tasks in
 * one context recall the earlier turns, connection-ack says `threaded`, a serve killed with
 * SIGKILL and started again on the same record store (MURMUR_HOME) continues the thread; a
 * stateless capsule does not. The record's torn-line handling and retain trimming in process.
 * (`npx tsc -p tsconfig.build.json` first.)
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { Conversations, readRecords, retained } from "../../src/agent/Conversations.js"
import { makeAgentCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { dataOf, nodeStream, readUntil } from "../lib/DoorKit.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const home = mkdtempSync(join(tmpdir(), "murmur-home-"))
cleanups.push(() => rmSync(home, { recursive: true, force: true }))

const replies = ["one", "two", "three", "four"].map((text) => ({ stop_reason: "end_turn", content: [{ type: "text", text }] }))
const texts = (request: any) => request.messages.map((message: any) => `${message.role}:${message.content.map((block: any) => block.text ?? "").join("")}`)
const request = (workdir: string, n: number) => JSON.parse(readFileSync(join(workdir, `driver-request-${n}.json`), "utf8"))

const send = async (url: string, text: string, contextId: string) => {
  const reply = await rpc(url, "message/send", { message: referenceMessage(text, { contextId }), configuration: { blocking: true } })
  expect(reply.body.result.status.state).toBe("completed")
}

describe("threaded conversations", () => {
  it("three tasks in one context recall the earlier turns; a restarted serve on the same store continues; stateless does not", async () => {
    const dir = await makeAgentCapsuleDir({ driverConfig: { replies }, extra: "lifecycle: { conversation: threaded, task_acceptance: queue, queue_depth: 4 }\ncontext: { record_store: thread-test }\n" })
    const statelessDir = await makeAgentCapsuleDir({ driverConfig: { replies } })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(statelessDir, { recursive: true, force: true }))
    const env = { MURMUR_HOME: home }
    const [first, stateless] = await Promise.all([serveCli(dir, env, cleanups), serveCli(statelessDir, env, cleanups)])

    const watch = await nodeStream(first.listening.url, "stream/watch", {})
    cleanups.push(() => watch.destroy())
    const ack = await readUntil(watch.events, (event) => event.event === "connection-ack", 5_000)
    expect(dataOf(ack.at(-1)!)).toMatchObject({ conversation_mode: "threaded" })

    await send(first.listening.url, "my name is Ada", "ctx-thread")
    await send(first.listening.url, "what is my name?", "ctx-thread")
    await send(first.listening.url, "and again?", "ctx-thread")
    const fenced = (text: string) => expect.stringContaining(text)
    expect(texts(request(first.listening.workdir, 1))).toEqual([fenced("my name is Ada")])
    expect(texts(request(first.listening.workdir, 2))).toEqual([fenced("my name is Ada"), "assistant:one", fenced("what is my name?")])
    expect(texts(request(first.listening.workdir, 3))).toEqual([
      fenced("my name is Ada"), "assistant:one", fenced("what is my name?"), "assistant:two", fenced("and again?")
    ])
    // Another context starts fresh.
    await send(first.listening.url, "a stranger", "ctx-other")
    expect(texts(request(first.listening.workdir, 1))).toEqual([fenced("a stranger")])

    const record = join(home, "conversations", "thread-test", "ctx-thread", "conversation.jsonl")
    expect(readRecords(record).map((line) => line.messages.length)).toEqual([1, 1, 1, 1, 1, 1])

    // kill -9, then a new serve on the same store: the thread goes on.
    first.child.kill("SIGKILL")
    await first.exited
    const second = await serveCli(dir, env, cleanups)
    await send(second.listening.url, "still there?", "ctx-thread")
    expect(texts(request(second.listening.workdir, 4))).toEqual([
      fenced("my name is Ada"), "assistant:one", fenced("what is my name?"), "assistant:two", fenced("and again?"), "assistant:three", fenced("still there?")
    ])

    await send(stateless.listening.url, "my name is Ada", "ctx-thread")
    await send(stateless.listening.url, "what is my name?", "ctx-thread")
    expect(texts(request(stateless.listening.workdir, 1))).toEqual([fenced("what is my name?")])
  }, 90_000)
})

describe("the durable record", () => {
  const message = (role: "user" | "assistant", text: string) => ({ role, content: [{ type: "text" as const, text }] })

  it("a torn last line (a crash mid-append) is skipped, and the next record starts on its own line", async () => {
    const store = mkdtempSync(join(tmpdir(), "store-"))
    cleanups.push(() => rmSync(store, { recursive: true, force: true }))
    const conversations = Effect.runSync(Effect.provide(Conversations, Conversations.layer({ store: { root: store, name: "s" }, retain: undefined })))
    await Effect.runPromise(conversations.append("c", "t1", [message("user", "hello")]))
    const file = join(store, "s", "c", "conversation.jsonl")
    appendFileSync(file, `{"v":1,"at":1,"task_id":"t2","messages":[{"role":"user","cont`)
    const fresh = Effect.runSync(Effect.provide(Conversations, Conversations.layer({ store: { root: store, name: "s" }, retain: undefined })))
    expect((await Effect.runPromise(fresh.history("c"))).length).toBe(1)
    await Effect.runPromise(fresh.append("c", "t3", [message("assistant", "after the crash")]))
    expect(readRecords(file).map((record) => record.task_id)).toEqual(["t1", "t3"])
  })

  it("retain: max_messages drops whole records from the front and starts at a user message; max_age drops old records", () => {
    const records = [
      { v: 1 as const, at: 0, task_id: "a", messages: [message("user", "u1")] },
      { v: 1 as const, at: 0, task_id: "a", messages: [message("assistant", "a1")] },
      { v: 1 as const, at: 5_000, task_id: "b", messages: [message("user", "u2")] },
      { v: 1 as const, at: 5_000, task_id: "b", messages: [message("assistant", "a2")] }
    ]
    expect(retained(records, { maxMessages: 3 }).map((m) => m.content[0]!.text)).toEqual(["u2", "a2"])
    expect(retained(records, { maxMessages: 4 }).length).toBe(4)
    expect(retained(records, { maxAgeSecs: 2 }, 6_000).map((m) => m.content[0]!.text)).toEqual(["u2", "a2"])
  })
})
