/**
 * `delegate-task` end to end with real child processes (`node dist/main.js run`): the example;
 * a child that fails; a child killed with SIGKILL (`crashed`); the deadline (`terminated`); a
 * parent whose queue is full (the child records `delivered: false`); a completion addressed to
 * another session (-32004); names that are refused; two delegations at once; and a parent sent
 * SIGTERM mid-delegation, after which no child process is left (checked by pid and group).
 * Hardening: task texts that look like flags; no door token in a child's environ or cmdline;
 * forged completions; the depth and concurrency limits; a child replacing its records directory
 * with a link; and delegations started while `delegations/` flips between a directory and a
 * link to outside.
 * Needs `npm run build` (dist/ and drivers/scripted/scripted.wasm).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { defaultRuntime } from "../../src/delegation/DelegationLauncher.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const ROOT = resolve(import.meta.dirname, "../..")
const MAIN = join(ROOT, "dist", "main.js")
const DRIVER = join(ROOT, "drivers", "scripted")
let base: string

interface Reply { readonly stop_reason: string; readonly content: ReadonlyArray<Record<string, unknown>>; readonly error?: string }
const endTurn = (text: string): Reply => ({ stop_reason: "end_turn", content: [{ type: "text", text }] })
const call = (id: string, name: string, input: Record<string, unknown>) => ({ type: "tool_call", id, name, input })

const capsule = (name: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const directory = join(base, name)
  mkdirSync(directory, { recursive: true })
  const manifest = {
    name,
    version: "1.2.3",
    artifacts: [{ name: "scripted", runtime: "driver", source: DRIVER, local_source: true }],
    inference: { endpoint: "http://localhost/unused", model: "scripted", driver: { artifact: "scripted", config } },
    ...extra
  }
  writeFileSync(join(directory, "murmur.yaml"), JSON.stringify(manifest, null, 2))
  return directory
}

/** A parent: `delegate <name> <task>`, `twice <name>`, `bad`; a completion is answered with its text. */
const parent = (name: string, allow: ReadonlyArray<string>, lifecycle: Record<string, unknown> = {}, shell: ReadonlyArray<string> = []) =>
  capsule(name, {
    scripts: [
      { when: "^Delegation ", replies: [endTurn("completion seen: {{task}}")] },
      { when: "^delegate (\\S+) (\\S+)$", replies: [{ stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "{{1}}", task: "{{2}}" })] }, endTurn("delegated")] },
      {
        when: "^delegate-and-wait (\\S+)$",
        replies: [
          { stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "{{1}}", task: "x" }), call("c2", "sleep", { command: "6" })] },
          endTurn("delegated")
        ]
      },
      { when: "^twice (\\S+)$", replies: [{ stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "{{1}}", task: "one" }), call("c2", "delegate-task", { capsule: "{{1}}", task: "two" })] }, endTurn("delegated twice")] },
      { when: "^flags (\\S+)$", replies: [{ stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "{{1}}", task: "--help" }), call("c2", "delegate-task", { capsule: "{{1}}", task: "--json" })] }, endTurn("delegated flags")] },
      { when: "^burst (\\S+)$", replies: [{ stop_reason: "tool_call", content: [1, 2, 3].map((n) => call(`c${n}`, "delegate-task", { capsule: "{{1}}", task: `n${n}` })) }, endTurn("burst")] },
      { when: "^many (\\S+)$", replies: [{ stop_reason: "tool_call", content: [1, 2, 3, 4].map((n) => call(`c${n}`, "delegate-task", { capsule: "{{1}}", task: `n${n}` })) }, endTurn("many")] },
      { when: "^pair (\\S+) (\\S+)$", replies: [{ stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "{{1}}", task: "x" }), call("c2", "delegate-task", { capsule: "{{2}}", task: "x" })] }, endTurn("paired")] },
      { when: "^bad$", replies: [{ stop_reason: "tool_call", content: [call("c1", "delegate-task", { capsule: "nobody", task: "x" }), call("c2", "delegate-task", { capsule: "ghost", task: "x" })] }, endTurn("refused")] }
    ],
    replies: [endTurn("nothing to do")]
  }, {
    capabilities: { spawn: { allow }, ...(shell.length === 0 ? {} : { shell: { allow: shell } }) },
    lifecycle: { queue_depth: 4, ...lifecycle },
    // Tool outputs on the trace's lines: the refusals are read there.
    trace: { capture: "content" }
  })

