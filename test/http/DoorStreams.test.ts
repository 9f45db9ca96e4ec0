/**
 * The door's SSE methods over real HTTP: `message/stream` in both dialects, `stream/watch`
 * (observers across tasks, `Last-Event-ID` replay, gaps, `capsule-closed`, lagged consumers),
 * `tasks/resubscribe`, and heartbeats.
 */
import { describe, expect, it } from "vitest"
import type { SseEvent } from "../lib/Door.js"
import { a2aMessage, referenceMessage, rpc, sleep, waitForState } from "../lib/Door.js"
import { dataOf, nodeStream, readUntil } from "../lib/DoorKit.js"
import { doorPerTest } from "../lib/DoorPerTest.js"

const doors = doorPerTest()
const { open } = doors

const stream = async (...args: Parameters<typeof nodeStream>) => {
  const opened = await nodeStream(...args)
  doors.onCleanup(() => opened.destroy())
  return opened
}

const numbered = (events: ReadonlyArray<SseEvent>) => events.filter((event) => event.id !== undefined)
const isFinalStatus = (event: SseEvent) => event.event === "status" && dataOf(event).final === true
const finalOf = (taskId: string) => (event: SseEvent) => isFinalStatus(event) && dataOf(event).id === taskId
const a2aFinal = (event: SseEvent) => event.data !== undefined && dataOf(event).result?.final === true

const sendRef = async (url: string, text: string) => {
  const reply = await rpc(url, "message/send", { message: referenceMessage(text) })
  expect(reply.body.error).toBeUndefined()
  return reply.body.result
}

