/**
 * Door authentication over real HTTP (scripted capsule on 127.0.0.1:0): with a token, JSON-RPC,
 * streams and /resources need `Authorization: Bearer <token>` (401 with `WWW-Authenticate:
 * Bearer` otherwise, before anything runs), the agent card stays public and advertises the
 * scheme; without one the door is open and the card names no scheme. Then the command line:
 * `serve --auth-token` / `CAPSULE_RUNTIME_AUTH_TOKEN`, and `watch --auth-token`.
 */
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { doorPerTest } from "../lib/DoorPerTest.js"
import { post, referenceMessage, rpc, sleep } from "../lib/Door.js"
import { runWatch } from "../lib/WatchCli.js"

const token = "s3cret-token-of-this-door"
const bearer = { authorization: `Bearer ${token}` }

const perTest = doorPerTest()
const { cleanups } = perTest

const openLocked = () => perTest.open({ door: { authToken: Redacted.make(token) } })

const send = (text: string) => ({ message: { kind: "message", messageId: `m-${Math.random()}`, role: "user", parts: [{ kind: "text", text }] } })

describe("a door with a token", () => {
  it("keeps the card public and advertises the bearer scheme (A2A 0.3 securitySchemes + security)", async () => {
    const { url } = await openLocked()
    for (const path of [".well-known/agent-card.json", ".well-known/agent.json"]) {
      const response = await fetch(`${url}${path}`)
      assert.strictEqual(response.status, 200)
      const card = await response.json()
      assert.deepStrictEqual(card.securitySchemes.bearer.type, "http")
      assert.deepStrictEqual(card.securitySchemes.bearer.scheme, "bearer")
      assert.deepStrictEqual(card.security, [{ bearer: [] }])
    }
  })

  it("answers a JSON-RPC call without a token 401 with WWW-Authenticate: Bearer, and starts no task", async () => {
    const opened = await openLocked()
    const reply = await rpc(opened.url, "message/send", send("/complete x"))
    assert.strictEqual(reply.status, 401)
    assert.match(reply.headers.get("www-authenticate") ?? "", /^Bearer\b/)
    assert.strictEqual(reply.body.error, "unauthorized")
    const stats = await opened.run(opened.registry.stats())
    assert.strictEqual(stats.retained, 0)
  })

  it("refuses a wrong token, another scheme, and an empty bearer alike", async () => {
    const { url } = await openLocked()
    for (const authorization of [`Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, `Basic ${Buffer.from(`u:${token}`).toString("base64")}`, "Bearer ", token]) {
      const reply = await rpc(url, "tasks/get", { id: "tsk_nope" }, { headers: { authorization } })
      assert.strictEqual(reply.status, 401, authorization)
      assert.match(reply.headers.get("www-authenticate") ?? "", /^Bearer\b/)
    }
    const wrong = await rpc(url, "tasks/get", { id: "tsk_nope" }, { headers: { authorization: "Bearer nope" } })
    assert.include(wrong.headers.get("www-authenticate") ?? "", `error="invalid_token"`)
  })

  it("serves JSON-RPC with the token (the scheme's case does not matter)", async () => {
    const { url } = await openLocked()
    const reply = await rpc(url, "message/send", { ...send("/complete done"), configuration: { blocking: true } }, { headers: bearer })
    assert.strictEqual(reply.status, 200)
    assert.strictEqual(reply.body.result.status.state, "completed")
    const lower = await rpc(url, "tasks/get", { id: reply.body.result.id }, { headers: { authorization: `bearer ${token}` } })
    assert.strictEqual(lower.body.result.id, reply.body.result.id)
  })

  it("guards streams and /resources too", async () => {
    const { url } = await openLocked()
    const stream = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "stream/watch", params: {} }) })
    assert.strictEqual(stream.status, 401)
    await stream.body?.cancel()
    const resources = await fetch(`${url}resources/files`)
    assert.strictEqual(resources.status, 401)
    assert.match(resources.headers.get("www-authenticate") ?? "", /^Bearer\b/)
    const peer = await fetch(`${url}resources/peer/x`)
    assert.strictEqual(peer.status, 401)
    const allowed = await fetch(`${url}resources/files`, { headers: bearer })
    assert.notStrictEqual(allowed.status, 401)
    const watched = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "stream/watch", params: {} })
    })
    assert.strictEqual(watched.status, 200)
    assert.match(watched.headers.get("content-type") ?? "", /^text\/event-stream/)
    await watched.body?.cancel()
  })
})

describe("a door without a token", () => {
  it("is open and its card names no scheme", async () => {
    const door = await perTest.open()
    const card = await (await fetch(`${door.url}.well-known/agent-card.json`)).json()
    assert.isUndefined(card.securitySchemes)
    assert.isUndefined(card.security)
    const reply = await post(door.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "tsk_nope" } }))
    assert.strictEqual(reply.status, 200)
  })
})

describe("watch --auth-token", () => {
  it("follows a locked door with the token, and is refused without it", async () => {
    const { url } = await openLocked()
    const run = (argv: ReadonlyArray<string>) => runWatch(argv, cleanups)
    const refused = run([url, "--json"])
    const exit = await refused.done()
    assert.strictEqual(exit._tag, "Failure")
    const watching = run([url, "--json", "--auth-token", token])
    const reply = await rpc(url, "message/send", { message: referenceMessage("/complete fine") }, { headers: bearer })
    assert.strictEqual(reply.status, 200)
    const deadline = Date.now() + 5_000
    while (!watching.output().includes("completed") && Date.now() < deadline) await sleep(20)
    assert.include(watching.output(), "completed")
  })
})

describe("serve --auth-token (CLI)", () => {
  const serve = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, ["dist/main.js", "serve", "--json", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    cleanups.push(() => void child.kill("SIGKILL"))
    return new Promise<{ url: string; stop: () => Promise<number | null> }>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", (line) =>
        resolve({
          url: JSON.parse(line).url,
          stop: () =>
            new Promise((done) => {
              child.once("exit", (code) => done(code))
              child.kill("SIGTERM")
            })
        }))
      child.once("exit", (code) => reject(new Error(`serve exited ${code}`)))
    })
  }

  it("takes the token from the flag or from CAPSULE_RUNTIME_AUTH_TOKEN", async () => {
    for (const launch of [() => serve(["--auth-token", token]), () => serve([], { CAPSULE_RUNTIME_AUTH_TOKEN: token })]) {
      const served = await launch()
      const open = await rpc(served.url, "tasks/get", { id: "tsk_nope" })
      assert.strictEqual(open.status, 401)
      const authed = await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: bearer })
      assert.strictEqual(authed.status, 200)
      const card = await (await fetch(`${served.url}.well-known/agent-card.json`)).json()
      assert.deepStrictEqual(card.security, [{ bearer: [] }])
      assert.strictEqual(await served.stop(), 0)
    }
  })
})
