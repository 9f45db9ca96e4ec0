/**
 * The script capsule's `murmur:message/send` and `murmur:artifact-manager/manage` host imports
 * (sandbox spec §2.7, §2.8), end to end through `node dist/main.js run <dir> --json` with real
 * components in real workers. The peer of message/send is a real door (scripted capsule) on
 * 127.0.0.1 in this test process.
 */
import { appendFileSync, readFileSync } from "node:fs"
import { createServer as createHttpServer, type Server } from "node:http"
import { type AddressInfo, createServer } from "node:net"
import { basename, join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { textOf } from "../../src/services/Task.js"
import { exitEvent, makeCapsuleDir, runCli } from "../lib/CapsuleDirs.js"
import { type OpenDoor, openDoor } from "../lib/Door.js"

const result = (workdir: string) => readFileSync(join(workdir, "out", "result.txt"), "utf8")

const sendEnv = "  env:\n    allow: [PEER_URL, MESSAGE_TEXT]\n"
const networkAllow = (entry: string) => `  network:\n    allow: ["${entry}"]\n`

describe("run: murmur:message/send", () => {
  let door: OpenDoor
  let port: string
  let origin: string

  // A fresh peer per test: the scripted capsule leaves an echoed task in input-required, and the
  // door routes the next reference-dialect message without a task id to that task.
  beforeEach(async () => {
    door = await openDoor()
    port = new URL(door.url).port
    origin = `http://127.0.0.1:${port}`
  })

  afterEach(async () => {
    await door?.close()
  })

  /** How many tasks the peer door holds (queued, active or retained terminal). */
  const peerTasks = async () => (await door.run(door.registry.stats())).retained

  /** Runs capsule-send-message; answers the result line and the workdir. */
  const send = async (capabilities: string, peerUrl: string, text: string) => {
    const dir = await makeCapsuleDir({ capsule: "capsule-send-message", capabilities })
    const run = await runCli(["run", dir, "--json"], { PEER_URL: peerUrl, MESSAGE_TEXT: text })
    expect(run.code, run.stderr).toBe(0)
    const exit = exitEvent(run)
    expect(exit).toMatchObject({ event: "exit", status: "ok" })
    return result(exit.workdir)
  }

  /** The peer's task named by an `ok:<task>:<context>:<state>` line, after checking its shape. */
  const peerTask = async (line: string) => {
    const match = /^ok:(tsk_[0-9a-z]+):(ctx_[0-9a-z]+):submitted$/.exec(line)
    expect(match, line).not.toBeNull()
    const [, taskId, contextId] = match!
    const task = await door.run(door.registry.get(taskId!))
    expect(task.contextId).toBe(contextId)
    return task
  }

  it("allowed by the network grant: the peer gets a task stamped origin peer, trust untrusted", async () => {
    const text = "hello from a capsule"
    const line = await send(networkAllow(origin) + sendEnv, door.url, text)
    const task = await peerTask(line)
    expect(task.provenance).toMatchObject({ origin: "peer", trust: "untrusted" })
    expect(task.lane).toBe("peer")
    expect(task.history[0]!.messageId).toBe("capsule-send-message-1")
    expect(textOf(task.history[0]!)).toBe(text)
    expect(await peerTasks()).toBe(1)
  })

  it("without a network grant: the policy err, and the peer receives nothing", async () => {
    const line = await send(sendEnv, door.url, "must not arrive")
    expect(line).toBe(`err:network policy: '${door.url}' not in capabilities.network.allow`)
    expect(await peerTasks()).toBe(0)
  })

  it("a rule for another port does not allow the peer: no connection reaches it", async () => {
    // The target is a bare TCP server that counts connections; the rule names the door's port.
    const connections: Array<unknown> = []
    const target = createServer((socket) => {
      connections.push(socket)
      socket.destroy()
    })
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve))
    try {
      const peerUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`
      const line = await send(networkAllow(origin) + sendEnv, peerUrl, "must not arrive")
      expect(line).toBe(`err:network policy: '${peerUrl}' not in capabilities.network.allow`)
      expect(connections).toHaveLength(0)
      expect(await peerTasks()).toBe(0)
    } finally {
      await new Promise((resolve) => target.close(resolve))
    }
  })

  // The ceiling names A only. A answers with a redirect to B, which would accept the message as
  // a task; following it would deliver the guest's POST (or, after a 302, a GET) past the grant.
  it.each([307, 302])("a peer answering %i to another server: the policy err, and that server receives nothing", async (status) => {
    const listen = async (server: Server) => {
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return (server.address() as AddressInfo).port
    }
    const reachedB: Array<string> = []
    const b = createHttpServer((req, res) => {
      reachedB.push(`${req.method} ${req.url}`)
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { id: "tsk_b", contextId: "ctx_b", status: { state: "submitted" } } }))
    })
    const reachedA: Array<string> = []
    const location = `http://localhost:${await listen(b)}/stolen`
    const a = createHttpServer((req, res) => {
      reachedA.push(`${req.method} ${req.url}`)
      res.writeHead(status, { location }).end()
    })
    try {
      const peerUrl = `http://127.0.0.1:${await listen(a)}/redirect`
      const line = await send(networkAllow(`http://127.0.0.1:${(a.address() as AddressInfo).port}`) + sendEnv, peerUrl, "must not leave A")
      expect(line).toBe(`err:network policy: '${peerUrl}' answered a redirect (${status} to '${location}'); message/send does not follow redirects`)
      expect(reachedA).toEqual(["POST /redirect"])
      expect(reachedB).toEqual([])
    } finally {
      await Promise.all([a, b].map((server) => new Promise((resolve) => server.close(resolve))))
    }
  })

  it("a peer URL without a scheme is read as http:// and allowed by an http rule", async () => {
    const text = "no scheme on this one"
    const line = await send(networkAllow(origin) + sendEnv, `127.0.0.1:${port}`, text)
    const task = await peerTask(line)
    expect(task.provenance).toMatchObject({ origin: "peer", trust: "untrusted" })
    expect(textOf(task.history[0]!)).toBe(text)
    expect(await peerTasks()).toBe(1)
  })
})