describe("message/stream, reference dialect", () => {
  it("streams its task's frames with snake_case context_id and closes after the final status", async () => {
    const { url } = await open()
    const { status, headers, events } = await stream(url, "message/stream", { message: referenceMessage("/stream 3 10") })
    expect(status).toBe(200)
    expect(headers["content-type"]).toMatch(/^text\/event-stream/)
    expect(headers["cache-control"]).toBe("no-cache")
    const all = await readUntil(events) // to the end: the server closes it
    expect(all.every((event) => event.id !== undefined)).toBe(true)
    const ids = all.map((event) => event.id!)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
    expect(all.map((event) => event.event)).toEqual(["status", "text", "text", "text", "text", "status"])
    const first = dataOf(all[0]!)
    expect(first.id).toMatch(/^tsk_/)
    expect(first.context_id).toMatch(/^ctx_/)
    expect(first).not.toHaveProperty("contextId")
    expect(first).toMatchObject({ status: { state: "working" }, final: false })
    expect(all.slice(1, 4).map((event) => dataOf(event))).toEqual([1, 2, 3].map((i) => ({ id: first.id, text: `chunk ${i} `, final: false })))
    expect(dataOf(all[4]!)).toEqual({ id: first.id, text: "", final: true })
    expect(dataOf(all[5]!)).toEqual({
      id: first.id,
      context_id: first.context_id,
      status: { state: "completed", message: "session ended", response: "streamed 3 chunks" },
      final: true
    })
    const task = await rpc(url, "tasks/get", { id: first.id })
    expect(task.body.result.status.state).toBe("completed")
  })

  it("delivers only its own task's frames, even with a Last-Event-ID, and closes on its own final frame", async () => {
    const { url } = await open()
    const other = await sendRef(url, "/stream 40 10")
    await waitForState(url, other.id, ["working"])
    const { events } = await stream(url, "message/stream", { message: referenceMessage("/stream 3 15") }, {
      headers: { "last-event-id": "0" }
    })
    const all = await readUntil(events)
    const own = dataOf(all[0]!).id
    expect(own).not.toBe(other.id)
    expect(all.length).toBeGreaterThanOrEqual(5)
    expect(all.every((event) => dataOf(event).id === own)).toBe(true)
    expect(isFinalStatus(all.at(-1)!)).toBe(true)
    // The other task is still running: its frames neither reached nor closed this stream.
    expect((await rpc(url, "tasks/get", { id: other.id })).body.result.status.state).toBe("working")
  })

  it("stays open through another task's final frame", async () => {
    const { url } = await open()
    const { events } = await stream(url, "message/stream", { message: referenceMessage("/sleep 250") })
    const head = await readUntil(events, (event) => event.event === "status")
    const own = dataOf(head[0]!).id
    const quick = await sendRef(url, "/complete quick")
    await waitForState(url, quick.id, ["completed"])
    const rest = await readUntil(events)
    expect(rest.map((event) => dataOf(event).id)).toEqual(rest.map(() => own))
    expect(dataOf(rest.at(-1)!)).toMatchObject({ id: own, status: { state: "completed", response: "slept 250 ms" }, final: true })
  })

  it("encodes thinking and artifact frames", async () => {
    const { url } = await open()
    const thinking = await readUntil((await stream(url, "message/stream", { message: referenceMessage("/think deep") })).events)
    const id = dataOf(thinking[0]!).id
    expect(thinking.map((event) => event.event)).toEqual(["status", "thinking", "text", "text", "status"])
    expect(dataOf(thinking[1]!)).toEqual({ id, text: "thinking about: deep", final: false })
    const artifact = await readUntil((await stream(url, "message/stream", { message: referenceMessage("/artifact report.md # Title") })).events)
    const frame = artifact.find((event) => event.event === "artifact")!
    expect(dataOf(frame)).toEqual({ id: dataOf(artifact[0]!).id, artifact: { tool_name: "report.md", content: "# Title" } })
  })

  it("reports invalid params as an SSE error frame whose data is valid JSON", async () => {
    const { url } = await open()
    const { status, headers, events } = await stream(url, "message/stream", {
      message: { messageId: "m-1", role: { said: "quote\"d" }, parts: [{ text: "x" }] }
    })
    expect(status).toBe(200)
    expect(headers["content-type"]).toMatch(/^text\/event-stream/)
    const all = await readUntil(events)
    expect(all).toHaveLength(1)
    expect(all[0]!.event).toBe("error")
    expect(all[0]!.id).toBeUndefined()
    const data = dataOf(all[0]!)
    expect(Object.keys(data)).toEqual(["error"])
    expect(data.error).toMatch(/^Invalid params: /)
    expect(data.error).toContain("\"")

    const missing = await readUntil((await stream(url, "message/stream", { "": "x" })).events)
    expect(missing.map((event) => event.event)).toEqual(["error"])
    expect(dataOf(missing[0]!).error).toMatch(/^Invalid params: /)
  })

  it("starts a new task rather than answering a waiting one (no input delivery without taskId)", async () => {
    const { url } = await open()
    const waiting = await sendRef(url, "/ask which?")
    await waitForState(url, waiting.id, ["input-required"])
    const all = await readUntil((await stream(url, "message/stream", { message: referenceMessage("/complete other") })).events)
    expect(dataOf(all[0]!).id).not.toBe(waiting.id)
    expect(dataOf(all.at(-1)!)).toMatchObject({ status: { state: "completed", response: "other" }, final: true })
    expect((await rpc(url, "tasks/get", { id: waiting.id })).body.result.status.state).toBe("input-required")
  })

  it("answers a busy refusal with one un-numbered rejected status frame", async () => {
    const { url } = await open({ door: { acceptance: "single" } })
    const first = await sendRef(url, "/sleep 200")
    const { events } = await stream(url, "message/stream", { message: referenceMessage("/complete") })
    const all = await readUntil(events)
    expect(all).toHaveLength(1)
    expect(all[0]).toMatchObject({ event: "status" })
    expect(all[0]!.id).toBeUndefined()
    const data = dataOf(all[0]!)
    expect(data.id).not.toBe(first.id)
    expect(data).toMatchObject({ status: { state: "rejected", message: "task rejected: capsule is busy" }, final: true })
  })
})

