/**
 * The hook runtime through real sessions (`run`, after `npm run build`): the scripted driver,
 * real tools and shell commands, and the `hook-probe` component in real workers under each
 * contract. Checks the order of the lifecycle calls, the commit policies (`deny`, `reopen-task`,
 * `seed-context`, `artifact` at on-inference, `write-manifests` at on-stage), the hook imports
 * (task-io, conversation, tokens, run-inference) and that a hook that fails, traps, hangs or
 * answers too much fails alone.
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, driverRequest, endTurn, frames, ofType, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, runCli, serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage } from "../lib/Door.js"
import { dataOf, type NodeStream, nodeStream, readUntil } from "../lib/DoorKit.js"
import { hookCalls, hookedCapsule } from "./HookCapsule.js"
import { Either } from "effect"
import { hookContract } from "../../src/hooks/HookEntry.js"

const dirs: Array<string> = []
const cleanups: Array<() => Promise<void> | void> = []
const streams: Array<NodeStream> = []
afterAll(async () => {
  for (const stream of streams.splice(0)) stream.destroy()
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Serves the capsule and streams one task: its frames up to the final status. */
const streamed = async (dir: string, text: string) => {
  dirs.push(dir)
  const served = await serveCli(dir, {}, cleanups)
  const stream = await nodeStream(served.listening.url, "message/stream", { message: referenceMessage(text) })
  streams.push(stream)
  const events = await readUntil(stream.events, (event: { event?: string; data?: string }) => event.event === "status" && dataOf(event).final === true, 60_000)
  return { served, frames: frames(events), trace: () => traceLines(served.listening.records) }
}

const shellTask = { replies: [toolTurn(call("c1", "echo", { command: "hi" })), endTurn("done")] }
const echoCapsule = { capabilities: "  shell:\n    allow: [echo]\n" }

const run = async (dir: string, task = "the task") => {
  dirs.push(dir)
  const result = await runCli(["run", dir, "--task", task, "--json"], {}, 90_000)
  const exit = exitEvent(result)
  return { result, exit, workdir: exit.workdir as string, trace: traceLines(exit.records) }
}

