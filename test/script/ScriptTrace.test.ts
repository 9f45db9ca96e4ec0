/**
 * A script capsule's `trace.jsonl` (docs/trace.md, "What a script capsule writes"), in process
 * with real components in real workers: served, each task is a `task_start`/`task_end` pair in
 * one session frame, a `message/send` the guest made is an `a2a_send`, and a task that waited
 * behind `max_active: 1` says how long in `queued_ms`; run once (`run <dir> --workdir`), the trace
 * goes to `<capsule dir>/.murmur/sessions/<session>/` (never into the workdir) and frames one `task_md` task. The peer is a real door (scripted
 * capsule) on 127.0.0.1:0.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Either, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { servedCapsule } from "../lib/Door.js"
import { loadProject } from "../../src/project/CapsuleProject.js"
import { ScriptCapsule } from "../../src/script/ScriptCapsule.js"
import { type PreparedScript, prepareScript, runScriptOnce } from "../../src/script/ScriptLaunch.js"
import { mintId } from "../../src/services/Ids.js"
import { SessionIdentity } from "../../src/services/SessionIdentity.js"
import { makeCapsuleDir } from "../lib/CapsuleDirs.js"
import { a2aMessage, type OpenDoor, openDoor, rpc, waitForState } from "../lib/Door.js"
import { inProcessSandbox } from "../lib/InProcess.js"

type Line = Record<string, any>

const HEADER = ["event_type", "event_id", "parent_id", "session_id", "timestamp"]

const cleanups: Array<() => Promise<void> | void> = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A capsule-send-message directory allowed to reach `peer`, and the host environment that points it there. */
const sender = async (peer: OpenDoor) => {
  const origin = new URL(peer.url).origin
  const dir = await makeCapsuleDir({
    capsule: "capsule-send-message",
    capabilities: `  env:\n    allow: [PEER_URL, MESSAGE_TEXT]\n  network:\n    allow: ["${origin}"]\n`
  })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  // The peer completes each at once, so a later send is a task of its own (not the answer to an input request).
  return { dir, env: { PEER_URL: peer.url, MESSAGE_TEXT: "/complete ok" } }
}

const prepare = (dir: string, env: Record<string, string>, sandboxContext: Context.Context<any>, workdir?: string) =>
  Effect.runPromise(
    loadProject(dir, env).pipe(
      Effect.flatMap((project) => prepareScript(project, { sessionId: mintId("ses"), workdir, hostEnv: env })),
      Effect.provide(sandboxContext)
    )
  ) as Promise<PreparedScript>

/** Every line parsed, each starting with the five header keys, all of one session. */
const readTrace = (directory: string, sessionId: string): Array<Line> => {
  const text = readFileSync(join(directory, "trace.jsonl"), "utf8")
  expect(text.endsWith("\n")).toBe(true)
  const lines = text.slice(0, -1).split("\n").map((line) => JSON.parse(line) as Line)
  for (const line of lines) {
    expect(Object.keys(line).slice(0, 5), line.event_type).toEqual(HEADER)
    expect(line.session_id).toBe(sessionId)
    expect(line.event_id).toMatch(/^evt_[0-9a-f]{32}$/)
  }
  expect(new Set(lines.map((line) => line.event_id)).size).toBe(lines.length)
  return lines
}

/** The session → task tree: one frame around everything, each task_end under its own task_start. */
const expectTree = (lines: ReadonlyArray<Line>) => {
  const [first, last] = [lines[0]!, lines.at(-1)!]
  expect(first).toMatchObject({ event_type: "session_start", parent_id: null })
  expect(last).toMatchObject({ event_type: "session_end", parent_id: first.event_id })
  const starts = new Map(lines.filter((line) => line.event_type === "task_start").map((line) => [line.task_id, line]))
  for (const line of lines.slice(1, -1)) {
    if (line.event_type === "task_end") expect(line.parent_id, "task_end").toBe(starts.get(line.task_id)?.event_id)
    else expect(line.parent_id, line.event_type).toBe(first.event_id)
  }
  expect(lines.filter((line) => line.event_type === "task_end").map((line) => line.task_id)).toEqual([...starts.keys()])
}