describe("message/stream, A2A dialect", () => {
  it("sends JSON-RPC responses with the request id, the Task first, and closes at the final event", async () => {
    const { url } = await open()
    const { events } = await stream(url, "message/stream", { message: a2aMessage("/stream 3 10") }, { id: "s-1" })
    const all = await readUntil(events)
    const bodies = all.map(dataOf)
    for (const body of bodies) {
      expect(body.jsonrpc).toBe("2.0")
      expect(body.id).toBe("s-1")
      expect(body.error).toBeUndefined()
    }
    const results = bodies.map((body) => body.result)
    expect(results[0]).toMatchObject({ kind: "task", status: { state: "submitted" } })
    const taskId = results[0].id
    expect(results.slice(1).every((result) => result.taskId === taskId && result.contextId === results[0].contextId)).toBe(true)
    expect(results[1]).toMatchObject({ kind: "status-update", status: { state: "working" }, final: false })
    const chunks = results.filter((result) => result.kind === "artifact-update")
    expect(chunks.map((chunk) => chunk.append)).toEqual([false, true, true, true])
    expect(chunks.map((chunk) => chunk.lastChunk)).toEqual([false, false, false, true])
    expect(new Set(chunks.map((chunk) => chunk.artifact.artifactId)).size).toBe(1)
    expect(chunks.map((chunk) => chunk.artifact.parts[0].text).join("")).toBe("chunk 1 chunk 2 chunk 3 ")
    const last = results.at(-1)
    expect(last).toMatchObject({ kind: "status-update", status: { state: "completed" }, final: true })
    expect(last.status.message.parts[0].text).toBe("streamed 3 chunks")
    expect(results.filter((result) => result.final === true)).toHaveLength(1)
  })

  it("two streams of one task carry the same events, each with its own request id and its own append flags", async () => {
    const { url } = await open()
    const first = await stream(url, "message/stream", { message: a2aMessage("/stream 8 40"), configuration: { blocking: false } }, { id: "s" })
    const early = await readUntil(first.events, (event) => event.data !== undefined && dataOf(event).result?.artifact?.parts?.[0]?.text === "chunk 3 ")
    const taskId = dataOf(early[0]!).result.id
    const second = await stream(url, "tasks/resubscribe", { id: taskId }, { id: "r" })
    const [late, joined] = await Promise.all([readUntil(first.events), readUntil(second.events)])
    const s = [...early, ...late]
    expect(s.every((event) => dataOf(event).id === "s")).toBe(true)
    expect(joined.every((event) => dataOf(event).id === "r")).toBe(true)
    const byId = new Map(s.filter((event) => event.id !== undefined).map((event) => [event.id, dataOf(event).result]))
    const shared = joined.filter((event) => event.id !== undefined)
    expect(shared.length).toBeGreaterThan(2)
    const chunks = shared.filter((event) => dataOf(event).result.kind === "artifact-update")
    // The resubscriber's first chunk opens the artifact for it; the first stream had opened it already.
    expect(chunks.map((event) => dataOf(event).result.append)).toEqual(chunks.map((_, i) => i > 0))
    expect(chunks.map((event) => byId.get(event.id)!.append)).toEqual(chunks.map(() => true))
    for (const event of shared) {
      const own = dataOf(event).result
      expect(own).toEqual({ ...byId.get(event.id), ...(own.kind === "artifact-update" ? { append: own.append } : {}) })
    }
  })

  it("closes at input-required, and a follow-up by taskId streams the next turn", async () => {
    const { url } = await open()
    const turn1 = (await readUntil((await stream(url, "message/stream", { message: a2aMessage("first words") }, { id: 1 })).events)).map(dataOf)
    const task = turn1[0].result
    expect(task.kind).toBe("task")
    expect(turn1.at(-1).result).toMatchObject({ kind: "status-update", status: { state: "input-required" }, final: true })
    expect(turn1.at(-1).result.status.message.parts[0].text).toBe("Say more, or /done to finish.")
    expect((await rpc(url, "tasks/get", { id: task.id })).body.result.status.state).toBe("input-required")

    const turn2 = (await readUntil((await stream(url, "message/stream", {
      message: a2aMessage("second words", { taskId: task.id, contextId: task.contextId })
    }, { id: 2 })).events)).map(dataOf)
    expect(turn2.every((body) => body.id === 2)).toBe(true)
    expect(turn2[0].result).toMatchObject({ kind: "task", id: task.id, status: { state: "working" } })
    const text = turn2.filter((body) => body.result.kind === "artifact-update").map((body) => body.result.artifact.parts[0].text).join("")
    expect(text).toBe("echo: second words")
    expect(turn2.at(-1).result).toMatchObject({ status: { state: "input-required" }, final: true })

    const turn3 = (await readUntil((await stream(url, "message/stream", { message: a2aMessage("/done", { taskId: task.id }) }, { id: 3 })).events)).map(dataOf)
    expect(turn3.at(-1).result).toMatchObject({ taskId: task.id, status: { state: "completed" }, final: true })
  })

  it("answers invalid params with a plain JSON-RPC error", async () => {
    const { url } = await open()
    const reply = await rpc(url, "message/stream", { message: a2aMessage("x", { parts: "invalid" }) }, { id: "bad" })
    expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
    expect(reply.body).toMatchObject({ jsonrpc: "2.0", id: "bad", error: { code: -32602 } })
    const file = await rpc(url, "message/stream", { message: a2aMessage("x", { parts: [{ kind: "file", file: { uri: "x:y" } }] }) }, { id: "f" })
    expect(file.body).toMatchObject({ id: "f", error: { code: -32602 } })
    const unknown = await rpc(url, "message/stream", { message: a2aMessage("x", { taskId: "tsk_nope" }) }, { id: "u" })
    expect(unknown.body).toMatchObject({ id: "u", error: { code: -32001 } })
  })

  it("a canceled task's stream gets the canceled final event, then closes", async () => {
    const { url } = await open()
    const { events } = await stream(url, "message/stream", { message: a2aMessage("/forever") }, { id: "c" })
    const head = await readUntil(events, (event) => dataOf(event).result.status?.message?.parts[0].text === "running until canceled")
    const taskId = dataOf(head[0]!).result.id
    const cancel = await rpc(url, "tasks/cancel", { id: taskId })
    expect(cancel.body.result.status.state).toBe("canceled")
    const rest = (await readUntil(events)).map(dataOf)
    expect(rest).toHaveLength(1)
    expect(rest[0]).toMatchObject({ id: "c", result: { kind: "status-update", taskId, status: { state: "canceled" }, final: true } })
    expect(rest[0].result.status.message.parts[0].text).toBe("task canceled")
    expect(await doors.door!.run(doors.door!.runner.running())).toBe(0)
  })

  it("answers a busy refusal with the rejected Task", async () => {
    const { url } = await open({ door: { acceptance: "single" } })
    await sendRef(url, "/sleep 200")
    const all = (await readUntil((await stream(url, "message/stream", { message: a2aMessage("/complete") }, { id: 9 })).events)).map(dataOf)
    expect(all).toHaveLength(1)
    expect(all[0]).toMatchObject({ id: 9, result: { kind: "task", status: { state: "rejected" } } })
  })
})

