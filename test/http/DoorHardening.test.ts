/**
 * Issue 8 (security review) over real HTTP: method names from Object.prototype, deeply nested
 * bodies and params, and the limits on what an unauthenticated client can make the door hold
 * (open streams, retained tasks, the replay ring). After each abuse the door must still answer.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { post, referenceMessage, rpc, type SseEvent } from "../lib/Door.js"
import { A2A_HEADERS, dataOf, type NodeStream, nodeStream, readUntil } from "../lib/DoorKit.js"
import { doorPerTest, stillServes } from "../lib/DoorPerTest.js"

const doors = doorPerTest()
const { open } = doors

const dialects = [{ name: "reference", headers: {} }, { name: "A2A", headers: A2A_HEADERS }] as const

const served = new Set([
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "tasks/resubscribe",
  "session/stop",
  "stream/watch",
  "murmur.capsule/stop",
  "murmur.capsule/watch",
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard"
])

const prototypeNames = Object.getOwnPropertyNames(Object.prototype)

describe("method names from Object.prototype", () => {
  it("answers every one with -32601, in both dialects", async () => {
    const { url } = await open()
    expect(prototypeNames).toContain("__proto__")
    for (const name of prototypeNames) {
      for (const dialect of dialects) {
        const reply = await rpc(url, name, {}, { id: name, headers: dialect.headers })
        expect(reply.status, `${name} (${dialect.name})`).toBe(200)
        expect(reply.body, `${name} (${dialect.name})`).toMatchObject({ id: name, error: { code: -32601, data: { method: name } } })
      }
    }
    await stillServes(url)
  })

  it("property: any method name the door does not serve is -32601, and the door stays healthy", async () => {
    const { url } = await open()
    const method = fc.oneof(
      fc.constantFrom(...prototypeNames),
      fc.string({ minLength: 1, unit: "binary" }),
      fc.constantFrom(...prototypeNames).map((name) => `tasks/${name}`),
      fc.constantFrom(...served).map((name) => `${name} `)
    ).filter((name) => !served.has(name))
    await fc.assert(
      fc.asyncProperty(method, fc.boolean(), async (name, a2a) => {
        const reply = await rpc(url, name, {}, { id: "p", headers: a2a ? A2A_HEADERS : {} })
        return reply.status === 200 && reply.body?.error?.code === -32601 && reply.body.id === "p"
      }),
      { numRuns: 150 }
    )
    await stillServes(url)
  })
})

/** `levels` nested objects (`{"a":…}`) around a scalar, as JSON text. */
const nestedObjects = (levels: number) => `${"{\"a\":".repeat(levels)}1${"}".repeat(levels)}`
const nestedArrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`

const envelopeAround = (method: string, params: string) => `{"jsonrpc":"2.0","id":"deep","method":"${method}","params":${params}}`

describe("deep nesting", () => {
  it("params nested 5,000 levels answer -32602 naming the limit, for every method, in both dialects", async () => {
    const { url } = await open()
    const bodies = [
      `{"message":${nestedObjects(5_000)}}`,
      `{"message":{"messageId":"m","role":"user","parts":[{"text":"x","metadata":${nestedArrays(5_000)}}]}}`,
      `{"id":${nestedObjects(5_000)}}`,
      nestedArrays(5_000)
    ]
    for (const method of served) {
      for (const dialect of dialects) {
        for (const params of bodies) {
          const reply = await post(url, envelopeAround(method, params), dialect.headers)
          const label = `${method} (${dialect.name}) ${params.slice(0, 20)}`
          expect(reply.status, label).toBe(200)
          expect(reply.body, label).toMatchObject({ id: "deep", error: { code: -32602 } })
          expect(reply.body.error.message, label).toBe("Invalid params: params nest deeper than 64 levels")
        }
      }
    }
    await stillServes(url)
  })

  it("params at the limit still decode", async () => {
    const { url } = await open()
    // 64 levels in all: params, message, parts, a part, then 60 levels of metadata.
    const params = `{"message":{"messageId":"m","role":"user","parts":[{"text":"/complete ok","metadata":${nestedObjects(60)}}]}}`
    const reply = await post(url, envelopeAround("message/send", params))
    expect(reply.body.error).toBeUndefined()
    expect(reply.body.result.status.state).toBeDefined()
  })

  it("a body of 200,000 levels of raw array nesting is a clear -32600, not a crash", async () => {
    const { url } = await open()
    const reply = await post(url, nestedArrays(200_000))
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ id: null, error: { code: -32600, message: "Invalid Request: batch requests are not supported" } })
    await stillServes(url)
  })

  it("200,000 levels inside params (arrays, and objects up to the body limit) answer -32602", async () => {
    const { url } = await open()
    for (const params of [nestedArrays(200_000), `{"message":${`{"":`.repeat(200_000)}1${"}".repeat(200_000)}}`]) {
      const body = envelopeAround("message/send", params)
      expect(Buffer.byteLength(body)).toBeLessThan(1024 * 1024)
      const reply = await post(url, body)
      expect(reply.status).toBe(200)
      expect(reply.body).toMatchObject({ id: "deep", error: { code: -32602, message: "Invalid params: params nest deeper than 64 levels" } })
    }
    await stillServes(url)
  })
})

type Attempt =
  | { readonly _tag: "Stream"; readonly stream: NodeStream; readonly first: SseEvent }
  | { readonly _tag: "Refused"; readonly body: any }

/** A streaming call: its first event if it streams, else its JSON answer. */
const attempt = async (url: string, method: string, params: unknown = {}, headers: Record<string, string> = {}): Promise<Attempt> => {
  const stream = await nodeStream(url, method, params, { headers })
  doors.onCleanup(() => stream.destroy())
  if (/event-stream/.test(String(stream.headers["content-type"]))) {
    const [first] = await readUntil(stream.events, () => true)
    return { _tag: "Stream", stream, first: first! }
  }
  let text = ""
  stream.response.setEncoding("utf8")
  for await (const chunk of stream.response) text += chunk as string
  return { _tag: "Refused", body: JSON.parse(text) }
}

const waitFor = async <A>(probe: () => Promise<A | undefined>, timeoutMs = 3_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`not within ${timeoutMs} ms`)
}

describe("--max-watchers", () => {
  it("refuses the N+1th stream while N are open, with an error naming the limit and the flag; one closing frees a slot", async () => {
    const { url } = await open({ door: { maxWatchers: 3 } })
    const open3: Array<NodeStream> = []
    for (const method of ["stream/watch", "murmur.capsule/watch", "stream/watch"]) {
      const opened = await attempt(url, method)
      expect(opened._tag).toBe("Stream")
      if (opened._tag === "Stream") open3.push(opened.stream)
    }
    const before = await doors.door!.run(doors.door!.registry.stats())
    const refusals = [
      await attempt(url, "stream/watch"),
      await attempt(url, "message/stream", { message: referenceMessage("/complete nope") }),
      await attempt(url, "message/stream", { message: referenceMessage("/complete nope") }, A2A_HEADERS),
      await attempt(url, "tasks/resubscribe", { id: "tsk_x" }, A2A_HEADERS)
    ]
    for (const refused of refusals) {
      expect(refused._tag).toBe("Refused")
      if (refused._tag !== "Refused") continue
      expect(refused.body.error).toMatchObject({ code: -32029, data: { limit: 3 } })
      expect(refused.body.error.message).toContain("at most 3")
      expect(refused.body.error.message).toContain("--max-watchers")
    }
    // A refused message/stream started nothing.
    expect(await doors.door!.run(doors.door!.registry.stats())).toEqual(before)
    await stillServes(url)

    open3[0]!.destroy()
    const again = await waitFor(async () => {
      const next = await attempt(url, "stream/watch")
      return next._tag === "Stream" ? next : undefined
    })
    expect(again.first.event).toBe("connection-ack")
    expect((await attempt(url, "stream/watch"))._tag).toBe("Refused")
  })

  it("a stream that ends gives its slot back", async () => {
    const { url } = await open({ door: { maxWatchers: 1 } })
    for (let i = 0; i < 4; i++) {
      const run = await attempt(url, "message/stream", { message: referenceMessage(`/complete ${i}`) })
      expect(run._tag).toBe("Stream")
      if (run._tag === "Stream") await readUntil(run.stream.events)
      // The slot is released on the response's close, a moment after its last byte.
      await waitFor(async () => (await doors.door!.run(doors.door!.log.subscriberCount())) === 0 ? true : undefined)
    }
    const watch = await waitFor(async () => {
      const next = await attempt(url, "stream/watch")
      return next._tag === "Stream" ? next : undefined
    })
    expect(watch.first.event).toBe("connection-ack")
  })
})

describe("--retain-bytes", () => {
  it("keeps 20 finished tasks of 1 MiB within an 8 MiB budget: the oldest are forgotten, the newest answers", async () => {
    const { url } = await open({ door: { maxBodyBytes: 3 * 1024 * 1024 }, tasks: { retainBytes: 8 * 1024 * 1024 } })
    const mib = "m".repeat(1024 * 1024)
    const ids: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const reply = await rpc(url, "message/send", { message: referenceMessage(`/complete ${i} ${mib}`) })
      expect(reply.body.error).toBeUndefined()
      ids.push(reply.body.result.id)
      await waitFor(async () => {
        const state = (await rpc(url, "tasks/get", { id: reply.body.result.id })).body.result?.status?.state
        return state === "completed" ? true : undefined
      }, 10_000)
    }
    const stats = await doors.door!.run(doors.door!.registry.stats())
    expect(stats.retainedBytes).toBeLessThanOrEqual(8 * 1024 * 1024)
    expect(stats.retained).toBeLessThan(20)
    const oldest = await rpc(url, "tasks/get", { id: ids[0] })
    expect(oldest.body.error).toMatchObject({ code: -32001, message: "Task not found" })
    const newest = await rpc(url, "tasks/get", { id: ids[19] })
    expect(newest.body.result).toMatchObject({ id: ids[19], status: { state: "completed" } })
  }, 60_000)
})

describe("--replay-bytes", () => {
  it("evicts frames from the replay ring by bytes; replay starts with a gap", async () => {
    const { url } = await open({ events: { capacityBytes: 64 * 1024 } })
    const chunk = "r".repeat(30 * 1024)
    for (let i = 0; i < 6; i++) {
      const reply = await rpc(url, "message/send", { message: referenceMessage(`/complete ${i} ${chunk}`), configuration: { blocking: true } })
      expect(reply.body.result.status.state).toBe("completed")
    }
    const last = await doors.door!.run(doors.door!.log.lastId())
    expect(last).toBeLessThan(512)
    for (const cursor of [undefined, "1"]) {
      const watch = await nodeStream(url, "stream/watch", {}, cursor === undefined ? {} : { headers: { "last-event-id": cursor } })
      doors.onCleanup(() => watch.destroy())
      const events = await readUntil(watch.events, (event) => event.id === last)
      expect(events[0]!.event).toBe("connection-ack")
      expect(events[1]!.event).toBe("gap")
      const first = dataOf(events[1]!).first_available_id as number
      expect(first).toBeGreaterThan(1)
      const numbered = events.filter((event) => event.id !== undefined)
      expect(numbered.map((event) => event.id)).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i))
      const held = numbered.reduce((sum, event) => sum + Buffer.byteLength(event.data ?? ""), 0)
      expect(held).toBeLessThanOrEqual(64 * 1024)
    }
  })
})

describe("lagged before capsule-closed", () => {
  it("a paused watcher that fell behind gets lagged with the count of missed frames, then capsule-closed", async () => {
    const { url } = await open({ events: { subscriberBuffer: 4 } })
    const watch = await nodeStream(url, "stream/watch", {})
    doors.onCleanup(() => watch.destroy())
    expect((await readUntil(watch.events, () => true))[0]!.event).toBe("connection-ack")
    // Stop reading; frames far larger than the socket buffers block the stream, and the
    // subscriber's queue overflows.
    const big = "w".repeat(256 * 1024)
    const emitted = 80
    await doors.door!.run(doors.door!.log.publish("tsk_lag", "ctx_lag", { _tag: "Thinking", text: "first" }))
    for (let i = 1; i < emitted; i++) await doors.door!.run(doors.door!.log.publish("tsk_lag", "ctx_lag", { _tag: "Thinking", text: big }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    const closing = doors.door!.close()
    const events = await readUntil(watch.events, () => false, 10_000)
    await closing
    const frames = events.filter((event) => event.id !== undefined)
    const lagged = events.filter((event) => event.event === "lagged")
    expect(lagged.length).toBeGreaterThan(0)
    const missed = lagged.reduce((sum, event) => sum + (dataOf(event).missed as number), 0)
    expect(frames.length + missed).toBe(emitted)
    expect(events.slice(-2).map((event) => event.event)).toEqual(["lagged", "capsule-closed"])
  }, 20_000)
})