const ofType = (lines: ReadonlyArray<Line>, type: string) => lines.filter((line) => line.event_type === type)

describe("a script capsule's trace.jsonl", () => {
  it("served: a session frame, a task pair per task, an a2a_send per answered send, and queued_ms for the task that waited", async () => {
    const peer = await openDoor()
    cleanups.push(() => peer.close())
    const { dir, env } = await sender(peer)
    const { build, close, sandboxContext } = await inProcessSandbox(env, cleanups)
    const prepared = await prepare(dir, env, sandboxContext)
    const session = servedCapsule(ScriptCapsule.layer(prepared), {
      door: { acceptance: "queue" },
      tasks: { maxActive: 1, queueDepth: 8 }
    }).pipe(Layer.provide(Layer.succeedContext(sandboxContext)))
    const url = Context.get(await build(session), SessionIdentity).url

    // Both submitted at once: whichever is accepted second waits while the other runs its guest and its send.
    const texts = ["first", "second"]
    const replies = await Promise.all(texts.map((text) => rpc(url, "message/send", { message: a2aMessage(text), configuration: { blocking: false } })))
    const textOf = new Map(replies.map((reply, index) => [reply.body.result.id as string, texts[index]!]))
    for (const taskId of textOf.keys()) expect(await waitForState(url, taskId, ["completed"], 15_000)).toMatchObject({ status: { state: "completed" } })
    await close()

    const lines = readTrace(prepared.records, prepared.sessionId)
    expectTree(lines)
    expect(lines[0]).toMatchObject({
      capsule_name: "test-capsule",
      capsule_version: "0.1.0",
      model: "",
      max_turns: 0,
      capabilities: ["network"],
      tools_declared: [],
      system_prompt_source: "none",
      credential_source: "none",
      system_prompt_sha256: null
    })
    const starts = ofType(lines, "task_start")
    expect(starts.map((line) => line.task_id).sort()).toEqual([...textOf.keys()].sort())
    for (const line of starts) {
      expect(line).toMatchObject({ source: "a2a", origin: "event", trust: "untrusted", lane: "bg", message_parts_bytes: textOf.get(line.task_id)!.length })
    }
    expect(starts[0]!.queued_ms).toBe(0)
    expect(starts[1]!.queued_ms).toBeGreaterThan(0)
    // It waited at least until the first task ended.
    const firstEnd = ofType(lines, "task_end")[0]!
    expect(starts[1]!.timestamp).toBeGreaterThanOrEqual(firstEnd.timestamp)
    expect(ofType(lines, "task_end").map((line) => [line.exit_status, line.turns, line.input_tokens, line.tool_calls])).toEqual([["ok", 0, 0, 0], ["ok", 0, 0, 0]])
    expect(ofType(lines, "a2a_task_received").map((line) => line.task_id)).toEqual(starts.map((line) => line.task_id))
    expect(lines.at(-1)).toMatchObject({ total_turns: 0, total_tool_calls: 0, exit_status: "ok" })

    const sends = ofType(lines, "a2a_send")
    expect(sends).toHaveLength(2)
    // The fixture sends the same message id from both tasks: the peer's door took the second as a
    // retry of the first (idempotent submit) and answered with the same task.
    expect(new Set(sends.map((send) => send.task_id)).size).toBe(1)
    for (const send of sends) {
      expect(send).toMatchObject({ peer_url: peer.url, message_id: "capsule-send-message-1", trust: "untrusted" })
      // What the peer received: its task, its context, and the traceparent the request carried.
      const peerTask = await peer.run(peer.registry.get(send.task_id))
      expect(peerTask.contextId).toBe(send.context_id)
      // The task keeps the traceparent of the send that created it (the retry's is the other one).
      expect(sends.map((each) => each.traceparent)).toContain(peerTask.provenance.traceparent ?? null)
    }
    // Each send's line comes while its task runs: after its task_start, before its task_end.
    const at = (line: Line) => lines.indexOf(line)
    expect(at(sends[0]!)).toBeGreaterThan(at(starts[0]!))
    expect(at(sends[0]!)).toBeLessThan(at(firstEnd))
  }, 60_000)

  it("run once with --workdir: the trace goes to the capsule's .murmur/sessions/<session>/ and frames one task_md task and its send", async () => {
    const peer = await openDoor()
    cleanups.push(() => peer.close())
    const { dir, env } = await sender(peer)
    const { sandboxContext } = await inProcessSandbox(env, cleanups)
    const workdir = mkdtempSync(join(tmpdir(), "script-trace-"))
    cleanups.push(() => rmSync(workdir, { recursive: true, force: true }))
    const prepared = await prepare(dir, env, sandboxContext, workdir)
    expect(prepared.records).toBe(join(dir, ".murmur", "sessions", prepared.sessionId))

    await Effect.runPromise(runScriptOnce(prepared, {
      inTask: false,
      trust: "untrusted",
      host: { text: () => Effect.void, thinking: () => Effect.void, requestInput: () => Effect.fail({ message: "no input here" }) }
    }).pipe(Effect.provide(sandboxContext)))

    expect(readFileSync(join(workdir, "out", "result.txt"), "utf8")).toMatch(/^ok:tsk_/)
    expect(existsSync(join(workdir, "trace.jsonl"))).toBe(false)
    expect(existsSync(join(workdir, ".murmur"))).toBe(false)
    const lines = readTrace(prepared.records, prepared.sessionId)
    expectTree(lines)
    expect(lines.map((line) => line.event_type)).toEqual(["session_start", "task_start", "a2a_send", "task_end", "session_end"])
    expect(lines[1]).toMatchObject({ source: "task_md", origin: "user", trust: "untrusted", lane: "user", message_parts_bytes: 0, queued_ms: 0 })
    const [, peerTaskId, peerContextId] = /^ok:([^:]+):([^:]+):/.exec(readFileSync(join(workdir, "out", "result.txt"), "utf8"))!
    expect(lines[2]).toMatchObject({ peer_url: peer.url, message_id: "capsule-send-message-1", task_id: peerTaskId, context_id: peerContextId, trust: "untrusted" })
    expect(lines[2]!.traceparent).toBe((await peer.run(peer.registry.get(peerTaskId!))).provenance.traceparent ?? null)
    expect(lines[3]).toMatchObject({ task_id: lines[1]!.task_id, exit_status: "ok" })
  }, 60_000)

  it("a .murmur link in the --workdir does not matter: the records are outside it, and nothing is written where it leads", async () => {
    const peer = await openDoor()
    cleanups.push(() => peer.close())
    const { dir, env } = await sender(peer)
    const { sandboxContext } = await inProcessSandbox(env, cleanups)
    const base = mkdtempSync(join(tmpdir(), "script-trace-link-"))
    cleanups.push(() => rmSync(base, { recursive: true, force: true }))
    const [workdir, outside] = [join(base, "workdir"), join(base, "outside")]
    mkdirSync(workdir)
    mkdirSync(outside)
    symlinkSync(outside, join(workdir, ".murmur"))
    const prepared = await prepare(dir, env, sandboxContext, workdir)

    const outcome = await Effect.runPromise(runScriptOnce(prepared, {
      inTask: false,
      trust: "untrusted",
      host: { text: () => Effect.void, thinking: () => Effect.void, requestInput: () => Effect.fail({ message: "no input here" }) }
    }).pipe(Effect.either, Effect.provide(sandboxContext)))

    expect(Either.isRight(outcome)).toBe(true)
    expect(readdirSync(outside)).toEqual([])
    expect(readTrace(prepared.records, prepared.sessionId).map((line) => line.event_type)).toContain("session_end")
  }, 60_000)
})
