/**
 * Agent capsules end to end through the command line and the door over real HTTP
 * (`node dist/main.js serve <dir> --json`; `npm run build` first), driven by the scripted-driver
 * fixture whose replies come from `inference.driver.config`. The SSE frames of a `message/stream`
 * call are checked in order against spec §4.4–§4.6, with out/result.txt and what the driver was
 * sent. The session's trace is checked in EndToEndTrace.test.ts, the failure arms in
 * EndToEndFailures.test.ts.
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, driverRequest, endTurn, type Frame, frames, ofType, resultFile, text, thinking, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { type AgentDirOptions, makeAgentCapsuleDir, type ServeProcess, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { dataOf, type NodeStream, nodeStream, readUntil } from "../lib/DoorKit.js"

const cleanups: Array<() => Promise<void> | void> = []
const streams: Array<NodeStream> = []

afterAll(async () => {
  for (const stream of streams.splice(0)) stream.destroy()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const serve = async (options: AgentDirOptions): Promise<ServeProcess> => {
  const dir = await makeAgentCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return serveCli(dir, {}, cleanups)
}

const isFinalStatus = (event: { event?: string; data?: string }) => event.event === "status" && dataOf(event).final === true

/** `message/stream` with `text`; the frames up to the final status. */
const streamTask = async (url: string, message: string): Promise<Array<Frame>> => {
  const stream = await nodeStream(url, "message/stream", { message: referenceMessage(message) })
  streams.push(stream)
  return frames(await readUntil(stream.events, isFinalStatus, 30_000))
}

const stop = async (served: ServeProcess) => {
  served.child.kill("SIGTERM")
  expect(await served.exited).toEqual({ code: 0, signal: null })
}

const SHELL_ARTIFACT = "$ hello from shell\nExit code: 0\nStdout:\nhello from shell\n\nStderr:\n"

