/**
 * `serve <agent dir> --json` through the CLI binary (`npm run build` first): the scripted driver
 * fixture behind the door, the manifest's lifecycle applied, trace.jsonl in the workdir, and a
 * clean SIGTERM. (`run <agent dir>`: AgentRun.test.ts.)
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type AgentDirOptions, makeAgentCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc, waitForState } from "../lib/Door.js"
import { dataOf, type NodeStream, nodeStream, readUntil } from "../lib/DoorKit.js"

const cleanups: Array<() => Promise<void> | void> = []
const streams: Array<NodeStream> = []

afterEach(async () => {
  for (const stream of streams.splice(0)) stream.destroy()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const agentDir = async (options: AgentDirOptions) => {
  const dir = await makeAgentCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}


const traceLines = (workdir: string): Array<Record<string, any>> =>
  readFileSync(join(workdir, "trace.jsonl"), "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))

const text = (value: string) => ({ type: "text", text: value })
const call = (id: string, name: string, input: unknown) => ({ type: "tool_call", id, name, input })

describe("serve <agent dir> --json (CLI)", () => {
  it("serves the agent loop: listening line, blocking send, watched chunks and artifact, trace, SIGTERM exits 0", async () => {
    const dir = await agentDir({
      driverConfig: {
        chunks: true,
        replies: [
          { stop_reason: "tool_call", content: [text("Checking. "), call("c1", "echo-tool", { msg: "hi" })] },
          { stop_reason: "end_turn", content: [text("All done here.")] }
        ]
      },
      tools: { "echo-tool": "echo-tool" }
    })
    const served = await serveCli(dir, {}, cleanups)
    const { listening } = served
    expect(Object.keys(listening).sort()).toEqual(["event", "records", "session_id", "url", "workdir"])
    expect(listening.event).toBe("listening")
    expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    expect(listening.session_id).toMatch(/^ses_[0-9a-f]{32}$/)
    expect(listening.workdir).toBe(join(dir, "workdir", listening.session_id))
    expect(listening.records).toBe(join(dir, ".murmur", "sessions", listening.session_id))
    const card = await (await fetch(new URL(".well-known/agent-card.json", listening.url))).json()
    expect(card).toMatchObject({ name: "test-agent", version: "0.1.0" })

    const watch = await nodeStream(listening.url, "stream/watch", {})
    streams.push(watch)
    const ack = await readUntil(watch.events, (event) => event.event === "connection-ack", 5_000)
    expect(dataOf(ack.at(-1)!)).toMatchObject({ role: "observer", conversation_mode: "stateless" })

    const reply = await rpc(listening.url, "message/send", { message: referenceMessage("do it"), configuration: { blocking: true } })
    expect(reply.body.error).toBeUndefined()
    const id = reply.body.result.id
    expect(reply.body.result.status.state).toBe("completed")
    expect(JSON.stringify(reply.body.result)).toContain("All done here.")
    expect(readFileSync(join(listening.workdir, "out", "result.txt"), "utf8")).toBe("All done here.")

    const frames = await readUntil(watch.events, (event) => event.event === "status" && dataOf(event).final === true, 10_000)
    const texts = frames.filter((event) => event.event === "text").map(dataOf)
    expect(texts.filter((frame) => !frame.final).map((frame) => frame.text).join("")).toBe("Checking. All done here.")
    const artifacts = frames.filter((event) => event.event === "artifact").map(dataOf)
    expect(artifacts).toEqual([{ id, artifact: { tool_name: "echo-tool", content: "{\"msg\":\"hi\"}" } }])
    expect(dataOf(frames.at(-1)!)).toMatchObject({ id, status: { state: "completed", message: "session ended", response: "All done here." }, final: true })

    const types = traceLines(listening.records).map((line) => line.event_type)
    expect(types[0]).toBe("session_start")
    expect(types).toContain("task_start")
    expect(types.at(-1)).toBe("task_end")
    expect(traceLines(listening.records)[0]).toMatchObject({ session_id: listening.session_id, capsule_name: "test-agent", model: "scripted" })

    served.child.kill("SIGTERM")
    expect(await served.exited).toEqual({ code: 0, signal: null })
    expect(served.stdout().trim().split("\n")).toHaveLength(1)
    const end = traceLines(listening.records).at(-1)!
    expect(end).toMatchObject({ event_type: "session_end", total_turns: 2, total_tool_calls: 1, exit_status: "ok" })
  })

  it("takes task acceptance from the manifest's lifecycle: `none` starts no task", async () => {
    const dir = await agentDir({ driverConfig: { replies: [] }, extra: "lifecycle:\n  task_acceptance: none\n" })
    const served = await serveCli(dir, {}, cleanups)
    const reply = await rpc(served.listening.url, "message/send", { message: referenceMessage("x") })
    expect(reply.body.error.code).toBe(-32601)
    served.child.kill("SIGTERM")
    expect(await served.exited).toEqual({ code: 0, signal: null })
    expect(traceLines(served.listening.records).map((line) => line.event_type)).toEqual(["session_start", "session_end"])
  })

  it("applies lifecycle.input_timeout_secs: an unanswered request-input fails the task with input-timeout", async () => {
    const dir = await agentDir({
      driverConfig: { replies: [{ stop_reason: "tool_call", content: [call("c1", "ask", "Pick?")] }, { stop_reason: "end_turn", content: [text("never")] }] },
      tools: { ask: "request-input-tool" },
      extra: "lifecycle:\n  task_acceptance: queue\n  input_timeout_secs: 1\n"
    })
    const served = await serveCli(dir, {}, cleanups)
    const { url } = served.listening
    const sent = (await rpc(url, "message/send", { message: referenceMessage("choose") })).body.result
    await waitForState(url, sent.id, ["input-required"], 15_000)
    await waitForState(url, sent.id, ["failed"], 5_000)
    expect(readFileSync(join(served.listening.workdir, "out", "result.txt"), "utf8")).toBe("error: input-timeout")
    served.child.kill("SIGTERM")
    expect(await served.exited).toEqual({ code: 0, signal: null })
  })

  it("gives tools and the shell MURMUR_CAPSULE_URL once the door is bound, --port 0 included", async () => {
    const dir = await agentDir({
      driverConfig: {
        replies: [
          { stop_reason: "tool_call", content: [call("c1", "sh", { command: "echo url=$MURMUR_CAPSULE_URL" })] },
          { stop_reason: "end_turn", content: [text("ok")] }
        ]
      },
      capabilities: "  shell:\n    allow: [sh]\n"
    })
    const { listening } = await serveCli(dir, {}, cleanups)
    const reply = await rpc(listening.url, "message/send", { message: referenceMessage("where am I?"), configuration: { blocking: true } })
    expect(reply.body.result.status.state).toBe("completed")
    const shell = reply.body.result.artifacts.find((artifact: { name: string }) => artifact.name === "sh")
    expect(shell.parts[0].text).toContain(`url=localhost:${new URL(listening.url).port}\n`)
  })
})

