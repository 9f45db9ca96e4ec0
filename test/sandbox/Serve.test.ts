/**
 * A script capsule served through the door, end to end over real HTTP (issue 3 §2, §4, §5, §6):
 * tool chunks reaching SSE in both dialects, request-input answered over the door and timing
 * out, cancel of a spinning guest, no worker outliving its run, a trapping guest; then the
 * `serve <dir> --json` CLI itself.
 *
 * The in-process sessions are built here (not through the CLI) so `Sandbox.liveWorkers()` can be
 * read between requests.
 */
import { existsSync, readFileSync, rmSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { servedCapsule } from "../lib/Door.js"
import { loadProject } from "../../src/project/CapsuleProject.js"
import { Sandbox } from "../../src/sandbox/Sandbox.js"
import { ScriptCapsule } from "../../src/script/ScriptCapsule.js"
import { prepareScript } from "../../src/script/ScriptLaunch.js"
import { mintId } from "../../src/services/Ids.js"
import { SessionIdentity } from "../../src/services/SessionIdentity.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"
import { type CapsuleDirOptions, makeCapsuleDir, serveCli } from "../lib/CapsuleDirs.js"
import { a2aMessage, referenceMessage, rpc, sleep, waitForState } from "../lib/Door.js"
import { dataOf, type NodeStream, nodeStream, readUntil } from "../lib/DoorKit.js"
import { inProcessSandbox } from "../lib/InProcess.js"


const callsTool = (tool: "chunks-tool" | "request-input-tool" | "echo-tool"): CapsuleDirOptions => ({
  capsule: "capsule-calls-tool",
  tools: { [tool]: tool },
  capabilities: "  env:\n    allow: [TOOL_NAME, TOOL_DATA]\n"
})

interface Served {
  readonly url: string
  readonly workdir: string
  readonly liveWorkers: () => Promise<number>
  readonly runningTasks: () => Promise<number>
  readonly close: () => Promise<void>
}

const cleanups: Array<() => Promise<void> | void> = []
const streams: Array<NodeStream> = []

afterEach(async () => {
  for (const stream of streams.splice(0)) stream.destroy()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const capsuleDir = async (options: CapsuleDirOptions) => {
  const dir = await makeCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A session serving the script capsule in `dir`, with the host environment `env`. */
const serveScript = async (
  dir: string,
  env: Record<string, string>,
  runner: { readonly inputTimeoutMs?: number } = {}
): Promise<Served> => {
  const { build, close, sandboxContext } = await inProcessSandbox(env, cleanups)
  const prepared = await Effect.runPromise(
    loadProject(dir, env).pipe(
      Effect.flatMap((project) => prepareScript(project, { sessionId: mintId("ses"), hostEnv: env })),
      Effect.provide(sandboxContext)
    )
  )
  const session = servedCapsule(ScriptCapsule.layer(prepared), {
    door: { acceptance: "queue" },
    tasks: { maxActive: 1, queueDepth: 8 },
    runner
  }).pipe(Layer.provide(Layer.succeedContext(sandboxContext)))
  const context = await build(session)
  const sandbox = Context.get(sandboxContext, Sandbox)
  const taskRunner = Context.get(context, TaskRunner)
  return {
    url: Context.get(context, SessionIdentity).url,
    workdir: prepared.workdir,
    liveWorkers: () => Effect.runPromise(sandbox.liveWorkers()),
    runningTasks: () => Effect.runPromise(taskRunner.running()),
    close
  }
}

const stream = async (...args: Parameters<typeof nodeStream>) => {
  const opened = await nodeStream(...args)
  streams.push(opened)
  return opened
}

const sendBlocking = async (url: string, message: unknown) => {
  const reply = await rpc(url, "message/send", { message, configuration: { blocking: true } })
  expect(reply.body.error).toBeUndefined()
  return reply.body.result
}

/** The text of an A2A status message. */
const statusText = (result: any): string | undefined => result?.status?.message?.parts?.[0]?.text

const resultFile = (workdir: string) => readFileSync(join(workdir, "out", "result.txt"), "utf8")

const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await sleep(5)
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`)
}

describe("serve a script capsule (in process)", () => {
  it("streams a tool's text chunks as `text` frames and its thinking as `thinking` (reference dialect)", async () => {
    const dir = await capsuleDir(callsTool("chunks-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "chunks-tool", TOOL_DATA: "go" })
    const { events, status } = await stream(served.url, "message/stream", { message: referenceMessage("count to three") })
    expect(status).toBe(200)
    const all = await readUntil(events, undefined, 15_000)
    expect(all.map((event) => event.event)).toEqual(["status", "text", "text", "text", "thinking", "text", "status"])
    const id = dataOf(all[0]!).id
    expect(dataOf(all[0]!)).toMatchObject({ id, status: { state: "working" }, final: false })
    expect(all.slice(1, 4).map(dataOf)).toEqual(["one ", "two ", "three"].map((text) => ({ id, text, final: false })))
    expect(dataOf(all[4]!)).toEqual({ id, text: "thinking about numbers", final: false })
    expect(dataOf(all[5]!)).toEqual({ id, text: "", final: true })
    expect(dataOf(all[6]!)).toEqual({
      id,
      context_id: dataOf(all[0]!).context_id,
      status: { state: "completed", message: "session ended", response: "done" },
      final: true
    })
    expect(readFileSync(join(served.workdir, "task.md"), "utf8")).toBe("count to three")
    expect(resultFile(served.workdir)).toBe("done")
    expect(await served.liveWorkers()).toBe(0)
  })

  it("streams the same chunks as artifact-update events (A2A dialect) and completes with out/result.txt", async () => {
    const dir = await capsuleDir(callsTool("chunks-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "chunks-tool", TOOL_DATA: "go" })
    const all = (await readUntil((await stream(served.url, "message/stream", { message: a2aMessage("count") }, { id: "a" })).events, undefined, 15_000))
      .map(dataOf)
    expect(all.every((body) => body.jsonrpc === "2.0" && body.id === "a")).toBe(true)
    const results = all.map((body) => body.result)
    const task = results[0]
    expect(task).toMatchObject({ kind: "task", status: { state: "submitted" } })
    const chunks = results.filter((result) => result.kind === "artifact-update")
    expect(chunks.map((result) => [result.artifact.parts[0].text, result.append, result.lastChunk])).toEqual([
      ["one ", false, false],
      ["two ", true, false],
      ["three", true, false],
      ["", true, true]
    ])
    expect(new Set(chunks.map((result) => result.artifact.artifactId))).toEqual(new Set([`${task.id}-turn-1`]))
    const thinking = results.filter((result) => result.status?.message?.metadata?.["murmur/kind"] === "thinking")
    expect(thinking).toHaveLength(1)
    expect(thinking[0]).toMatchObject({ kind: "status-update", status: { state: "working" }, final: false })
    expect(statusText(thinking[0])).toBe("thinking about numbers")
    const last = results.at(-1)
    expect(last).toMatchObject({ kind: "status-update", taskId: task.id, status: { state: "completed" }, final: true })
    expect(statusText(last)).toBe("done")
    const got = (await rpc(served.url, "tasks/get", { id: task.id })).body.result
    expect(got.status.state).toBe("completed")
    expect(statusText(got)).toBe(resultFile(served.workdir))
    expect(resultFile(served.workdir)).toBe("done")
  })

  it("puts the task in input-required with the tool's prompt; a follow-up by taskId resumes it (A2A)", async () => {
    const dir = await capsuleDir(callsTool("request-input-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "request-input-tool", TOOL_DATA: "Pick A or B?" })
    const turn1 = (await readUntil((await stream(served.url, "message/stream", { message: a2aMessage("choose") }, { id: 1 })).events, undefined, 15_000))
      .map((body) => dataOf(body).result)
    const task = turn1[0]
    const waiting = turn1.at(-1)
    expect(waiting).toMatchObject({ kind: "status-update", taskId: task.id, status: { state: "input-required" }, final: true })
    expect(statusText(waiting)).toBe("Pick A or B?")
    const got = (await rpc(served.url, "tasks/get", { id: task.id })).body.result
    expect(got.status.state).toBe("input-required")
    expect(statusText(got)).toBe("Pick A or B?")
    // The guest is blocked inside its (one) worker, waiting for the answer.
    expect(await served.liveWorkers()).toBe(1)

    const done = await sendBlocking(served.url, a2aMessage("A", { taskId: task.id, contextId: task.contextId }))
    expect(done).toMatchObject({ kind: "task", id: task.id, status: { state: "completed" } })
    expect(statusText(done)).toBe("user answered: A")
    expect(resultFile(served.workdir)).toBe("user answered: A")
    expect(done.history.map((message: any) => [message.role, message.parts[0].text])).toEqual([
      ["user", "choose"],
      ["user", "A"],
      ["agent", "user answered: A"]
    ])
    expect(await served.liveWorkers()).toBe(0)
  })

  it("routes a reference follow-up without taskId to the waiting task", async () => {
    const dir = await capsuleDir(callsTool("request-input-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "request-input-tool", TOOL_DATA: "Pick A or B?" })
    const { events } = await stream(served.url, "message/stream", { message: referenceMessage("choose") })
    const head = await readUntil(events, (event) => event.event === "status" && dataOf(event).status.state === "input-required", 15_000)
    const id = dataOf(head[0]!).id
    expect(dataOf(head.at(-1)!)).toMatchObject({ id, status: { state: "input-required", message: "Pick A or B?" }, final: false })
    const snapshot = (await rpc(served.url, "tasks/get", { id })).body.result
    expect(snapshot).toMatchObject({ id, status: { state: "input-required" }, artifacts: [{ name: "prompt", parts: [{ text: "Pick A or B?" }] }] })

    const follow = await rpc(served.url, "message/send", { message: referenceMessage("B") })
    expect(follow.body.result).toMatchObject({ id, status: { state: "working" } })
    const rest = await readUntil(events, undefined, 10_000)
    expect(rest.map((event) => event.event)).toEqual(["status", "text", "status"])
    expect(dataOf(rest[0]!)).toMatchObject({ id, status: { state: "working", message: "resumed" }, final: false })
    // Nothing streamed in this turn: the answer is sent as its one text frame.
    expect(dataOf(rest[1]!)).toEqual({ id, text: "user answered: B", final: true })
    expect(dataOf(rest[2]!)).toMatchObject({ id, status: { state: "completed", response: "user answered: B" }, final: true })
    expect(resultFile(served.workdir)).toBe("user answered: B")
  })

  it("fails a task whose input request times out with `input-timeout`, about inputTimeoutMs after asking", async () => {
    const dir = await capsuleDir(callsTool("request-input-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "request-input-tool", TOOL_DATA: "Pick A or B?" }, { inputTimeoutMs: 1_000 })
    const { events } = await stream(served.url, "message/stream", { message: referenceMessage("choose") })
    const head = await readUntil(events, (event) => event.event === "status" && dataOf(event).status.state === "input-required", 15_000)
    const askedAt = Date.now()
    expect(dataOf(head.at(-1)!)).toMatchObject({ status: { state: "input-required", message: "Pick A or B?" }, final: false })
    const rest = await readUntil(events, undefined, 5_000)
    const waited = Date.now() - askedAt
    expect(rest.map((event) => event.event)).toEqual(["status"])
    const failed = dataOf(rest[0]!)
    expect(failed.status.state).toBe("failed")
    expect(waited).toBeGreaterThanOrEqual(900)
    expect(waited).toBeLessThan(3_000)
    expect(failed).toEqual({
      id: dataOf(head[0]!).id,
      context_id: dataOf(head[0]!).context_id,
      status: { state: "failed", message: "input-timeout" },
      final: true
    })
    const task = (await rpc(served.url, "tasks/get", { id: failed.id }, { headers: { "a2a-version": "0.3" } })).body.result
    expect(task.status.state).toBe("failed")
    expect(statusText(task)).toBe("input-timeout")
    expect(await served.liveWorkers()).toBe(0)
  })

  it("cancels a spinning guest over HTTP: canceled within 1 s, its worker gone, the stream's last frame canceled", async () => {
    const dir = await capsuleDir({ capsule: "capsule-spin-loop", capabilities: "  limits:\n    deadline_seconds: 120\n" })
    const served = await serveScript(dir, {})
    const { events } = await stream(served.url, "message/stream", { message: referenceMessage("spin") })
    const head = await readUntil(events, (event) => event.event === "status", 5_000)
    const id = dataOf(head[0]!).id
    await waitFor("the guest's worker", async () => (await served.liveWorkers()) === 1, 10_000)
    await sleep(300) // let it spin
    const rttStart = performance.now()
    expect((await rpc(served.url, "tasks/get", { id })).body.result.status.state).toBe("working")
    const rttMs = performance.now() - rttStart

    const started = performance.now()
    const cancel = await rpc(served.url, "tasks/cancel", { id })
    const latencyMs = performance.now() - started
    const workersAfter = await served.liveWorkers()
    console.info(`cancel of a spinning guest over HTTP: ${latencyMs.toFixed(1)} ms (tasks/get round trip just before: ${rttMs.toFixed(1)} ms)`)
    expect(cancel.body.error).toBeUndefined()
    expect(cancel.body.result).toMatchObject({ id, status: { state: "canceled" } })
    expect(latencyMs).toBeLessThan(1_000)
    expect(workersAfter).toBe(0)
    expect(await served.runningTasks()).toBe(0)

    const rest = await readUntil(events, undefined, 5_000)
    expect(rest.length).toBeGreaterThanOrEqual(1)
    expect(rest.at(-1)!.event).toBe("status")
    expect(dataOf(rest.at(-1)!)).toEqual({
      id,
      context_id: dataOf(head[0]!).context_id,
      status: { state: "canceled", message: "task canceled" },
      final: true
    })
    expect((await rpc(served.url, "tasks/get", { id })).body.result.status.state).toBe("canceled")
  })

  it("leaves no worker behind after completed, failed and canceled tasks", async () => {
    const dir = await capsuleDir(callsTool("request-input-tool"))
    const served = await serveScript(dir, { TOOL_NAME: "request-input-tool", TOOL_DATA: "Pick?" }, { inputTimeoutMs: 1_000 })
    expect(await served.liveWorkers()).toBe(0)
    const ask = async (text: string) => {
      const task = (await rpc(served.url, "message/send", { message: a2aMessage(text), configuration: { blocking: false } })).body.result
      await waitForState(served.url, task.id, ["input-required"], 15_000)
      expect(await served.liveWorkers()).toBe(1)
      return task
    }

    const answered = await ask("one")
    const completed = await sendBlocking(served.url, a2aMessage("yes", { taskId: answered.id }))
    expect(completed.status.state).toBe("completed")
    expect(await served.liveWorkers()).toBe(0)

    const ignored = await ask("two")
    const failed = await waitForState(served.url, ignored.id, ["failed"], 5_000)
    // (the exact status text is the input-timeout test's business)
    expect(statusText(failed)).toContain("input-timeout")
    expect(await served.liveWorkers()).toBe(0)

    const dropped = await ask("three")
    const canceled = await rpc(served.url, "tasks/cancel", { id: dropped.id })
    expect(canceled.body.result.status.state).toBe("canceled")
    expect(await served.liveWorkers()).toBe(0)

    // Two at once: one runs, one waits in the queue (max one at a time); cancel both.
    const first = await ask("four")
    const queued = (await rpc(served.url, "message/send", { message: a2aMessage("five"), configuration: { blocking: false } })).body.result
    expect((await rpc(served.url, "tasks/get", { id: queued.id })).body.result.status.state).toBe("submitted")
    expect(await served.liveWorkers()).toBe(1)
    expect((await rpc(served.url, "tasks/cancel", { id: queued.id })).body.result.status.state).toBe("canceled")
    expect((await rpc(served.url, "tasks/cancel", { id: first.id })).body.result.status.state).toBe("canceled")
    expect(await served.liveWorkers()).toBe(0)
    expect(await served.runningTasks()).toBe(0)
  })

  it("ends a live run's worker when the session closes", async () => {
    const dir = await capsuleDir({ capsule: "capsule-spin-loop", capabilities: "  limits:\n    deadline_seconds: 120\n" })
    const served = await serveScript(dir, {})
    const task = (await rpc(served.url, "message/send", { message: a2aMessage("spin"), configuration: { blocking: false } })).body.result
    await waitFor("the guest's worker", async () => (await served.liveWorkers()) === 1, 10_000)
    expect((await rpc(served.url, "tasks/get", { id: task.id })).body.result.status.state).toBe("working")
    await served.close()
    expect(await served.liveWorkers()).toBe(0)
  })

  it("fails the task of a guest that traps with the reference's trap text", async () => {
    const dir = await capsuleDir({ capsule: "capsule-trap" })
    const served = await serveScript(dir, {})
    const { events } = await stream(served.url, "message/stream", { message: referenceMessage("trap") })
    const all = await readUntil(events, undefined, 10_000)
    const last = dataOf(all.at(-1)!)
    expect(last.status.state).toBe("failed")
    expect(last.final).toBe(true)
    expect(last.status.message).toMatch(/^capsule execution trapped: \S/)
    const task = await sendBlocking(served.url, a2aMessage("trap again"))
    expect(task.status.state).toBe("failed")
    expect(statusText(task)).toMatch(/^capsule execution trapped: \S/)
    expect(existsSync(join(served.workdir, "out", "result.txt"))).toBe(false)
    // The guest's stderr went to the session's log, not the host's fds.
    expect(readFileSync(join(served.workdir, "logs", "guest.log"), "utf8")).toContain("about to trap\n")
    expect(await served.liveWorkers()).toBe(0)
  })
})

// =============================================================================================
// Through the CLI
// =============================================================================================



describe("serve <dir> --json (CLI)", () => {
  it("prints the listening line, serves a task end to end, and exits 0 on SIGTERM", async () => {
    const dir = await capsuleDir(callsTool("echo-tool"))
    const served = await serveCli(dir, { TOOL_NAME: "echo-tool", TOOL_DATA: "hello from the cli" }, cleanups)
    const { listening } = served
    expect(Object.keys(listening).sort()).toEqual(["event", "records", "session_id", "url", "workdir"])
    expect(listening.event).toBe("listening")
    expect(listening.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    expect(listening.session_id).toMatch(/^ses_[0-9a-f]{32}$/)
    expect(dirname(listening.workdir)).toBe(join(dir, "workdir"))
    expect(basename(listening.workdir)).toMatch(/^ses_[0-9a-f]{32}$/)
    expect(existsSync(listening.workdir)).toBe(true)

    const task = await sendBlocking(listening.url, a2aMessage("say hello"))
    expect(task).toMatchObject({ kind: "task", status: { state: "completed" } })
    expect(statusText(task)).toBe("hello from the cli")
    expect(resultFile(listening.workdir)).toBe("hello from the cli")
    expect(readFileSync(join(listening.workdir, "task.md"), "utf8")).toBe("say hello")

    served.child.kill("SIGTERM")
    const exit = await served.exited
    expect(exit).toEqual({ code: 0, signal: null })
    expect(served.stdout().trim().split("\n")).toHaveLength(1)
  })

  it("names the default workdir after the session id it announces", async () => {
    const dir = await capsuleDir(callsTool("echo-tool"))
    const served = await serveCli(dir, { TOOL_NAME: "echo-tool", TOOL_DATA: "x" }, cleanups)
    const card = await (await fetch(new URL(".well-known/agent-card.json", served.listening.url))).json()
    expect(JSON.stringify(card)).toContain(served.listening.session_id)
    expect(served.listening.workdir).toBe(join(dir, "workdir", served.listening.session_id))
    served.child.kill("SIGTERM")
    expect(await served.exited).toEqual({ code: 0, signal: null })
  })

  it("applies lifecycle.input_timeout_secs from murmur.yaml, and SIGTERM during a waiting task still exits 0", async () => {
    const dir = await capsuleDir({ ...callsTool("request-input-tool"), extra: "lifecycle:\n  input_timeout_secs: 1\n" })
    const served = await serveCli(dir, { TOOL_NAME: "request-input-tool", TOOL_DATA: "Pick A or B?" }, cleanups)
    const { url } = served.listening
    const timedOut = (await rpc(url, "message/send", { message: a2aMessage("choose") })).body.result
    const asked = await waitForState(url, timedOut.id, ["input-required"], 15_000)
    expect(statusText(asked)).toBe("Pick A or B?")
    const failed = await waitForState(url, timedOut.id, ["failed"], 5_000)
    // Failed by the manifest's 1 s timeout (the exact status text is the in-process input-timeout test's business).
    expect(statusText(failed)).toContain("input-timeout")

    const pending = (await rpc(url, "message/send", { message: a2aMessage("choose again") })).body.result
    await waitForState(url, pending.id, ["input-required"], 15_000)
    served.child.kill("SIGTERM")
    expect(await served.exited).toEqual({ code: 0, signal: null })
  })
})