describe("serve <agent dir>: a two-turn task with a WASM tool and a shell call", () => {
  let served: ServeProcess
  let all: Array<Frame>
  let id: string
  let contextId: string

  beforeAll(async () => {
    served = await serve({
      driverConfig: {
        replies: [
          toolTurn(text("Checking."), call("c1", "echo-tool", { msg: "hi" }), call("c2", "echo", { command: "hello from shell" })),
          endTurn("All done here.")
        ]
      },
      tools: { "echo-tool": "echo-tool" },
      capabilities: "  shell:\n    allow: [echo]\n"
    })
    all = await streamTask(served.listening.url, "do it")
    id = all[0]!.data.id
    contextId = all[0]!.data.context_id
  }, 60_000)

  it("streams the frames in order: working, turn 1, one artifact per tool result, turn 2, the final text, completed", () => {
    expect(id).toMatch(/^tsk_[0-9a-f]{32}$/)
    expect(contextId).toMatch(/^ctx_[0-9a-f]{32}$/)
    expect(all).toEqual([
      { event: "status", data: { id, context_id: contextId, status: { state: "working", message: "working" }, final: false } },
      { event: "status", data: { id, context_id: contextId, status: { state: "working", message: "inference turn 1" }, final: false } },
      { event: "artifact", data: { id, artifact: { tool_name: "echo-tool", content: "{\"msg\":\"hi\"}" } } },
      { event: "artifact", data: { id, artifact: { tool_name: "echo", content: SHELL_ARTIFACT } } },
      { event: "status", data: { id, context_id: contextId, status: { state: "working", message: "inference turn 2" }, final: false } },
      // No chunks were streamed: one text frame with the whole final text (spec §4.6).
      { event: "text", data: { id, text: "All done here.", final: true } },
      {
        event: "status",
        data: { id, context_id: contextId, status: { state: "completed", message: "session ended", response: "All done here." }, final: true }
      }
    ])
  })

  it("writes the final text to out/result.txt and the task text to task.md; tasks/get says completed", async () => {
    const { workdir } = served.listening
    expect(resultFile(workdir)).toBe("All done here.")
    expect(readFileSync(join(workdir, "task.md"), "utf8")).toBe("do it")
    const got = await rpc(served.listening.url, "tasks/get", { id })
    expect(got.body.result).toEqual({ id, contextId, status: { state: "completed" } })
  })

  it("sends the driver the tool results of turn 1, fenced and in call order, on turn 2", () => {
    const request = driverRequest(served.listening.workdir, 2)
    expect(request.messages).toEqual([
      // Sent without an origin header: origin `event`, untrusted, so the task text is fenced.
      { role: "user", content: [{ type: "text", text: "<untrusted-content source=task:event>\ndo it\n</untrusted-content>" }] },
      { role: "assistant", content: [text("Checking."), call("c1", "echo-tool", { msg: "hi" }), call("c2", "echo", { command: "hello from shell" })] },
      {
        role: "tool",
        tool_call_id: "c1",
        is_error: false,
        content: [{ type: "text", text: "<untrusted-content source=tool:echo-tool>\n{\"msg\":\"hi\"}\n</untrusted-content>" }]
      },
      {
        role: "tool",
        tool_call_id: "c2",
        is_error: false,
        content: [{ type: "text", text: `<untrusted-content source=tool:echo>\n${SHELL_ARTIFACT}\n</untrusted-content>` }]
      }
    ])
    expect(request.tools.map((tool: { name: string }) => tool.name)).toEqual(["echo", "echo-tool"])
    expect(request.prompt_cache_key).toBe(`test-agent:0.1.0:${contextId}`)
  })

  it("takes a second task on the same session (queue by default) with the same script", async () => {
    const second = await streamTask(served.listening.url, "again")
    const secondId = second[0]!.data.id
    expect(secondId).not.toBe(id)
    expect(second.at(-1)).toEqual({
      event: "status",
      data: { id: secondId, context_id: second[0]!.data.context_id, status: { state: "completed", message: "session ended", response: "All done here." }, final: true }
    })
    await stop(served)
    const trace = traceLines(served.listening.records)
    expect(ofType(trace, "task_start").map((line) => line.task_id)).toEqual([id, secondId])
    expect(ofType(trace, "session_start")).toHaveLength(1)
    expect(ofType(trace, "session_end")).toHaveLength(1)
    expect(trace.at(-1)!.event_type).toBe("session_end")
  })
})

describe("serve <agent dir>: streamed chunks (driver config chunks: true)", () => {
  let served: ServeProcess
  let all: Array<Frame>
  let id: string

  beforeAll(async () => {
    served = await serve({
      driverConfig: {
        chunks: true,
        replies: [
          toolTurn(thinking("need the tool"), text("Let me check."), call("c1", "echo-tool", { n: 1 })),
          endTurn("All done here now.")
        ]
      },
      tools: { "echo-tool": "echo-tool" }
    })
    all = await streamTask(served.listening.url, "stream it")
    id = all[0]!.data.id
  }, 60_000)

  it("streams each turn's text word by word as non-final text frames, and thinking as thinking frames", () => {
    const chunks = all.filter((frame) => frame.event === "text" && frame.data.final === false).map((frame) => frame.data)
    expect(chunks).toEqual(["Let ", "me ", "check.", "All ", "done ", "here ", "now."].map((word) => ({ id, text: word, final: false })))
    expect(all.filter((frame) => frame.event === "thinking").map((frame) => frame.data)).toEqual([{ id, text: "need the tool", final: false }])
  })

  it("ends every turn that streamed with an empty final text frame right after the driver returns (spec §4.6)", () => {
    const kinds = all.map((frame) =>
      frame.event === "status" ? `status:${frame.data.status.message}`
      : frame.event === "text" ? (frame.data.final ? `text-final:${frame.data.text}` : "chunk")
      : frame.event
    )
    expect(kinds).toEqual([
      "status:working",
      "status:inference turn 1",
      "thinking",
      "chunk",
      "chunk",
      "chunk",
      "text-final:",
      "artifact",
      "status:inference turn 2",
      "chunk",
      "chunk",
      "chunk",
      "chunk",
      "text-final:",
      "status:session ended"
    ])
  })

  it("completes with the final text as the response, without repeating it as a text frame", async () => {
    expect(all.at(-1)!.data).toMatchObject({ id, status: { state: "completed", message: "session ended", response: "All done here now." }, final: true })
    expect(all.filter((frame) => frame.event === "text" && frame.data.text === "All done here now.")).toEqual([])
    expect(resultFile(served.listening.workdir)).toBe("All done here now.")
    await stop(served)
  })
})