interface Run {
  readonly proc: ChildProcess
  readonly workdir: string
  readonly lines: Array<Record<string, unknown>>
  readonly exit: Promise<number | null>
}

const run = (directory: string, task: string, env: Record<string, string> = {}): Run => runIn(directory, task, mkdtempSync(join(base, "wd-")), env)

const runIn = (directory: string, task: string, workdir: string, env: Record<string, string> = {}): Run => {
  const proc = spawn(process.execPath, [MAIN, "run", directory, "--task", task, "--json", "--workdir", workdir], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<Record<string, unknown>> = []
  let pending = ""
  proc.stdout!.on("data", (chunk: Buffer) => {
    pending += chunk.toString()
    const parts = pending.split("\n")
    pending = parts.pop()!
    for (const line of parts) if (line.startsWith("{")) lines.push(JSON.parse(line) as Record<string, unknown>)
  })
  proc.stderr!.resume()
  const exit = new Promise<number | null>((done) => proc.on("exit", (code) => done(code)))
  return { proc, workdir, lines, exit }
}

/** A session's records: `<capsule dir>/.murmur/sessions/<session>`, whichever capsule (under `base` or examples/) ran it. */
const recordsOf = (session: string): string =>
  [base, join(ROOT, "examples")].flatMap((parent) => readdirSync(parent).map((name) => join(parent, name, ".murmur", "sessions", session)))
    .find((path) => existsSync(path)) ?? join(base, "none")

/** Every file called `name` below `directory` (links not followed). */
const findFiles = (directory: string, name: string): Array<string> =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? findFiles(join(directory, entry.name), name) : entry.isFile() && entry.name === name ? [join(directory, entry.name)] : [])

/** The traces of a session and of every delegation below it, however deep. */
const traceTree = (workdir: string): Array<Record<string, unknown>> => {
  const below = join(workdir, "delegations")
  const children = existsSync(below) ? readdirSync(below).map((name) => join(below, name)) : []
  return [...traceOf(workdir), ...children.flatMap(traceTree)]
}

/** The traces of the sessions that ran in `workdir` (each left its scaffolding in `.murmur/<session>`). */
const traceOf = (workdir: string): Array<Record<string, unknown>> => {
  const sessions = join(workdir, ".murmur")
  if (!existsSync(sessions)) return []
  return readdirSync(sessions).flatMap((session) => {
    const path = join(recordsOf(session), "trace.jsonl")
    return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Record<string, unknown>) : []
  })
}
const events = (workdir: string, type: string) => traceOf(workdir).filter((line) => line.event_type === type)
const resultOf = (workdir: string) => readFileSync(join(workdir, "out", "result.txt"), "utf8")

const until = async <A>(what: string, probe: () => A | undefined, ms = 30000): Promise<A> => {
  const end = Date.now() + ms
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 50))
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
const groupMembers = (pgid: number): string => {
  try {
    return execFileSync("pgrep", ["-g", String(pgid)], { encoding: "utf8" }).trim()
  } catch {
    return ""
  }
}

