/** A message sent again with the same `messageId` gets the task it started, in every form of send. */
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { makeDoorCredentials } from "../../src/http/DoorCredentials.js"
import { a2aMessage, collect, type OpenDoor, openDoor, openStream, rpc } from "../lib/Door.js"

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const finalOf = (data: string | undefined) => (JSON.parse(data ?? "{}") as { result?: { final?: boolean; kind?: string } }).result

describe("idempotent submit", () => {
  it("message/send twice: the first task both times, one task in the session", async () => {
    door = await openDoor({ scripted: { echoMs: 20 } })
    const message = a2aMessage("/complete once")
    const first = await rpc(door.url, "message/send", { message })
    const again = await rpc(door.url, "message/send", { message })
    assert.strictEqual(first.body.result.status.state, "completed")
    assert.strictEqual(again.body.result.id, first.body.result.id)
    assert.strictEqual(again.body.result.status.state, "completed")
    const listed = await rpc(door.url, "ListTasks", {}, { headers: { "A2A-Version": "1.0" } })
    assert.deepStrictEqual(listed.body.result.tasks.map((task: { id: string }) => task.id), [first.body.result.id])
  })

  it("message/stream of a message whose task is running streams that task from its first frame to its end; of a finished one, the task", async () => {
    door = await openDoor({ scripted: { echoMs: 300 } })
    const message = a2aMessage("/stream 4 150")
    const started = await rpc(door.url, "message/send", { message, configuration: { blocking: false } })
    const taskId = started.body.result.id as string
    const { events } = await openStream(door.url, "message/stream", { message })
    const streamed = await collect(events, (event) => finalOf(event.data)?.final === true)
    const ids = streamed.map((event) => JSON.parse(event.data ?? "{}").result?.taskId ?? JSON.parse(event.data ?? "{}").result?.id)
    assert.isTrue(ids.every((id) => id === taskId), `every event is the first task's: ${JSON.stringify(ids)}`)
    assert.strictEqual(finalOf(streamed.at(-1)!.data)?.final, true)
    const { events: after } = await openStream(door.url, "message/stream", { message })
    const done = await collect(after)
    assert.strictEqual(done.length, 1)
    assert.strictEqual(JSON.parse(done[0]!.data!).result.id, taskId)
    assert.strictEqual(JSON.parse(done[0]!.data!).result.status.state, "completed")
  })

  it("another principal reusing the id is refused, and learns nothing of the task", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idempotent-"))
    const path = join(dir, "tokens.yaml")
    writeFileSync(path, "tokens:\n  alice:\n    token: tok-alice-0123456789abcdef\n    scopes: [send, read]\n  bob:\n    token: tok-bob-0123456789abcdef\n    scopes: [send, read]\n")
    chmodSync(path, 0o600)
    const credentials = Either.getOrThrow(makeDoorCredentials({ tokensFile: path }))
    door = await openDoor({ door: { credentials }, scripted: { echoMs: 20 } })
    const message = a2aMessage("/complete alice")
    const alice = await rpc(door.url, "message/send", { message }, { headers: { authorization: "Bearer tok-alice-0123456789abcdef" } })
    assert.strictEqual(alice.body.result.status.state, "completed")
    const bob = await rpc(door.url, "message/send", { message }, { headers: { authorization: "Bearer tok-bob-0123456789abcdef" } })
    assert.strictEqual(bob.body.error.code, -32602)
    assert.notInclude(JSON.stringify(bob.body), alice.body.result.id)
  })
})