describe("serve <agent dir>: request-input from a WASM tool (lifecycle.input_timeout_secs: 3)", () => {
  let served: ServeProcess

  beforeAll(async () => {
    served = await serve({
      driverConfig: { replies: [toolTurn(call("c1", "ask", "Pick A or B?")), endTurn("picked")] },
      tools: { ask: "request-input-tool" },
      extra: "lifecycle:\n  task_acceptance: queue\n  input_timeout_secs: 3\n"
    })
  }, 60_000)

  it("answered: input-required with the prompt, a follow-up message/send resumes the task, the answer reaches the next turn", async () => {
    const { url, workdir } = served.listening
    const stream = await nodeStream(url, "message/stream", { message: referenceMessage("choose") })
    streams.push(stream)
    const head = frames(await readUntil(stream.events, (event) => event.event === "status" && dataOf(event).status.state === "input-required", 30_000))
    const id = head[0]!.data.id
    expect(head.at(-1)!.data).toMatchObject({ id, status: { state: "input-required", message: "\"Pick A or B?\"" }, final: false })
    const waiting = await rpc(url, "tasks/get", { id })
    expect(waiting.body.result).toMatchObject({ id, status: { state: "input-required" }, artifacts: [{ name: "prompt", parts: [{ text: "\"Pick A or B?\"" }] }] })

    const follow = await rpc(url, "message/send", { message: referenceMessage("B") })
    expect(follow.body.result).toMatchObject({ id, status: { state: "working" } })
    const rest = frames(await readUntil(stream.events, isFinalStatus, 30_000))
    expect(rest.map((frame) => frame.event === "status" ? `status:${frame.data.status.state}:${frame.data.status.message}` : frame.event)).toEqual([
      "status:working:resumed",
      "artifact",
      "status:working:inference turn 2",
      "text",
      "status:completed:session ended"
    ])
    expect(rest[1]!.data).toEqual({ id, artifact: { tool_name: "ask", content: "user answered: B" } })
    expect(rest.at(-1)!.data).toMatchObject({ id, status: { response: "picked" }, final: true })
    expect(resultFile(workdir)).toBe("picked")
    expect(driverRequest(workdir, 2).messages[2]).toEqual({
      role: "tool",
      tool_call_id: "c1",
      is_error: false,
      content: [{ type: "text", text: "<untrusted-content source=tool:ask>\nuser answered: B\n</untrusted-content>" }]
    })
  })

  it("timed out: the task fails with input-timeout in its final frame, tasks/get and out/result.txt", async () => {
    const { url, workdir, records } = served.listening
    const all = await streamTask(url, "choose again")
    const id = all[0]!.data.id
    expect(all.at(-2)!.data).toMatchObject({ id, status: { state: "input-required" }, final: false })
    expect(all.at(-1)).toEqual({ event: "status", data: { id, context_id: all[0]!.data.context_id, status: { state: "failed", message: "input-timeout" }, final: true } })
    const got = await rpc(url, "tasks/get", { id })
    expect(got.body.result).toMatchObject({ id, status: { state: "failed" } })
    expect(got.body.result.artifacts).toBeUndefined()
    expect(resultFile(workdir)).toBe("error: input-timeout")
    await stop(served)
    const ends = ofType(traceLines(records), "task_end")
    expect(ends.map((line) => [line.task_id === id, line.exit_status])).toEqual([[false, "ok"], [true, "failed"]])
  })
})