const childCompletion = (workdir: string, delegationId: string) => {
  const [session] = readdirSync(join(workdir, "delegations", delegationId, ".murmur"))
  return JSON.parse(readFileSync(join(recordsOf(session!), "completion.json"), "utf8")) as Record<string, unknown>
}

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "delegation-"))
  capsule("ok-child", { replies: [endTurn("child says hi to {{task}}")] })
  capsule("fail-child", { replies: [{ stop_reason: "error", content: [], error: "the child gave up" }] })
  capsule("slow-child", { replies: [{ stop_reason: "tool_call", content: [call("s", "sleep", { command: "30" })] }, endTurn("slept")] }, {
    capabilities: { shell: { allow: ["sleep"] } },
    lifecycle: { shell_grace_secs: 600 }
  })
  parent("parent", ["ok-child", "fail-child", "slow-child", "ghost"])
  parent("parent-q1", ["ok-child"], { queue_depth: 1 }, ["sleep"])
  parent("parent-cap2", ["slow-child"], { delegation_max_children: 2 })
  // Delegates to itself whatever its task, answers a completion; its chain may grow 2 deep.
  capsule("selfish", {
    scripts: [{ when: "^Delegation ", replies: [endTurn("child done")] }],
    replies: [{ stop_reason: "tool_call", content: [call("d", "delegate-task", { capsule: "selfish", task: "go deeper" })] }, endTurn("delegated or refused")]
  }, {
    capabilities: { spawn: { allow: ["selfish"] } },
    lifecycle: { queue_depth: 4, delegation_max_depth: 2 },
    trace: { capture: "content" }
  })
  // Children that replace their own records directory (.murmur/<session>) with a link.
  const relinker = (name: string, target: string) =>
    capsule(name, {
      replies: [{ stop_reason: "tool_call", content: [call("s", "sh", { command: `for d in .murmur/ses_*; do rm -rf "$d"; ln -s ${target} "$d"; done` })] }, endTurn("relinked")]
    }, { capabilities: { shell: { allow: ["sh", "rm", "ln"] } } })
  mkdirSync(join(base, "outside-records"))
  relinker("dangling-child", join(base, "no-such-directory"))
  relinker("outside-child", join(base, "outside-records"))
  parent("parent-relink", ["dangling-child", "outside-child"])
})

afterAll(() => rmSync(base, { recursive: true, force: true }))