describe("stream/watch", () => {
  it("acks first, then carries frames of several tasks across turns, and capsule-closed at session end", async () => {
    const { url } = await open()
    const watch = await stream(url, "stream/watch", {})
    const ack = await readUntil(watch.events, () => true)
    expect(ack).toEqual([{ event: "connection-ack", data: JSON.stringify({ role: "observer", conversation_mode: "stateless" }) }])

    const first = await rpc(url, "message/send", { message: a2aMessage("turn one"), configuration: { blocking: true } })
    const taskA = first.body.result
    expect(taskA.status.state).toBe("input-required")
    await rpc(url, "message/send", { message: a2aMessage("turn two", { taskId: taskA.id }), configuration: { blocking: true } })
    await waitForState(url, taskA.id, ["input-required"])
    // A2A-shaped, so it starts a task instead of answering A's pending input.
    const taskB = (await rpc(url, "message/send", { message: a2aMessage("/complete bee"), configuration: { blocking: false } })).body.result
    await waitForState(url, taskB.id, ["completed"])
    await rpc(url, "tasks/cancel", { id: taskA.id })

    const frames = await readUntil(watch.events, finalOf(taskA.id))
    expect(frames.every((event) => event.id !== undefined)).toBe(true)
    const ids = frames.map((event) => event.id!)
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1))
    const byTask = (taskId: string) => frames.filter((event) => dataOf(event).id === taskId)
    const statesA = byTask(taskA.id).filter((event) => event.event === "status").map((event) => dataOf(event).status.state)
    expect(statesA).toEqual(["working", "input-required", "working", "input-required", "canceled"])
    const textA = byTask(taskA.id).filter((event) => event.event === "text").map((event) => dataOf(event).text).join("")
    expect(textA).toBe("echo: turn oneecho: turn two")
    const statusB = byTask(taskB.id).filter((event) => event.event === "status").map(dataOf)
    expect(statusB.at(-1)).toMatchObject({ context_id: taskB.contextId, status: { state: "completed", response: "bee" }, final: true })
    // B's final frame came before A's cancel and did not end the observer.
    expect(frames.indexOf(byTask(taskB.id).at(-1)!)).toBeLessThan(frames.length - 1)

    await doors.door!.close()
    const tail = await readUntil(watch.events)
    expect(tail).toEqual([{ event: "capsule-closed", data: "{}" }])
  })

  it("replays exactly the frames after Last-Event-ID, and everything buffered without one", async () => {
    const { url } = await open()
    const task = await sendRef(url, "/stream 6 5")
    await waitForState(url, task.id, ["completed"])
    const other = await sendRef(url, "/complete other")
    await waitForState(url, other.id, ["completed"])
    const lastId = await doors.door!.run(doors.door!.log.lastId())
    expect(lastId).toBeGreaterThan(8)

    const full = await stream(url, "stream/watch", {})
    const everything = await readUntil(full.events, (event) => event.id === lastId)
    expect(everything[0]!.event).toBe("connection-ack")
    expect(everything.slice(1).map((event) => event.id)).toEqual(Array.from({ length: lastId }, (_, i) => i + 1))

    for (const cursor of [1, 4, lastId - 1]) {
      const replay = await stream(url, "stream/watch", {}, { headers: { "last-event-id": String(cursor) } })
      const got = await readUntil(replay.events, (event) => event.id === lastId)
      expect(got[0]!.event).toBe("connection-ack")
      expect(got.slice(1)).toEqual(everything.filter((event) => event.id !== undefined && event.id > cursor))
    }

    // A cursor at the newest frame replays nothing, then delivers live frames.
    const live = await stream(url, "stream/watch", {}, { headers: { "last-event-id": String(lastId) } })
    expect(await readUntil(live.events, () => true)).toEqual([everything[0]])
    const next = await sendRef(url, "/complete next")
    const liveFrames = await readUntil(live.events, finalOf(next.id))
    expect(liveFrames[0]!.id).toBe(lastId + 1)
    expect(liveFrames.every((event) => dataOf(event).id === next.id)).toBe(true)
  })

  it("sends a gap frame when the cursor's frames were evicted, or when the cursor is ahead", async () => {
    const { url } = await open({ events: { capacity: 8 } })
    const task = await sendRef(url, "/stream 10 2")
    await waitForState(url, task.id, ["completed"])
    const lastId = await doors.door!.run(doors.door!.log.lastId())
    expect(lastId).toBe(13) // working, 10 chunks, end-of-text, completed
    const oldest = lastId - 7

    const evicted = await stream(url, "stream/watch", {}, { headers: { "last-event-id": "2" } })
    const got = await readUntil(evicted.events, (event) => event.id === lastId)
    expect(got.map((event) => event.event ?? "")).toEqual(["connection-ack", "gap", ...Array.from({ length: 7 }, () => "text"), "status"])
    expect(got[1]!.id).toBeUndefined()
    expect(dataOf(got[1]!)).toEqual({ first_available_id: oldest })
    expect(got.slice(2).map((event) => event.id)).toEqual(Array.from({ length: 8 }, (_, i) => oldest + i))

    // A cursor right before the oldest frame held is no gap.
    const exact = await stream(url, "stream/watch", {}, { headers: { "last-event-id": String(oldest - 1) } })
    const exactGot = await readUntil(exact.events, (event) => event.id === lastId)
    expect(exactGot.map((event) => event.event)).not.toContain("gap")
    expect(exactGot.slice(1).map((event) => event.id)).toEqual(Array.from({ length: 8 }, (_, i) => oldest + i))

    // No cursor: "everything after 0", which was evicted too.
    const fresh = await stream(url, "stream/watch", {})
    const freshGot = await readUntil(fresh.events, (event) => event.id === lastId)
    expect(freshGot[1]).toMatchObject({ event: "gap", data: JSON.stringify({ first_available_id: oldest }) })

    const ahead = await stream(url, "stream/watch", {}, { headers: { "last-event-id": "999" } })
    const aheadGot = await readUntil(ahead.events, (event) => event.id === lastId)
    expect(aheadGot[0]!.event).toBe("connection-ack")
    expect(aheadGot[1]).toMatchObject({ event: "gap" })
    expect(dataOf(aheadGot[1]!)).toEqual({ first_available_id: oldest })
    expect(aheadGot.slice(2).map((event) => event.id)).toEqual(Array.from({ length: 8 }, (_, i) => oldest + i))
  })

  it("sends a gap when the cursor is ahead of an empty sequence", async () => {
    const { url } = await open()
    const ahead = await stream(url, "stream/watch", {}, { headers: { "last-event-id": "50" } })
    const got = await readUntil(ahead.events, (event) => event.event === "gap")
    expect(got.map((event) => event.event)).toEqual(["connection-ack", "gap"])
    expect(dataOf(got[1]!)).toEqual({ first_available_id: 1 })
    const task = await sendRef(url, "/complete")
    const live = await readUntil(ahead.events, finalOf(task.id))
    expect(live[0]!.id).toBe(1)
  })

  it("ignores a malformed Last-Event-ID (replays everything)", async () => {
    const { url } = await open()
    const task = await sendRef(url, "/complete")
    await waitForState(url, task.id, ["completed"])
    const lastId = await doors.door!.run(doors.door!.log.lastId())
    const watch = await stream(url, "stream/watch", {}, { headers: { "last-event-id": "abc" } })
    const got = await readUntil(watch.events, (event) => event.id === lastId)
    expect(got.slice(1).map((event) => event.id)).toEqual(Array.from({ length: lastId }, (_, i) => i + 1))
  })

  it("works under acceptance none and as murmur.capsule/watch, and ends every observer with capsule-closed", async () => {
    const { url } = await open({ door: { acceptance: "none" } })
    const a = await stream(url, "stream/watch", {})
    const b = await stream(url, "murmur.capsule/watch", {})
    expect((await readUntil(a.events, () => true))[0]!.event).toBe("connection-ack")
    expect((await readUntil(b.events, () => true))[0]!.event).toBe("connection-ack")
    await doors.door!.close()
    expect(await readUntil(a.events)).toEqual([{ event: "capsule-closed", data: "{}" }])
    expect(await readUntil(b.events)).toEqual([{ event: "capsule-closed", data: "{}" }])
  })

  it("sends a lagged notice with the count of missed frames to a slow consumer", async () => {
    const { url } = await open({ events: { subscriberBuffer: 4, capacity: 64 } })
    const watch = await stream(url, "stream/watch", {})
    await readUntil(watch.events, () => true) // the ack; then stop reading
    // Large frames fill the socket buffers, so the server blocks on the stream and the
    // subscriber's bounded queue overflows.
    const big = "x".repeat(900_000)
    const tasks: Array<string> = []
    for (let i = 0; i < 10; i++) tasks.push((await sendRef(url, `/complete ${i} ${big}`)).id)
    for (const id of tasks) await waitForState(url, id, ["completed"])
    const published = await doors.door!.run(doors.door!.log.lastId())
    // Read again; once drained, a small task's frames arrive after the notice.
    const drained = readUntil(watch.events, (event) => event.event === "status" && dataOf(event).status.response === "tail", 15_000)
    await sleep(300)
    const tail = await sendRef(url, "/complete tail")
    const got = await drained
    const lagged = got.filter((event) => event.event === "lagged")
    expect(lagged.length).toBeGreaterThan(0)
    expect(lagged[0]!.id).toBeUndefined()
    const missed = lagged.map((event) => dataOf(event).missed as number)
    for (const n of missed) expect(n).toBeGreaterThan(0)
    const frames = numbered(got).filter((event) => dataOf(event).id !== tail.id)
    // Every frame published is either delivered or counted as missed, in order, none twice.
    expect(frames.length + missed.reduce((a, b) => a + b, 0)).toBe(published)
    const ids = numbered(got).map((event) => event.id!)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
    // The notice precedes the frame that follows the loss.
    const at = got.indexOf(lagged[0]!)
    const before = numbered(got.slice(0, at)).at(-1)?.id ?? 0
    const after = numbered(got.slice(at)).at(0)!.id!
    expect(after - before - 1).toBe(missed[0])
  }, 20_000)
})