describe("hook lifecycle", () => {
  it("calls a hook bound to everything in the reference's order, on-stage too when bound", async () => {
    const dir = await hookedCapsule({ driverConfig: shellTask, ...echoCapsule }, [
      { name: "stager", binding: "on-stage", log: true },
      { name: "watcher", log: true }
    ])
    const { result, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    expect(hookCalls(workdir)).toEqual([
      "on-stage",
      "on-session-start",
      "on-task-start",
      "on-inference",
      "on-tool-call",
      "on-shell",
      "on-inference",
      "on-task-end",
      "on-session-end"
    ])
    expect(result.stderr).not.toContain("runtime: hook")
  }, 120_000)

  it("a deny hook on on-shell refuses the command: the model reads why, call_denied is traced, nothing ran", async () => {
    const dir = await hookedCapsule({ driverConfig: shellTask, ...echoCapsule }, [
      { name: "guard", binding: "on-shell", policy: "deny", config: { answers: { "on-shell": { tag: "deny", val: "no echo today" } } } }
    ])
    const { result, trace, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    const tool = driverRequest(workdir, 2).messages.find((m: { role: string }) => m.role === "tool")
    expect(tool.is_error).toBe(true)
    expect(tool.content[0].text).toContain("call denied by hook 'guard': no echo today")
    expect(ofType(trace, "call_denied")).toEqual([expect.objectContaining({ tool_name: "echo", hook_name: "guard", reason: "no echo today" })])
    expect(ofType(trace, "shell")).toEqual([])
    expect(ofType(trace, "tool_call")).toEqual([])
  }, 120_000)

  it("a deny hook that traps refuses the call (fail-closed)", async () => {
    const dir = await hookedCapsule({ driverConfig: shellTask, ...echoCapsule }, [
      { name: "guard", binding: "on-tool-call", policy: "deny", config: { trap: ["on-tool-call"] } }
    ])
    const { result, trace } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    expect(ofType(trace, "call_denied")).toHaveLength(1)
    expect(ofType(trace, "hook_dispatch_error")).toEqual([expect.objectContaining({ hook_name: "guard", event: "on-tool-call", arm: "error" })])
    expect(ofType(trace, "shell")).toEqual([])
  }, 120_000)

  it("a reopen-task sends the task back once with the reason as a non-final frame; the budget stops a second", async () => {
    const dir = await hookedCapsule({ driverConfig: { replies: [endTurn("first answer"), endTurn("second answer")] } }, [
      { name: "verifier", binding: "on-task-end", policy: "reopen-task", config: { answers: { "on-task-end": { tag: "reopen-task", val: "cite a source" } } } }
    ])
    const { frames: seen, served, trace } = await streamed(dir, "the task")
    const statuses = seen.filter((frame) => frame.event === "status").map((frame) => [frame.data.status.state, frame.data.final])
    expect(statuses).toContainEqual(["working", false])
    expect(seen.some((frame) => frame.event === "status" && JSON.stringify(frame.data).includes("task reopened (1 of 1) by verifier: cite a source"))).toBe(true)
    expect(seen.filter((frame) => frame.event === "status" && frame.data.final === true).map((frame) => frame.data.status.state)).toEqual(["failed"])
    const workdir = served.listening.workdir
    expect(readFileSync(join(workdir, "task.md"), "utf8")).toContain("## Reopen feedback\n\n- verifier: cite a source")
    expect(readFileSync(join(workdir, "driver-calls.log"), "utf8")).toBe("call 1\ncall 2\n")
    expect(JSON.stringify(driverRequest(workdir, 2).messages.at(-1))).toContain("cite a source")
    const lines = trace()
    expect(ofType(lines, "task_reopened")).toEqual([expect.objectContaining({ hook_name: "verifier", reason: "cite a source", reopen_number: 1 })])
    expect(ofType(lines, "reopen_budget_exhausted")).toHaveLength(1)
    expect(ofType(lines, "task_end")).toEqual([expect.objectContaining({ exit_status: "reopen_budget_exhausted", reopen_count: 1, turns: 2 })])
  }, 120_000)

  it("seeds what on-task-start returns before the task, within the seed budget", async () => {
    const seed = (text: string) => ({ role: "user", content: text })
    const dir = await hookedCapsule({
      driverConfig: { replies: [endTurn("ok")] },
      extra: "context:\n  max_tokens: 2000\n  seed_budget: 0.05\n  seed_overflow_margin: 0\n"
    }, [
      { name: "memory", binding: "on-task-start", policy: "seed-context", config: { answers: { "on-task-start": { tag: "seed-context", val: [seed("remember: blue"), seed("x ".repeat(400))] } } } }
    ])
    const { result, trace, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    const sent = driverRequest(workdir, 1).messages
    expect(sent.map((m: { content: Array<{ text: string }> }) => m.content[0]!.text)).toEqual(["remember: blue", "the task"])
    expect(ofType(trace, "context_seed")).toEqual([expect.objectContaining({ hook_name: "memory", messages: 1, dropped_messages: 1, budget_tokens: 100 })])
    expect(ofType(trace, "hook_dispatch_error")).toEqual([expect.objectContaining({ arm: "seed-rejected" })])
  }, 120_000)

  it("a hook that errs, traps, hangs or answers 2 MiB fails alone: traced, logged, the task completes", async () => {
    const dir = await hookedCapsule({
      driverConfig: { replies: [endTurn("fine")] },
      capabilities: "  limits:\n    deadline_seconds: 2\n"
    }, [
      { name: "errs", binding: "on-task-start", config: { err: { "on-task-start": "bad day" } } },
      { name: "traps", binding: "on-inference", config: { trap: ["on-inference"] } },
      { name: "hangs", binding: "on-task-end", config: { spin: ["on-task-end"] } },
      { name: "floods", binding: "on-inference", config: { big: ["on-inference"] } }
    ])
    const { result, trace, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    expect(ofType(trace, "task_end")).toEqual([expect.objectContaining({ exit_status: "ok" })])
    const faults = ofType(trace, "hook_dispatch_error").map((line) => [line.hook_name, line.event, line.arm])
    expect(faults).toEqual([
      ["errs", "on-task-start", "error"],
      ["traps", "on-inference", "error"],
      ["floods", "on-inference", "error"],
      ["hangs", "on-task-end", "timeout"]
    ])
    expect(readFileSync(join(workdir, "logs", "hook-errs.log"), "utf8")).toContain("bad day")
    expect(ofType(trace, "hook_dispatch_error").find((line) => line.hook_name === "floods")!.message).toContain("exceeds the 1048576-byte bound")
  }, 120_000)

  it("gives a granted hook the task's input and output, the conversation and token counts; an ungranted one not-granted", async () => {
    const dir = await hookedCapsule({ driverConfig: { replies: [endTurn("the answer")] } }, [
      { name: "reader", binding: "on-task-end", log: true, config: { probe: ["on-task-end"] }, capabilities: "      task_io:\n        read: true\n      conversation:\n        read: true\n" },
      { name: "blind", binding: "on-task-end", log: true, config: { probe: ["on-task-end"] } }
    ])
    const { result, workdir } = await run(dir, "what is it?")
    expect(result.code, result.stderr).toBe(0)
    expect(hookCalls(workdir)).toEqual([
      "on-task-end",
      "input \"what is it?\"",
      "original \"what is it?\"",
      "output \"the answer\"",
      "conversation []",
      "tokens 2",
      "on-task-end",
      "input err:not-granted",
      "original err:not-granted",
      "output err:not-granted",
      "conversation err:not-granted",
      "tokens 2"
    ])
  }, 120_000)

  it("run-inference goes through the capsule's driver, traced with the hook's origin", async () => {
    const dir = await hookedCapsule({ driverConfig: { replies: [endTurn("same reply")] } }, [
      { name: "judge", binding: "on-task-end", log: true, config: { infer: ["on-task-end"] } }
    ])
    const { result, trace, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    expect(hookCalls(workdir)).toEqual(["on-task-end", "infer \"same reply\""])
    expect(ofType(trace, "inference").map((line) => line.origin ?? "loop")).toEqual(["loop", "hook:judge"])
  }, 120_000)

  it("an on-inference artifact reaches the task; write-manifests at on-stage writes tools/<binary>/murmur.yaml", async () => {
    const manifest = "name: echo\nversion: 9.9.9\nruntime: tool\nimplementation: native\ndescription: hooked\n"
    const dir = await hookedCapsule({ driverConfig: { replies: [endTurn("ok")] }, ...echoCapsule }, [
      { name: "stager", binding: "on-stage", policy: "write-manifests", config: { answers: { "on-stage": { tag: "write-manifests", val: [{ binaryName: "echo", content: manifest }, { binaryName: "../x", content: manifest }] } } } },
      { name: "noter", binding: "on-inference", config: { answers: { "on-inference": { tag: "artifact", val: "a note" } } } }
    ])
    const { frames: seen, served, trace } = await streamed(dir, "the task")
    expect(seen.filter((frame) => frame.event === "artifact").map((frame) => frame.data.artifact)).toEqual([{ tool_name: "noter", content: "a note" }])
    expect(readFileSync(join(served.listening.workdir, "tools", "echo", "murmur.yaml"), "utf8")).toBe(manifest)
    expect(ofType(trace(), "hook_dispatch_error")).toEqual([expect.objectContaining({ hook_name: "stager", arm: "write-manifests" })])
  }, 120_000)

  it("refuses a contract the binding cannot honour, and async with a commit policy (at launch, E-RUN-002)", async () => {
    const manifest = (fields: Record<string, string>) => ({ name: "bad", version: "0.1.0", runtime: "hook", implementation: "wasm", packaging: "wasm", requiresFiles: [], tags: [], ...fields }) as never
    const refusal = (fields: Record<string, string>) => Either.match(hookContract("bad", manifest(fields)), { onLeft: (text) => text, onRight: () => "accepted" })
    expect(refusal({ binding: "on-inference", commitPolicy: "reopen-task" })).toBe("hook 'bad': commit_policy 'reopen-task' is not valid for binding 'on-inference'; binding 'on-inference' honors commit_policy 'none'")
    expect(refusal({ binding: "on-task-end", executionMode: "async", commitPolicy: "reopen-task" })).toMatch(/^async-with-commit not supported/)
    expect(refusal({ commitPolicy: "deny" })).toBe("hook 'bad': commit_policy 'deny' needs an explicit binding (on-shell or on-tool-call)")
    expect(refusal({ binding: "on-stage", executionMode: "async" })).toBe("on-stage hooks must be blocking; hook 'bad' is execution_mode: async")
    expect(refusal({ binding: "on-lunch" })).toMatch(/^hook 'bad': unknown binding 'on-lunch'/)
    expect(refusal({ binding: "on-shell", commitPolicy: "deny" })).toBe("accepted")
    // And at launch, through the binary.
    const dir = await hookedCapsule({ driverConfig: { replies: [endTurn("ok")] } }, [{ name: "bad", binding: "on-inference", policy: "reopen-task" }])
    dirs.push(dir)
    const result = await runCli(["run", dir, "--task", "t"], {}, 60_000)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("E-RUN-002")
    expect(result.stderr).toContain("commit_policy 'reopen-task' is not valid for binding 'on-inference'")
  }, 60_000)

  it("runs async hooks off the loop, in order, and drains them at the session's end", async () => {
    const dir = await hookedCapsule({ driverConfig: shellTask, ...echoCapsule }, [
      { name: "async", mode: "async", log: true }
    ])
    const { result, trace, workdir } = await run(dir)
    expect(result.code, result.stderr).toBe(0)
    expect(hookCalls(workdir)).toEqual(["on-session-start", "on-task-start", "on-inference", "on-tool-call", "on-shell", "on-inference", "on-task-end", "on-session-end"])
    expect(ofType(trace, "hook_dispatch_error")).toEqual([])
  }, 120_000)
})