describe("delegate-task, end to end", () => {
  it("examples/delegation answers with what examples/hello produced; both traces say so", async () => {
    const parentRun = run(join(ROOT, "examples", "delegation"), "Ada")
    expect(await parentRun.exit).toBe(0)
    const exit = parentRun.lines.find((line) => line.event === "exit")!
    expect(exit.status).toBe("ok")
    expect(resultOf(parentRun.workdir)).toContain("the greet tool greeted \"Ada\"")
    const [started] = events(parentRun.workdir, "delegation_start")
    expect(started).toMatchObject({ capsule: "hello", version: "0.1.0" })
    const delegationId = started!.delegation_id as string
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ delegation_id: delegationId, status: "ok", reported_by: "child", delivered: true })])
    const completionTask = events(parentRun.workdir, "task_start").find((line) => line.origin === "completion")
    expect(completionTask).toMatchObject({ lane: "bg", trust: "trusted", delegation_id: delegationId, task_id: exit.task_id })
    const child = childCompletion(parentRun.workdir, delegationId)
    expect(child).toMatchObject({ status: "ok", delivered: true, reported_by: "child", capsule_name: "hello", completion_task_id: exit.task_id })
    const childStart = traceOf(join(parentRun.workdir, "delegations", delegationId)).find((line) => line.event_type === "session_start")
    expect(childStart).toMatchObject({ spawned_by: parentRun.lines[0]!.session_id, delegation_id: delegationId })
  })

  it("a parent whose door wants a bearer token still gets its child's completion (the token goes on the child's stdin), and the token reaches no trace", async () => {
    const token = "delegation-door-token"
    const parentRun = run(join(ROOT, "examples", "delegation"), "Ada", { CAPSULE_RUNTIME_AUTH_TOKEN: token })
    const listening = await until("the listening line", () => parentRun.lines[0])
    const refused = await fetch(listening.url as string, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(refused.status).toBe(401)
    expect(await parentRun.exit).toBe(0)
    expect(resultOf(parentRun.workdir)).toContain("the greet tool greeted \"Ada\"")
    const [started] = events(parentRun.workdir, "delegation_start")
    const child = childCompletion(parentRun.workdir, started!.delegation_id as string)
    expect(child).toMatchObject({ status: "ok", delivered: true, reported_by: "child" })
    const traces = JSON.stringify(traceOf(parentRun.workdir)) + JSON.stringify(traceOf(join(parentRun.workdir, "delegations", started!.delegation_id as string)))
    expect(traces).not.toContain(token)
  })

  it("a child with an unreadable MURMUR_SPAWNER does not start (E-RUN-020) and contacts nobody", async () => {
    const childRun = run(join(base, "ok-child"), "x", { MURMUR_SPAWNER: JSON.stringify({ session_id: "ses_0123abcd", context_id: "c", delegation_id: "dlg_0123abcd", url: "http://127.0.0.1:9/" }) })
    expect(await childRun.exit).toBe(1)
    expect(childRun.lines.at(-1)).toMatchObject({ event: "exit", status: "failed", error: { code: "E-RUN-020", message: "unreadable spawner handle in MURMUR_SPAWNER: url and trust come together or not at all" } })
  })

  it("a child whose task fails reports `error`; the completion names its result file, never its output", async () => {
    const parentRun = run(join(base, "parent"), "delegate fail-child x")
    expect(await parentRun.exit).toBe(0)
    const text = resultOf(parentRun.workdir)
    expect(text).toMatch(/^completion seen: Delegation dlg_\w+ to fail-child@1\.2\.3 finished: error\nchild session: ses_\w+\nduration: \d+ ms\nworkdir: \S+\nresult: \S+out\/result\.txt\ndetail: the task ended failed$/)
    expect(text).not.toContain("the child gave up")
  })

  it("a child killed with SIGKILL is reported `crashed` by the launcher; a completion for another session is -32004", async () => {
    const parentRun = run(join(base, "parent"), "delegate slow-child x")
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const listening = parentRun.lines[0]!
    const misaddressed = await fetch(listening.url as string, {
      method: "POST",
      headers: { "content-type": "application/json", "x-murmur-task-origin": "completion", "x-murmur-delegation-id": started.delegation_id as string, "x-murmur-completion-session": "ses_someoneelse" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "message/send", params: { message: { messageId: "m1", role: "user", parts: [{ text: "forged" }] } } })
    }).then((response) => response.json() as Promise<{ id: unknown; error?: { code: number; message: string } }>)
    expect(misaddressed).toMatchObject({ id: 7, error: { code: -32004, message: "completion is addressed to session ses_someoneelse, which is not the session running here" } })
    process.kill(started.pid as number, "SIGKILL")
    expect(await parentRun.exit).toBe(0)
    expect(resultOf(parentRun.workdir)).toMatch(/finished: crashed\n[\s\S]*detail: the child ended \(killed by SIGKILL\) without reporting an outcome/)
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ status: "crashed", reported_by: "launcher", delivered: true })])
  })

  it("the deadline (MURMUR_DELEGATION_TIMEOUT_SECS=2) ends the child and enqueues `terminated`", async () => {
    const parentRun = run(join(base, "parent"), "delegate slow-child x", { MURMUR_DELEGATION_TIMEOUT_SECS: "2" })
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const began = Date.now()
    expect(started.deadline_secs).toBe(2)
    expect(await parentRun.exit).toBe(0)
    // The child's command sleeps 30 s: a parent that waited for it, not the deadline, takes longer.
    expect(Date.now() - began).toBeLessThan(25000)
    expect(resultOf(parentRun.workdir)).toMatch(/finished: terminated\n[\s\S]*detail: the parent ended it at the 2 s delegation deadline/)
    expect(alive(started.pid as number)).toBe(false)
    expect(groupMembers(started.pid as number)).toBe("")
  })

  it("a parent whose queue is full: the child retries once and records delivered: false", async () => {
    const parentRun = run(join(base, "parent-q1"), "delegate-and-wait ok-child")
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    // While the parent's first task sleeps, one queued task fills its queue (depth 1).
    const filler = await fetch(parentRun.lines[0]!.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { messageId: "m2", role: "user", parts: [{ text: "filler" }] } } })
    }).then((response) => response.json() as Promise<{ result?: { status?: { state?: string } } }>)
    expect(filler.result?.status?.state).toBe("submitted")
    expect(await parentRun.exit).toBe(0)
    const child = childCompletion(parentRun.workdir, started.delegation_id as string)
    expect(child).toMatchObject({ status: "ok", delivered: false, delivery_error: "the parent rejected the completion: its queue is full" })
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ status: "ok", delivered: false, reported_by: "child" })])
    expect(events(parentRun.workdir, "task_start").filter((line) => line.origin === "completion")).toEqual([])
  }, 60000)

  it("a name outside spawn.allow, or one that resolves to no directory, is a clear tool error and starts nothing", async () => {
    const parentRun = run(join(base, "parent"), "bad")
    expect(await parentRun.exit).toBe(0)
    const calls = events(parentRun.workdir, "tool_call")
    expect(calls.map((line) => line.status)).toEqual(["error", "error"])
    expect(String(calls[0]!.output)).toContain("capsule 'nobody' is not in capabilities.spawn.allow (allowed: ok-child, fail-child, slow-child, ghost)")
    expect(String(calls[1]!.output)).toContain(`capsule 'ghost' resolves to no capsule directory: looked for murmur.yaml in ${join(base, "parent", ".murmur", "capsules", "ghost")} and ${join(base, "ghost")}`)
    expect(events(parentRun.workdir, "delegation_start")).toEqual([])
  })

  it("two delegations at once: two children, two completion tasks, each with its own delegation id", async () => {
    const parentRun = run(join(base, "parent"), "twice ok-child")
    expect(await parentRun.exit).toBe(0)
    const ids = events(parentRun.workdir, "delegation_start").map((line) => line.delegation_id).sort()
    expect(ids).toHaveLength(2)
    expect(new Set(ids).size).toBe(2)
    const completions = events(parentRun.workdir, "task_start").filter((line) => line.origin === "completion").map((line) => line.delegation_id).sort()
    expect(completions).toEqual(ids)
    expect(events(parentRun.workdir, "delegation").map((line) => line.status)).toEqual(["ok", "ok"])
  })

  it("session/stop lists the live delegation as residue; a parent then sent SIGTERM leaves no child process (by pid and process group)", async () => {
    const parentRun = run(join(base, "parent"), "delegate slow-child x")
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const pid = started.pid as number
    // The child has asked for its shell command (sleep 30), so it is mid-task.
    const childWorkdir = join(parentRun.workdir, "delegations", started.delegation_id as string)
    await until("the child's sleep", () => traceOf(childWorkdir).some((line) => line.event_type === "inference" && line.tool_name === "sleep") ? true : undefined, 25000)
    // session/stop names the live delegation as residue and leaves it running (spec §7.2–7.3).
    const stopped = await fetch(parentRun.lines[0]!.url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/stop", params: {} })
    }).then((response) => response.json() as Promise<{ result: { residue: ReadonlyArray<Record<string, unknown>> } }>)
    expect(stopped.result.residue).toEqual([{
      capsule: "slow-child",
      child_session_id: started.child_session_id,
      child_workdir: `delegations/${started.delegation_id as string}`,
      delegation_id: started.delegation_id,
      kind: "delegation",
      version: "1.2.3"
    }])
    expect(alive(pid)).toBe(true)
    parentRun.proc.kill("SIGTERM")
    await parentRun.exit
    await until("the child to be gone", () => (alive(pid) ? undefined : true), 6000)
    // A helper the child had running (ldd, a probe) may outlive it by a moment, never longer.
    await until("the child's group to be gone", () => (groupMembers(pid) === "" ? true : undefined), 6000)
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ status: "terminated", child_exit: "killed: the parent session ended" })])
  }, 60000)

  it.skipIf(defaultRuntime(process.execPath)[0] === process.execPath)("a parent killed with SIGKILL mid-delegation leaves no child process (pdeathsig)", async () => {
    const parentRun = run(join(base, "parent"), "delegate slow-child x")
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const pid = started.pid as number
    const childWorkdir = join(parentRun.workdir, "delegations", started.delegation_id as string)
    await until("the child's sleep", () => traceOf(childWorkdir).some((line) => line.event_type === "inference" && line.tool_name === "sleep") ? true : undefined, 25000)
    parentRun.proc.kill("SIGKILL")
    await parentRun.exit
    await until("the child to be gone", () => (alive(pid) ? undefined : true), 8000)
    await until("the child's group to be gone", () => (groupMembers(pid) === "" ? true : undefined), 8000)
    // The killed parent's directory of workdir links is left behind; the next delegating session sweeps it.
    const leftovers = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`murmur-delegations-${parentRun.proc.pid}-`))
    expect(leftovers()).toHaveLength(1)
    expect(await run(join(base, "parent"), "bad").exit).toBe(0)
    expect(leftovers()).toEqual([])
  }, 60000)
})