describe("run: murmur:artifact-manager/manage", () => {
  it("list, describe, diagnostics answer the installed tools; search and remove are not implemented", async () => {
    const dir = await makeCapsuleDir({
      capsule: "capsule-manage",
      tools: { "echo-tool": "echo-tool", "chunks-tool": "chunks-tool" }
    })
    // The artifact's own murmur.yaml carries what `describe` answers (schemas come back as JSON).
    appendFileSync(
      join(dir, ".murmur", "artifacts", "echo-tool", "0.1.0", "murmur.yaml"),
      "tags: [echo, fixture]\ninput_schema:\n  type: object\n"
    )
    const run = await runCli(["run", dir, "--json"])
    expect(run.code, run.stderr).toBe(0)
    const exit = exitEvent(run)
    expect(exit).toMatchObject({ event: "exit", status: "ok" })
    const lines = result(exit.workdir).split("\n")
    expect(lines).toHaveLength(6)
    const installed = [
      { name: "echo-tool", version: "0.1.0", runtime: "wasm" },
      { name: "chunks-tool", version: "0.1.0", runtime: "wasm" }
    ]
    expect(JSON.parse(lines[0]!)).toEqual(installed)
    expect(JSON.parse(lines[1]!)).toEqual({
      name: "echo-tool",
      version: "0.1.0",
      description: "the echo-tool fixture",
      tags: ["echo", "fixture"],
      runtime: "wasm",
      inputSchema: JSON.stringify({ type: "object" }),
      outputSchema: null
    })
    expect(lines[2]).toBe("err:artifact 'nope' is not installed")
    expect(lines[3]).toBe("err:not implemented (query: x)")
    expect(lines[4]).toBe("err:not implemented (name: x)")
    const diagnostics = JSON.parse(lines[5]!)
    expect(diagnostics).toEqual({
      capsuleId: expect.stringMatching(/^ses_[0-9a-z]+$/),
      installed,
      capabilities: "artifact-manager/search and remove are not implemented"
    })
    // The default workdir is <dir>/workdir/<session id>: the capsule id is this run's session.
    expect(diagnostics.capsuleId).toBe(basename(exit.workdir))
  })
})
