/**
 * The session trace of agent capsules run through the command line (`npm run build` first),
 * checked against spec §6 and the reference's observability schema it summarises
 * (murmur-nexus/murmur docs/content/reference/observability-schemas.md@02279a3f24): the line
 * header, the event_id/parent_id tree, each event's fields, and what trace.capture none | meta |
 * content keeps. One A2A task through `run <dir> --json` (the door path), three `run --task`
 * launches (the task.md path) for the capture modes.
 */
import { existsSync, readFileSync, rmSync, statSync } from "node:fs"
import { basename, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  call,
  driverRequest,
  endTurn,
  EVENT_ID,
  HEADER,
  missingKeys,
  ofType,
  resolvedOnPath,
  runTask,
  sha256,
  type TaskRun,
  text,
  toolTurn,
  type TraceLine,
  traceLines
} from "../lib/AgentE2E.js"
import { type AgentDirOptions, listeningCli, makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { Effect } from "effect"
import { probeHost } from "../../src/shell/containment/HostProbe.js"

const hostTier = await Effect.runPromise(probeHost(process.env.PATH))

const cleanups: Array<() => Promise<void> | void> = []

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const TURN_1 = toolTurn(text("Checking."), call("c1", "echo-tool", { msg: "hi" }), call("c2", "echo", { command: "hello from shell" }))
const TURN_2 = endTurn("All done here.")
const scenario = (extra = "", inference?: string): AgentDirOptions => ({
  driverConfig: { replies: [TURN_1, TURN_2] },
  tools: { "echo-tool": "echo-tool" },
  capabilities: "  shell:\n    allow: [echo]\n",
  extra,
  ...(inference === undefined ? {} : { inference })
})
const fence = (artifact: string, content: string) => `<untrusted-content source=tool:${artifact}>\n${content}\n</untrusted-content>`

/** `run <dir> --json` without a task; the first A2A task (a blocking message/send) is the run's task. */
const runOverA2A = async (options: AgentDirOptions, message: ReturnType<typeof referenceMessage>) => {
  const dir = await makeAgentCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const started = Date.now()
  const { exited, listening, stderr } = await listeningCli(["run", dir, "--json"], {}, cleanups)
  const reply = await rpc(listening.url, "message/send", { message, configuration: { blocking: true } })
  const { code } = await exited
  return { listening, reply: reply.body.result, code, stderr: stderr(), started, trace: traceLines(listening.records) }
}

describe("trace.jsonl of an A2A task (run <dir> --json, trace.capture meta by default)", () => {
  const message = referenceMessage("do it")
  let session: Awaited<ReturnType<typeof runOverA2A>>
  let trace: Array<TraceLine>
  let taskId: string
  const byType = (type: string) => ofType(trace, type)

  beforeAll(async () => {
    session = await runOverA2A(scenario(), message)
    expect(session.code, session.stderr).toBe(0)
    trace = session.trace
    taskId = session.reply.id
  }, 60_000)

  it("starts every line with the five header keys in order: unique evt_ UUIDv7 ids, one session id naming the directory, unix-ms timestamps", () => {
    const { listening, started } = session
    expect(basename(listening.workdir)).toBe(listening.session_id)
    for (const line of trace) {
      expect(Object.keys(line).slice(0, 5), line.event_type).toEqual(HEADER)
      expect(line.event_id).toMatch(EVENT_ID)
      expect(line.session_id).toBe(listening.session_id)
      expect(Number.isInteger(line.timestamp)).toBe(true)
      expect(line.timestamp).toBeGreaterThanOrEqual(started)
      expect(line.timestamp).toBeLessThanOrEqual(Date.now())
    }
    expect(new Set(trace.map((line) => line.event_id)).size).toBe(trace.length)
  })

  it("forms the session → task → turn tree: each parent_id names an earlier line, as the event type requires", () => {
    const [start] = byType("session_start")
    expect(trace[0]).toBe(start)
    expect(start!.parent_id).toBeNull()
    const seen = new Set<string>()
    const taskNode = byType("task_start")[0]!.event_id
    const turnNode = (turn: number) => byType("inference").find((line) => line.turn === turn)!.event_id
    for (const line of trace) {
      if (line !== start) {
        expect(line.parent_id, line.event_type).not.toBeNull()
        expect(seen.has(line.parent_id), `${line.event_type}'s parent is an earlier line`).toBe(true)
      }
      seen.add(line.event_id)
      switch (line.event_type) {
        case "task_start":
        case "a2a_task_received":
        case "session_end":
          expect(line.parent_id, line.event_type).toBe(start!.event_id)
          break
        case "inference":
        case "task_end":
          expect(line.parent_id, line.event_type).toBe(taskNode)
          break
        case "tool_call":
        case "shell":
          expect(line.parent_id, line.event_type).toBe(turnNode(line.turn))
          break
      }
    }
    expect(trace.at(-1)).toBe(byType("session_end")[0])
    expect(byType("session_start")).toHaveLength(1)
    expect(byType("session_end")).toHaveLength(1)
  })

  it("writes the spec's sequence: a2a_task_received before task_start, a tool_call line for every call with shell after its own tool_call (spec §4.1, §4.4)", () => {
    expect(trace.map((line) => line.event_type === "tool_call" ? `tool_call:${line.tool_name}` : line.event_type)).toEqual([
      "session_start",
      "a2a_task_received",
      "task_start",
      "inference",
      "tool_call:echo-tool",
      "tool_call:echo",
      "shell",
      "inference",
      "task_end",
      "session_end"
    ])
  })

  it("session_start: capsule identity, model, turn ceiling, granted categories, offered tools, containment and prompt source", () => {
    expect(byType("session_start")[0]).toMatchObject({
      capsule_name: "test-agent",
      capsule_version: "0.1.0",
      model: "scripted",
      max_turns: 10,
      capabilities: ["shell"],
      tools_declared: ["echo", "echo-tool"],
      containment_declared: "advisory",
      // What the host backs, whatever was declared: sealed where bubblewrap works.
      containment_achieved: hostTier.tier,
      workdir_exec: false,
      system_prompt_source: "none",
      credential_source: "none",
      system_prompt_sha256: null
    })
    expect(byType("session_start")[0]).not.toHaveProperty("system_prompt")
  })

  it("session_start: the fields the reference always writes (max_session_tokens, machine_tokens_per_day, userns_grant, resumed_from, context_id, effective_grants)", () => {
    const start = byType("session_start")[0]!
    expect(missingKeys(start, ["max_session_tokens", "machine_tokens_per_day", "userns_grant", "resumed_from", "context_id", "effective_grants"])).toEqual([])
    expect(start).toMatchObject({ max_session_tokens: null, machine_tokens_per_day: null, resumed_from: null, context_id: null })
    expect(typeof start.effective_grants).toBe("object")
    expect(start.effective_grants).toMatchObject({ shell_allow: ["echo"] })
    // The containment it reports is what each command runs under on this host.
    expect(start.effective_grants.containment).toEqual(hostTier.tier === "sealed"
      ? {
        declared: "advisory",
        achieved: "sealed",
        shell: expect.arrayContaining(["rlimits", "namespaces", "network-unshared", "composed-root", "seccomp", "noexec-workdir", "die-with-parent"])
      }
      : { declared: "advisory", achieved: "advisory", shell: expect.any(Array) })
  })

  it("a2a_task_received: the task, its context, the caller's messageId and traceparent (spec §4.1 step 2)", () => {
    expect(byType("a2a_task_received")).toEqual([
      expect.objectContaining({ task_id: taskId, context_id: session.reply.contextId, message_id: message.messageId, traceparent_from_caller: null })
    ])
  })

  it("task_start: source a2a, the door's origin/trust/lane for a request without origin headers, the message's byte length", () => {
    expect(byType("task_start")).toEqual([expect.objectContaining({
      task_id: taskId,
      context_id: session.reply.contextId,
      source: "a2a",
      origin: "event",
      trust: "untrusted",
      lane: "bg",
      message_parts_bytes: 5
    })])
  })

  it("inference: one line per turn with the estimates, the decision, the stop reason, the tool asked for and the wire hashes of what was sent", () => {
    const lines = byType("inference")
    expect(lines.map((line) => [line.turn, line.task_id, line.decision, line.stop_reason, line.tool_name])).toEqual([
      [0, taskId, "tool_call", "tool_call", "echo-tool"],
      [1, taskId, "end_turn", "end_turn", null]
    ])
    for (const [index, line] of lines.entries()) {
      const request = driverRequest(session.listening.workdir, index + 1)
      expect(Number.isInteger(line.input_tokens) && line.input_tokens > 0).toBe(true)
      expect(Number.isInteger(line.output_tokens) && line.output_tokens > 0).toBe(true)
      expect(line.system_sha).toBe(sha256(request.system))
      expect(line.tools_sha).toBe(sha256(JSON.stringify(request.tools)))
      expect(line.response_sha).toBe(sha256(JSON.stringify([TURN_1, TURN_2][index])))
      // The driver reported no usage: the provider counts are absent, never 0.
      expect(missingKeys(line, ["input_tokens_actual", "output_tokens_actual", "cached_tokens", "cache_write_tokens"])).toHaveLength(4)
    }
  })

  it("inference: message_ids and message_shas name each message the request embedded, in send order", () => {
    for (const [index, line] of byType("inference").entries()) {
      const request = driverRequest(session.listening.workdir, index + 1)
      expect(missingKeys(line, ["message_ids", "message_shas"])).toEqual([])
      expect(line.message_shas).toEqual(request.messages.map((m: unknown) => sha256(JSON.stringify(m))))
      expect(line.message_ids).toHaveLength(request.messages.length)
    }
  })

  it("tool_call (WASM tool): turn, task, name, the provider's call id, the input and its size, status; no output under meta", () => {
    const line = byType("tool_call").find((candidate) => candidate.tool_name === "echo-tool")!
    expect(line).toMatchObject({ turn: 0, task_id: taskId, tool_name: "echo-tool", tool_call_id: "c1", input: { msg: "hi" }, input_bytes: 12, status: "ok" })
    expect(Number.isInteger(line.duration_ms)).toBe(true)
    expect(Number.isInteger(line.output_bytes)).toBe(true)
    expect(line).not.toHaveProperty("output")
  })

  it("shell: the resolved binary, the arguments, the exit code and the output sizes, under turn 0", () => {
    const [line] = byType("shell")
    expect(line).toMatchObject({
      turn: 0,
      task_id: taskId,
      binary: resolvedOnPath("echo"),
      command: "hello from shell",
      exit_code: 0,
      stdout_bytes: 17,
      stderr_bytes: 0
    })
    expect(Number.isInteger(line!.duration_ms)).toBe(true)
  })

  it("task_end and session_end: outcome ok and totals that equal the lines written", () => {
    const inference = byType("inference")
    const sum = (key: string) => inference.reduce((total, line) => total + line[key], 0)
    const toolCalls = byType("tool_call").length
    const shellCalls = byType("shell").length + byType("shell_detached").length
    expect(byType("task_end")).toEqual([expect.objectContaining({
      task_id: taskId,
      exit_status: "ok",
      turns: 2,
      input_tokens: sum("input_tokens"),
      output_tokens: sum("output_tokens"),
      tool_calls: toolCalls,
      shell_calls: 1,
      reopen_count: 0
    })])
    expect(byType("session_end")).toEqual([expect.objectContaining({
      total_turns: inference.length,
      total_input_tokens: sum("input_tokens"),
      total_output_tokens: sum("output_tokens"),
      total_tool_calls: toolCalls,
      total_shell_calls: shellCalls,
      exit_status: "ok"
    })])
    expect(shellCalls).toBe(1)
  })
})

describe("trace.capture none | meta | content (run <dir> --task)", () => {
  const PROMPT = "Be brief."
  const runs: Partial<Record<"none" | "meta" | "content", TaskRun>> = {}
  const modes = ["none", "meta", "content"] as const
  const of = (mode: (typeof modes)[number]) => runs[mode]!

  beforeAll(async () => {
    await Promise.all(modes.map(async (mode) => {
      runs[mode] = await runTask(scenario(`trace:\n  capture: ${mode}\n`, `  system_prompt: ${PROMPT}\n`), "do it", cleanups as Array<() => void>)
    }))
    for (const mode of modes) expect(of(mode).run.code, of(mode).run.stderr).toBe(0)
  }, 60_000)

  it("writes trace.jsonl in every mode, with the same events", () => {
    const types = (mode: (typeof modes)[number]) => of(mode).trace.map((line) => line.event_type)
    expect(types("none").length).toBeGreaterThan(0)
    expect(types("meta")).toEqual(types("none"))
    expect(types("content")).toEqual(types("none"))
  })

  it("writes the inference wire hashes under meta and content, none under none", () => {
    const hashes = ["system_sha", "tools_sha", "response_sha"]
    for (const mode of modes) {
      for (const line of ofType(of(mode).trace, "inference")) {
        expect(missingKeys(line, hashes), mode).toEqual(mode === "none" ? hashes : [])
      }
    }
  })

  it("writes tool_call.output only under content; output and output_bytes carry the untrusted fence the model got", () => {
    const fenced = fence("echo-tool", "{\"msg\":\"hi\"}")
    for (const mode of modes) {
      const line = ofType(of(mode).trace, "tool_call").find((candidate) => candidate.tool_name === "echo-tool")!
      if (mode === "content") expect(line.output).toBe(fenced)
      else expect(line, mode).not.toHaveProperty("output")
      expect(line.output_bytes, mode).toBe(Buffer.byteLength(fenced))
    }
  })

  it("hashes the system prompt on session_start in every mode, never writes its body on the line, and stores it as a blob under content only", () => {
    for (const mode of modes) {
      const start = ofType(of(mode).trace, "session_start")[0]!
      expect(start, mode).toMatchObject({ system_prompt_source: "manifest", system_prompt_sha256: sha256(PROMPT) })
      expect(start, mode).not.toHaveProperty("system_prompt")
      expect(existsSync(join(of(mode).records, "blobs")), mode).toBe(mode === "content")
    }
    const blobs = join(of("content").records, "blobs")
    expect(statSync(blobs).mode & 0o777).toBe(0o700)
    expect(readFileSync(join(blobs, sha256(PROMPT)), "utf8")).toBe(PROMPT)
  })

  it("under content, every hash on an inference line resolves to blobs/<hash> holding that body", () => {
    const { trace, records } = of("content")
    for (const line of ofType(trace, "inference")) {
      for (const key of ["system_sha", "tools_sha", "response_sha"]) {
        const path = join(records, "blobs", line[key])
        expect(existsSync(path), `${key} of turn ${line.turn}`).toBe(true)
        expect(sha256(readFileSync(path, "utf8"))).toBe(line[key])
      }
    }
  })

  it("a local task (--task) is a task_md task: origin user, trusted, no a2a_task_received (spec §4.1, §6)", () => {
    const { exit, trace } = of("meta")
    expect(ofType(trace, "task_start")).toEqual([expect.objectContaining({
      task_id: exit.task_id,
      source: "task_md",
      origin: "user",
      trust: "trusted",
      lane: "user",
      message_parts_bytes: 5
    })])
    expect(ofType(trace, "a2a_task_received")).toEqual([])
  })
})
