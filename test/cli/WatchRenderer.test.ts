/**
 * The watcher's pure parts: rendering frames (status lines, inline streamed text across chunks
 * and tasks, thinking, artifacts, warnings, unicode) and the incremental SSE decoder.
 */
import { assert, describe, it } from "@effect/vitest"
import { makeSseDecoder } from "../../src/cli/SseDecoder.js"
import {
  initialState,
  jsonLine,
  render,
  type RenderOptions,
  type RenderState,
  shortId,
  truncate,
  type WatchFrame
} from "../../src/cli/WatchRenderer.js"

const A = "tsk_01a22755f0cb7d9fa2e6c2f70d82eb27"
const B = "tsk_01a22755f10a7b87b5aea28c1d214d3c"
const a = "[tsk_…0d82eb27]"
const b = "[tsk_…1d214d3c]"

let nextId = 1
const frame = (event: string, data: unknown): WatchFrame => ({ id: nextId++, event, data: JSON.stringify(data) })
const status = (id: string, state: string, extra: { message?: string; response?: string } = {}) =>
  frame("status", { id, context_id: "ctx_1", status: { state, ...extra }, final: ["completed", "failed", "canceled"].includes(state) })
const text = (id: string, chunk: string, final = false) => frame("text", { id, text: chunk, final })

/** Renders frames in order; returns everything written and the final state. */
const renderAll = (frames: ReadonlyArray<WatchFrame>, options?: RenderOptions) => {
  let state: RenderState = initialState
  let output = ""
  let closed = false
  for (const f of frames) {
    const rendered = render(state, f, options)
    state = rendered.state
    output += rendered.output
    closed ||= rendered.closed
  }
  return { output, state, closed }
}

describe("WatchRenderer", () => {
  it("prints status lines, streamed text inline, and ends the line at the final text frame", () => {
    const { closed, output, state } = renderAll([
      frame("connection-ack", { role: "observer", conversation_mode: "stateless" }),
      status(A, "working", { message: "working" }),
      status(A, "working", { message: "inference turn 1" }),
      text(A, "chunk 1 "),
      text(A, "chunk 2 "),
      text(A, "chunk 3"),
      text(A, "", true),
      status(A, "input-required", { message: "Say more, or /done to finish." }),
      status(A, "completed", { message: "session ended", response: "streamed 3 chunks" }),
      status(B, "failed", { message: "scripted failure" }),
      status(B, "canceled", { message: "task canceled" }),
      frame("capsule-closed", {})
    ])
    assert.strictEqual(
      output,
      [
        `${a} working`,
        `${a} working: inference turn 1`,
        `${a} chunk 1 chunk 2 chunk 3`,
        `${a} input-required: Say more, or /done to finish.`,
        `${a} completed: streamed 3 chunks`,
        `${b} failed: scripted failure`,
        `${b} canceled: task canceled`,
        "capsule closed",
        ""
      ].join("\n")
    )
    assert.isTrue(closed)
    assert.deepStrictEqual(state, initialState)
  })

  it("writes each chunk as it arrives, without a newline until the line ends", () => {
    const first = render(initialState, text(A, "héllo "))
    assert.strictEqual(first.output, `${a} héllo `)
    const second = render(first.state, text(A, "wörld 🌍"))
    assert.strictEqual(second.output, "wörld 🌍")
    const end = render(second.state, text(A, "", true))
    assert.strictEqual(end.output, "\n")
    assert.deepStrictEqual(end.state, initialState)
  })

  it("breaks an open line when another task speaks, and resumes with the prefix", () => {
    const { output } = renderAll([
      text(A, "alpha "),
      text(B, "beta "),
      text(A, "gamma"),
      status(B, "completed", { response: "ok" }),
      text(A, "", true),
      text(B, "", true)
    ])
    assert.strictEqual(output, [`${a} alpha `, `${b} beta `, `${a} gamma`, `${b} completed: ok`, ""].join("\n"))
  })

  it("prints a final text frame that carries text as a whole line", () => {
    assert.strictEqual(renderAll([text(A, "emitted out", true)]).output, `${a} emitted out\n`)
  })

  it("does not add a blank line after text that ended with a newline", () => {
    assert.strictEqual(renderAll([text(A, "line one\n"), text(A, "", true), status(A, "completed")]).output, `${a} line one\n${a} completed\n`)
  })

  it("shows thinking inline, then the text on its own line", () => {
    const { output } = renderAll([
      frame("thinking", { id: A, text: "thinking about: 日本語 ", final: false }),
      frame("thinking", { id: A, text: "🤔", final: false }),
      text(A, "答え"),
      text(A, "", true)
    ])
    assert.strictEqual(output, `${a} thinking: thinking about: 日本語 🤔\n${a} 答え\n`)
  })

  it("prints artifacts as tool results on one line, truncated without splitting characters", () => {
    const long = "🌍".repeat(50)
    const { output } = renderAll(
      [
        frame("artifact", { id: A, artifact: { tool_name: "read_file", content: "line 1\nline 2" } }),
        frame("artifact", { id: A, artifact: { tool_name: "globe", content: long } }),
        frame("artifact", { id: A, artifact: { tool_name: "json", content: { ok: true } } })
      ],
      { width: 20, fullIds: false }
    )
    assert.strictEqual(
      output,
      [`${a} tool read_file: line 1 ⏎ line 2`, `${a} tool globe: ${"🌍".repeat(19)}…`, `${a} tool json: {"ok":true}`, ""].join("\n")
    )
    assert.strictEqual(Array.from(truncate(long, 10)).length, 10)
  })

  it("warns about gaps, lagging and door errors, closing an open line first", () => {
    const { output } = renderAll([
      text(A, "partial"),
      { id: undefined, event: "gap", data: JSON.stringify({ first_available_id: 42 }) },
      { id: undefined, event: "lagged", data: JSON.stringify({ missed: 7 }) },
      { id: undefined, event: "error", data: JSON.stringify({ error: "boom" }) }
    ])
    assert.strictEqual(
      output,
      [
        `${a} partial`,
        "warning: frames before id 42 are no longer held by the door; some were missed",
        "warning: this watcher fell behind and missed 7 frames",
        "warning: the door reported an error: boom",
        ""
      ].join("\n")
    )
  })

  it("shows unknown or malformed frames raw, and strips terminal control characters", () => {
    const { output } = renderAll([
      { id: 1, event: "mystery", data: "{\"x\":1}" },
      { id: 2, event: "status", data: "not json" },
      text(A, "red \u001b[31mtext\u0007"),
      text(A, "", true)
    ])
    assert.strictEqual(output, ["[mystery] {\"x\":1}", "[status] not json", `${a} red [31mtext`, ""].join("\n"))
  })

  it("indents multi-line responses and can print whole ids", () => {
    const { output } = renderAll([status(A, "completed", { response: "one\ntwo\n" })], { width: 80, fullIds: true })
    assert.strictEqual(output, `[${A}] completed: one\n  two\n`)
    assert.strictEqual(shortId("custom-id", { width: 80, fullIds: false }), "custom-id")
  })

  it("formats --json lines with the id, the event and the parsed data", () => {
    assert.strictEqual(jsonLine({ id: 3, event: "text", data: "{\"id\":\"t\",\"text\":\"é\"}" }), "{\"id\":3,\"event\":\"text\",\"data\":{\"id\":\"t\",\"text\":\"é\"}}\n")
    assert.strictEqual(jsonLine({ id: undefined, event: "capsule-closed", data: "{}" }), "{\"id\":null,\"event\":\"capsule-closed\",\"data\":{}}\n")
    assert.strictEqual(jsonLine({ id: undefined, event: "x", data: "raw" }), "{\"id\":null,\"event\":\"x\",\"data\":\"raw\"}\n")
  })
})