describe("tasks/resubscribe", () => {
  it("sends the current Task first, then live events to the end", async () => {
    const { url } = await open()
    const created = await rpc(url, "message/send", { message: a2aMessage("/stream 5 40"), configuration: { blocking: false } })
    const taskId = created.body.result.id
    await waitForState(url, taskId, ["working"])
    const { headers, events } = await stream(url, "tasks/resubscribe", { id: taskId }, { id: "r" })
    expect(headers["content-type"]).toMatch(/^text\/event-stream/)
    const all = (await readUntil(events)).map(dataOf)
    expect(all.every((body) => body.id === "r" && body.jsonrpc === "2.0")).toBe(true)
    expect(all[0].result).toMatchObject({ kind: "task", id: taskId, status: { state: "working" } })
    expect(all.slice(1).every((body) => body.result.taskId === taskId)).toBe(true)
    expect(all.slice(1).some((body) => body.result.kind === "artifact-update")).toBe(true)
    expect(all.at(-1).result).toMatchObject({ kind: "status-update", status: { state: "completed" }, final: true })
  })

  it("works for a reference-dialect task (the answer is always A2A-shaped)", async () => {
    const { url } = await open()
    const task = await sendRef(url, "/sleep 150")
    await waitForState(url, task.id, ["working"])
    const all = (await readUntil((await stream(url, "tasks/resubscribe", { id: task.id }, { id: 5 })).events)).map(dataOf)
    expect(all[0].result.kind).toBe("task")
    expect(all.at(-1).result).toMatchObject({ status: { state: "completed" }, final: true })
  })

  it("answers unknown with -32001, terminal with -32004, missing id with -32602", async () => {
    const { url } = await open()
    const unknown = await rpc(url, "tasks/resubscribe", { id: "tsk_nope" }, { id: 1 })
    expect(unknown.headers.get("content-type")).toMatch(/^application\/json/)
    expect(unknown.body).toMatchObject({ id: 1, error: { code: -32001 } })
    const done = await sendRef(url, "/complete")
    await waitForState(url, done.id, ["completed"])
    const terminal = await rpc(url, "tasks/resubscribe", { id: done.id }, { id: 2 })
    expect(terminal.body).toMatchObject({ id: 2, error: { code: -32004 } })
    const missing = await rpc(url, "tasks/resubscribe", {}, { id: 3 })
    expect(missing.body).toMatchObject({ id: 3, error: { code: -32602 } })
  })

  it("sends just the Task for an input-required task", async () => {
    const { url } = await open()
    const task = (await rpc(url, "message/send", { message: a2aMessage("hi"), configuration: { blocking: true } })).body.result
    expect(task.status.state).toBe("input-required")
    const all = (await readUntil((await stream(url, "tasks/resubscribe", { id: task.id }, { id: 4 })).events)).map(dataOf)
    expect(all).toHaveLength(1)
    expect(all[0].result).toMatchObject({ kind: "task", id: task.id, status: { state: "input-required" } })
  })

  it("with Last-Event-ID replays the task's frames after the cursor", async () => {
    const { url } = await open()
    const watch = await stream(url, "stream/watch", {})
    const created = await rpc(url, "message/send", { message: a2aMessage("/stream 8 40"), configuration: { blocking: false } })
    const taskId = created.body.result.id
    // Wait for a few of its frames, then resubscribe from the second one.
    const seen = await readUntil(watch.events, (event) => event.event === "text" && dataOf(event).text === "chunk 3 ")
    const own = numbered(seen).filter((event) => dataOf(event).id === taskId)
    const cursor = own[1]!.id!
    const { events } = await stream(url, "tasks/resubscribe", { id: taskId }, { id: "rr", headers: { "last-event-id": String(cursor) } })
    const got = await readUntil(events)
    const observed = numbered([...seen, ...(await readUntil(watch.events, finalOf(taskId)))]).filter((event) => dataOf(event).id === taskId)
    expect(dataOf(got[0]!).result).toMatchObject({ kind: "task", id: taskId })
    expect(got.slice(1).map((event) => event.id)).toEqual(observed.map((event) => event.id).filter((id) => id! > cursor))
    expect(dataOf(got.at(-1)!).result).toMatchObject({ status: { state: "completed" }, final: true })
  })
})