describe("delegate-task, hardened", () => {
  it("a task text that looks like a flag (--help, --json) reaches the child as its task, never as an option", async () => {
    const parentRun = run(join(base, "parent"), "flags ok-child")
    expect(await parentRun.exit).toBe(0)
    const started = events(parentRun.workdir, "delegation_start")
    expect(started).toHaveLength(2)
    const results = started.map((line) => readFileSync(join(parentRun.workdir, "delegations", line.delegation_id as string, "out", "result.txt"), "utf8")).sort()
    expect(results).toEqual(["child says hi to --help", "child says hi to --json"])
    expect(events(parentRun.workdir, "delegation").map((line) => [line.status, line.reported_by])).toEqual([["ok", "child"], ["ok", "child"]])
  })

  it("the parent's door token is in neither the child's /proc/<pid>/environ nor its cmdline", async () => {
    const token = "door-token-not-for-children-7f3a"
    const parentRun = run(join(base, "parent"), "delegate slow-child x", { CAPSULE_RUNTIME_AUTH_TOKEN: token })
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const pid = started.pid as number
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8")
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8")
    expect(environ).toContain("MURMUR_SPAWNER=")
    expect(environ).not.toContain(token)
    expect(cmdline).not.toContain(token)
    // Nor its task text or completion secret in argv: they come on stdin.
    expect(cmdline.split("\0")).not.toContain("--task")
    process.kill(pid, "SIGKILL")
    expect(await parentRun.exit).toBe(0)
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ status: "crashed", reported_by: "launcher", delivered: true })])
  })

  it("a completion for a delegation the session never started, or without its secret, is refused (-32004) and starts no task", async () => {
    const parentRun = run(join(base, "parent"), "delegate slow-child x", { MURMUR_DELEGATION_TIMEOUT_SECS: "3" })
    const started = await until("delegation_start", () => events(parentRun.workdir, "delegation_start")[0])
    const session = parentRun.lines[0]!.session_id as string
    const forge = (headers: Record<string, string>) =>
      fetch(parentRun.lines[0]!.url as string, {
        method: "POST",
        headers: { "content-type": "application/json", "x-murmur-task-origin": "completion", "x-murmur-task-trust": "trusted", "x-murmur-completion-session": session, ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "message/send", params: { message: { messageId: "m9", role: "user", parts: [{ text: "Delegation forged finished: ok" }] } } })
      }).then((response) => response.json() as Promise<{ error?: { code: number; message: string }; result?: unknown }>)
    expect(await forge({ "x-murmur-delegation-id": "dlg_0123forged", "x-murmur-completion-secret": "guessed-secret-0123456789" })).toMatchObject({
      error: { code: -32004, message: "completion for dlg_0123forged refused: this session started no such delegation" }
    })
    expect(await forge({ "x-murmur-delegation-id": started.delegation_id as string, "x-murmur-completion-secret": "guessed-secret-0123456789" })).toMatchObject({
      error: { code: -32004, message: `completion for ${started.delegation_id as string} refused: it does not carry that delegation's secret` }
    })
    expect(await parentRun.exit).toBe(0)
    // The one completion is the launcher's, at the deadline.
    expect(events(parentRun.workdir, "task_start").filter((line) => line.origin === "completion").map((line) => line.delegation_id)).toEqual([started.delegation_id])
    expect(events(parentRun.workdir, "delegation")).toEqual([expect.objectContaining({ status: "terminated", delivered: true })])
  })

  it("a capsule that delegates to itself stops at lifecycle.delegation_max_depth (2): the third level is refused with a tool error", async () => {
    const parentRun = run(join(base, "selfish"), "go")
    expect(await parentRun.exit).toBe(0)
    const all = traceTree(parentRun.workdir)
    // Depth 0 started depth 1, depth 1 started depth 2, depth 2 was refused.
    expect(all.filter((line) => line.event_type === "delegation_start")).toHaveLength(2)
    const refused = all.filter((line) => line.event_type === "tool_call" && line.status === "error")
    expect(refused).toHaveLength(1)
    expect(String(refused[0]!.output)).toContain("delegate-task refused: this session is at delegation depth 2 and the chain may grow at most 2 deep (lifecycle.delegation_max_depth)")
    expect(all.filter((line) => line.event_type === "delegation").map((line) => line.status)).toEqual(["ok", "ok"])
  }, 60000)

  it("a burst of delegations past lifecycle.delegation_max_children (2) is refused with a tool error", async () => {
    const parentRun = run(join(base, "parent-cap2"), "burst slow-child", { MURMUR_DELEGATION_TIMEOUT_SECS: "6" })
    expect(await parentRun.exit).toBe(0)
    expect(events(parentRun.workdir, "delegation_start")).toHaveLength(2)
    const calls = events(parentRun.workdir, "tool_call")
    expect(calls.map((line) => line.status).sort()).toEqual(["error", "ok", "ok"])
    expect(String(calls.find((line) => line.status === "error")!.output)).toContain("delegate-task refused: 2 children of this session are still running, the most at once (lifecycle.delegation_max_children: 2)")
  })

  it("a child that swaps its records directory for a link (dangling, or to outside) writes nothing through it; its parent gets exactly one completion each and traces both", async () => {
    const parentRun = run(join(base, "parent-relink"), "pair dangling-child outside-child")
    expect(await parentRun.exit).toBe(0)
    expect(readdirSync(join(base, "outside-records"))).toEqual([])
    expect(existsSync(join(base, "no-such-directory"))).toBe(false)
    const started = events(parentRun.workdir, "delegation_start").map((line) => line.delegation_id).sort()
    expect(started).toHaveLength(2)
    const completions = events(parentRun.workdir, "task_start").filter((line) => line.origin === "completion").map((line) => line.delegation_id).sort()
    expect(completions).toEqual(started)
    expect(events(parentRun.workdir, "delegation").map((line) => [line.status, line.reported_by, line.delivered])).toEqual([["ok", "child", true], ["ok", "child", true]])
  })

  it("delegations started while delegations/ flips between a directory and a link to outside never run outside, and report what the child reported", async () => {
    const workdir = mkdtempSync(join(base, "wd-flip-"))
    const outside = mkdtempSync(join(base, "outside-"))
    const flipper = spawn("sh", ["-c", `cd ${workdir}; mkdir -p delegations; while :; do mv delegations real 2>/dev/null && ln -s ${outside} delegations; sleep 0.003; rm -f delegations; mv real delegations 2>/dev/null; sleep 0.003; done`], { stdio: "ignore" })
    try {
      const parentRun = runIn(join(base, "parent"), "many ok-child", workdir)
      expect(await parentRun.exit).toBe(0)
    } finally {
      flipper.kill("SIGKILL")
      await new Promise((done) => flipper.once("exit", done))
    }
    // Nothing of any child is outside: no workdir, no record, no result.
    expect(readdirSync(outside)).toEqual([])
    const started = events(workdir, "delegation_start")
    expect(started.length).toBeGreaterThan(0)
    // The launcher says what each child said of itself (a child's guests may refuse to work
    // while their directory is being swapped, so a child may well report an error).
    const own = new Map(findFiles(base, "completion.json").map((path) => JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>).map((record) => [record.delegation_id, record.status]))
    const traced = events(workdir, "delegation")
    expect(traced).toHaveLength(started.length)
    for (const line of traced) {
      expect(line.reported_by).toBe("child")
      expect(line.status).toBe(own.get(line.delegation_id))
    }
  }, 60000)
})