describe("SseDecoder", () => {
  const wire = [
    ": heartbeat\n\n",
    "event: connection-ack\ndata: {\"role\":\"observer\"}\n\n",
    "id: 1\nevent: text\ndata: {\"text\":\"héllo 🌍\"}\n\n",
    "id: 2\r\nevent: status\r\ndata: line one\r\ndata: line two\r\n\r\n",
    "data:no-space\n\n",
    "event: empty\n\n",
    "id: 3\nevent: capsule-closed\ndata: {}\n\n"
  ].join("")
  const expected: ReadonlyArray<WatchFrame> = [
    { id: undefined, event: "connection-ack", data: "{\"role\":\"observer\"}" },
    { id: 1, event: "text", data: "{\"text\":\"héllo 🌍\"}" },
    { id: 2, event: "status", data: "line one\nline two" },
    { id: undefined, event: "message", data: "no-space" },
    { id: 3, event: "capsule-closed", data: "{}" }
  ]

  it("parses a whole body", () => {
    assert.deepStrictEqual(makeSseDecoder().feed(wire), expected)
  })

  it("parses the same body fed one character at a time, or split at every CR", () => {
    const perChar = makeSseDecoder()
    assert.deepStrictEqual(Array.from(wire).flatMap((c) => perChar.feed(c)), expected)
    const atCr = makeSseDecoder()
    assert.deepStrictEqual(wire.split(/(?<=\r)/).flatMap((part) => atCr.feed(part)), expected)
  })

  it("keeps an unfinished frame until its blank line arrives", () => {
    const decoder = makeSseDecoder()
    assert.deepStrictEqual(decoder.feed("id: 9\nevent: text\ndata: {}\n"), [])
    assert.deepStrictEqual(decoder.feed("\n"), [{ id: 9, event: "text", data: "{}" }])
  })
})