describe("heartbeats", () => {
  it("appear as :heartbeat comments on stream/watch", async () => {
    const { url } = await open({ door: { heartbeatMs: 50 } })
    const watch = await stream(url, "stream/watch", {})
    let beats = 0
    const got = await readUntil(watch.events, (event) => event.comment === "heartbeat" && ++beats === 3, 2_000)
    expect(got[0]!.event).toBe("connection-ack")
    expect(got.filter((event) => event.comment === "heartbeat")).toHaveLength(3)
    expect(got.filter((event) => event.comment !== undefined).every((event) => event.data === undefined && event.event === undefined)).toBe(true)
  })

  it("appear on message/stream in both dialects while the task runs, and on tasks/resubscribe", async () => {
    const { url } = await open({ door: { heartbeatMs: 50 } })
    const ref = await readUntil((await stream(url, "message/stream", { message: referenceMessage("/sleep 300") })).events)
    expect(ref.filter((event) => event.comment === "heartbeat").length).toBeGreaterThanOrEqual(2)
    expect(isFinalStatus(ref.at(-1)!)).toBe(true)

    const a2a = await readUntil((await stream(url, "message/stream", { message: a2aMessage("/sleep 300") }, { id: 7 })).events)
    expect(a2a.filter((event) => event.comment === "heartbeat").length).toBeGreaterThanOrEqual(2)
    expect(a2aFinal(a2a.at(-1)!)).toBe(true)

    const task = await sendRef(url, "/sleep 300")
    await waitForState(url, task.id, ["working"])
    const resub = await readUntil((await stream(url, "tasks/resubscribe", { id: task.id }, { id: 8 })).events)
    expect(resub.filter((event) => event.comment === "heartbeat").length).toBeGreaterThanOrEqual(2)
    expect(a2aFinal(resub.at(-1)!)).toBe(true)
  })
})
