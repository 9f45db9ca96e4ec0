import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Either, Fiber, Stream, TestClock } from "effect"
import * as fc from "fast-check"
import { decodeRequest, encodeError, encodeResult } from "../../src/http/JsonRpc.js"
import { decodeSendParams } from "../../src/http/Params.js"
import { toRpcError } from "../../src/http/RpcErrors.js"
import { heartbeatFrame, sseFrame, withHeartbeat } from "../../src/http/Sse.js"

/** What the door answers for a body whose envelope does not decode. */
const answerFor = (text: string): string =>
  Either.match(decodeRequest(text), {
    onLeft: (failure) => encodeError(failure.id, toRpcError(failure.error)),
    onRight: (request) => encodeResult(request.id, { method: request.method })
  })

describe("JSON-RPC envelope", () => {
  it("any byte string yields a well-formed JSON-RPC answer (property)", () => {
    const bodies = fc.oneof(
      fc.string(),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString("utf8")),
      fc.json(),
      fc.record({
        jsonrpc: fc.oneof(fc.constant("2.0"), fc.string(), fc.integer()),
        id: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.object(), fc.boolean()),
        method: fc.oneof(fc.string(), fc.integer()),
        params: fc.oneof(fc.object(), fc.array(fc.anything()), fc.string(), fc.constant(null))
      }, { requiredKeys: [] }).map((value) => JSON.stringify(value))
    )
    fc.assert(
      fc.property(bodies, (body) => {
        const answer = JSON.parse(answerFor(body))
        if (answer.jsonrpc !== "2.0" || !("id" in answer)) return false
        if (!(answer.id === null || typeof answer.id === "string" || typeof answer.id === "number")) return false
        if ("error" in answer) {
          return [-32700, -32600].includes(answer.error.code) && typeof answer.error.message === "string" && !("result" in answer)
        }
        return "result" in answer
      }),
      { numRuns: 2000 }
    )
  })

  it("echoes the request id and classifies envelope errors", () => {
    assert.deepStrictEqual(JSON.parse(answerFor("{nope")).error.code, -32700)
    assert.deepStrictEqual(JSON.parse(answerFor("{nope")).id, null)
    const cases: Array<[string, number, unknown]> = [
      [`{"jsonrpc":"1.0","id":7,"method":"x"}`, -32600, 7],
      [`{"jsonrpc":"2.0","id":"a"}`, -32600, "a"],
      [`{"jsonrpc":"2.0","id":{"x":1},"method":"x"}`, -32600, null],
      [`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, -32600, null],
      [`{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}`, -32600, 1]
    ]
    for (const [body, code, id] of cases) {
      const answer = JSON.parse(answerFor(body))
      assert.strictEqual(answer.error.code, code, body)
      assert.strictEqual(answer.id, id, body)
    }
    assert.deepStrictEqual(JSON.parse(answerFor(`{"jsonrpc":"2.0","id":"z","method":"m"}`)), {
      jsonrpc: "2.0",
      id: "z",
      result: { method: "m" }
    })
  })

  it("encodes keys in the reference's order", () => {
    assert.strictEqual(encodeResult(1, { a: 1 }), `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`)
    assert.strictEqual(encodeError("x", { code: -32001, message: "Task not found" }), `{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"Task not found"}}`)
  })
})

describe("message params", () => {
  const decode = (params: unknown, strict: boolean) => decodeSendParams(params, strict)

  it("reference: the message may be the params themselves and parts need no kind", () => {
    const decoded = decode({ messageId: "m", role: "user", parts: [{ text: "a" }, { text: "b" }] }, false)
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) assert.deepStrictEqual(decoded.right.message.parts.map((p) => (p.kind === "text" ? p.text : p.kind)), ["a", "b"])
  })

  it("A2A: role, non-empty parts and known part kinds are required; file and data parts are checked", () => {
    const bad = (params: unknown, tag: string) => {
      const decoded = decode(params, true)
      assert.isTrue(Either.isLeft(decoded) && decoded.left._tag === tag, JSON.stringify(params))
    }
    bad({ message: { kind: "message", messageId: "m", role: "robot", parts: [{ kind: "text", text: "x" }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: "invalid" } }, "InvalidParams")
    bad({ "": "not_a_dict" }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "file", file: { uri: "x" } }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "file", file: { uri: "file:///etc/passwd" } }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "file", file: { bytes: "not base64!" } }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "file", file: { bytes: "aGk=", uri: "https://x.example/a" } }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "data", data: [1, 2] }] } }, "InvalidParams")
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "data", data: { big: "x".repeat(300 * 1024) } }] } }, "InvalidParams")
    const attached = decode({
      message: {
        kind: "message",
        messageId: "m",
        role: "user",
        parts: [{ kind: "text", text: "see" }, { kind: "data", data: { a: 1 } }, { kind: "file", file: { bytes: "aGk=", name: "hi.txt", mimeType: "text/plain" } }]
      }
    }, true)
    assert.deepStrictEqual(Either.getOrThrow(attached).message.parts, [
      { kind: "text", text: "see" },
      { kind: "data", data: { a: 1 } },
      { kind: "file", bytes: "aGk=", name: "hi.txt", mediaType: "text/plain" }
    ])
    bad({ message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "x" }], contextId: "../../etc" } }, "InvalidParams")
  })

  it("blocking and historyLength come from configuration", () => {
    const decoded = decode({
      message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "x" }] },
      configuration: { blocking: true, historyLength: 2 },
      unknownField: { ignored: true }
    }, true)
    assert.isTrue(Either.isRight(decoded))
    if (Either.isRight(decoded)) assert.deepStrictEqual([decoded.right.blocking, decoded.right.historyLength], [true, 2])
  })

  it("A2A blocks unless blocking is false; the reference blocks only when blocking is true (property)", () => {
    const configurations = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.record({ blocking: fc.constantFrom(true, false, null, undefined) }, { requiredKeys: [] })
    )
    fc.assert(fc.property(configurations, fc.boolean(), (configuration, strict) => {
      const message = strict
        ? { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "x" }] }
        : { messageId: "m", role: "user", parts: [{ text: "x" }] }
      const decoded = decode({ message, ...(configuration === undefined ? {} : { configuration }) }, strict)
      const asked = configuration?.blocking
      return Either.isRight(decoded) && decoded.right.blocking === (strict ? asked !== false : asked === true)
    }))
  })

  it("an A2A-shaped message's parts must each name text, file or data; a kind-less message reads text (property)", () => {
    const kinds = fc.oneof(fc.constant(undefined), fc.constantFrom("text", "file", "data"), fc.string())
    fc.assert(fc.property(fc.array(kinds, { minLength: 1, maxLength: 4 }), fc.boolean(), (partKinds, messageKind) => {
      // Each part carries what any kind needs: text, data and a file.
      const parts = partKinds.map((kind) => ({ ...(kind === undefined ? {} : { kind }), text: "x", data: { x: 1 }, file: { bytes: "eA==" } }))
      const decoded = decode({ message: { ...(messageKind ? { kind: "message" } : {}), messageId: "m", role: "user", parts } }, true)
      const shaped = messageKind || partKinds.some((kind) => kind !== undefined)
      const effective = partKinds.map((kind) => (shaped ? kind : "text"))
      const unknown = effective.some((kind) => kind !== "text" && kind !== "file" && kind !== "data")
      if (unknown) return Either.isLeft(decoded) && decoded.left._tag === "InvalidParams"
      return Either.isRight(decoded) && decoded.right.message.parts.map((part) => part.kind).join() === effective.join()
    }))
  })
})

describe("SSE framing", () => {
  it("every frame ends with a blank line and no data line holds a raw newline (property)", () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.nat(), { nil: undefined }), (data, id) => {
        const frame = sseFrame({ ...(id === undefined ? {} : { id }), event: "status", data })
        if (!frame.endsWith("\n\n")) return false
        const lines = frame.slice(0, -2).split("\n")
        const dataLines = lines.filter((line) => line.startsWith("data: ")).map((line) => line.slice(6))
        return dataLines.join("\n") === data.replace(/\r\n|\r/g, "\n") && lines.every((line) => /^(id|event|data): /.test(line))
      })
    )
  })

  it.effect("heartbeats every interval, whatever else flows", () =>
    Effect.gen(function*() {
      const fiber = yield* withHeartbeat(Stream.never, "15 seconds").pipe(Stream.take(3), Stream.runCollect, Effect.fork)
      yield* TestClock.adjust("44 seconds")
      assert.isTrue((yield* Fiber.poll(fiber))._tag === "None")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Fiber.join(fiber)), [heartbeatFrame, heartbeatFrame, heartbeatFrame])
      assert.strictEqual(heartbeatFrame, ":heartbeat\n\n")
    }))

  it.effect("the stream's end ends the heartbeat", () =>
    Effect.gen(function*() {
      const out = yield* withHeartbeat(Stream.make("a", "b"), "15 seconds").pipe(Stream.runCollect)
      assert.deepStrictEqual(Chunk.toReadonlyArray(out), ["a", "b"])
    }))
})
