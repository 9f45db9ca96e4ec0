/**
 * Named door tokens with scopes, over real HTTP (scripted capsule on 127.0.0.1:0): each scope is
 * refused (403 `insufficient_scope`, the scope named in the challenge and the JSON-RPC data) to a
 * principal without it and allowed to one with it; a context belongs to the principal that made
 * it (another's contextId is refused, its tasks are not found, its frames not watched) unless the
 * caller holds `admin`; a door with tokens keeps its session id, tools and grants for the
 * authenticated extended card; the tokens file is refused when others can read it or when it is
 * malformed; and `delegations`, the token children get, can post a completion and nothing else.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, assert, describe, it } from "@effect/vitest"
import { Either, Redacted } from "effect"
import * as fc from "fast-check"
import { makeDoorCredentials } from "../../src/http/DoorCredentials.js"
import { a2aMessage, collect, type OpenDoor, openDoor, openStream, rpc, sleep } from "../lib/Door.js"

const base = mkdtempSync(join(tmpdir(), "door-scopes-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const tokenOf = (name: string) => `tok-${name}-0123456789abcdef`
const as = (name: string) => ({ authorization: `Bearer ${tokenOf(name)}` })

const principals: Record<string, ReadonlyArray<string>> = {
  sender: ["send"],
  reader: ["read"],
  canceller: ["cancel"],
  stopper: ["stop"],
  watcher: ["watch"],
  filer: ["resources"],
  completer: ["complete"],
  alice: ["send", "read", "cancel", "watch"],
  bob: ["send", "read", "cancel", "watch"],
  root: ["send", "read", "cancel", "watch", "admin"],
  refsender: ["message/send"]
}

let files = 0
const tokensFile = (text: string, mode = 0o600) => {
  const path = join(base, `tokens-${files++}.yaml`)
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}
const tokensYaml = (entries: Record<string, ReadonlyArray<string>>) =>
  `tokens:\n${Object.entries(entries).map(([name, scopes]) => `  ${name}:\n    token: ${tokenOf(name)}\n    scopes: [${scopes.map((s) => JSON.stringify(s)).join(", ")}]\n`).join("")}`

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const openScoped = async () => {
  const credentials = Either.getOrThrow(makeDoorCredentials({ tokensFile: tokensFile(tokensYaml(principals)) }))
  door = await openDoor({ door: { credentials }, scripted: { echoMs: 20 } })
  return { door, credentials }
}

const blocking = (text: string, extra: Record<string, unknown> = {}) => ({ message: a2aMessage(text, extra), configuration: { blocking: true } })

const assertInsufficient = (reply: { status: number; headers: Headers; body: any }, scope: string, label: string) => {
  assert.strictEqual(reply.status, 403, label)
  assert.strictEqual(reply.headers.get("www-authenticate"), `Bearer realm="capsule-runtime", error="insufficient_scope", scope="${scope}"`, label)
  if (reply.body?.jsonrpc === "2.0") {
    assert.strictEqual(reply.body.error.data.error, "insufficient_scope", label)
    assert.strictEqual(reply.body.error.data.scope, scope, label)
  } else {
    assert.strictEqual(reply.body.error, "insufficient_scope", label)
  }
}

const json = async (response: Response) => {
  const text = await response.text()
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

describe("scopes", () => {
  it("each scope: refused 403 insufficient_scope naming it without the scope, allowed with it", async () => {
    const { door } = await openScoped()
    const { url } = door
    const owned = await rpc(url, "message/send", blocking("/complete mine"), { headers: as("root") })
    const taskId = owned.body.result.id as string
    const calls: ReadonlyArray<{ scope: string; holder: string; call: (who: string) => Promise<{ status: number; headers: Headers; body: any }> }> = [
      { scope: "send", holder: "sender", call: (who) => rpc(url, "message/send", blocking("/complete s"), { headers: as(who) }) },
      { scope: "read", holder: "reader", call: (who) => rpc(url, "tasks/get", { id: "tsk_nope" }, { headers: as(who) }) },
      { scope: "cancel", holder: "canceller", call: (who) => rpc(url, "tasks/cancel", { id: "tsk_nope" }, { headers: as(who) }) },
      { scope: "stop", holder: "stopper", call: (who) => rpc(url, "session/stop", {}, { headers: as(who) }) },
      {
        scope: "watch",
        holder: "watcher",
        call: async (who) => {
          const opened = await openStream(url, "stream/watch", {}, { headers: as(who) })
          const body = opened.response.status === 200 ? "stream" : await json(opened.response)
          if (opened.response.status === 200) await opened.response.body?.cancel()
          return { status: opened.response.status, headers: opened.response.headers, body }
        }
      },
      {
        scope: "resources",
        holder: "filer",
        call: async (who) => {
          const response = await fetch(`${url}resources/files`, { headers: as(who) })
          return { status: response.status, headers: response.headers, body: await json(response) }
        }
      },
      {
        scope: "complete",
        holder: "completer",
        call: (who) =>
          rpc(url, "message/send", { message: a2aMessage("/complete delivered", { contextId: "ctx_completion" }) }, {
            headers: { ...as(who), "x-murmur-task-origin": "completion", "x-murmur-completion-session": door.sessionId, "x-murmur-delegation-id": "dlg_1" }
          })
      }
    ]
    for (const { scope, holder, call } of calls) {
      // `sender` lacks every scope but send, `reader` every one but read.
      const without = scope === "send" ? "reader" : "sender"
      assertInsufficient(await call(without), scope, `${scope} without it`)
      const allowed = await call(holder)
      assert.notStrictEqual(allowed.status, 403, `${scope} with it`)
      assert.notStrictEqual(allowed.status, 401, `${scope} with it`)
    }
    // admin: another principal's task is found only with it.
    assert.strictEqual((await rpc(url, "tasks/get", { id: taskId }, { headers: as("alice") })).body.error.code, -32001)
    assert.strictEqual((await rpc(url, "tasks/get", { id: taskId }, { headers: as("root") })).body.result.id, taskId)
  })

  it("a method's reference name grants that method alone", async () => {
    const { door } = await openScoped()
    const sent = await rpc(door.url, "message/send", blocking("/complete ref"), { headers: as("refsender") })
    assert.strictEqual(sent.body.result.status.state, "completed")
    const stream = await openStream(door.url, "message/stream", { message: a2aMessage("/complete ref") }, { headers: as("refsender") })
    assertInsufficient({ status: stream.response.status, headers: stream.response.headers, body: await json(stream.response) }, "send", "message/stream")
  })

  it("a client that may send cannot post a completion (it needs complete), and the children's token can do nothing else", async () => {
    const { door, credentials } = await openScoped()
    await door.run(door.delegations.expect("dlg_1", "the-delegation-secret-0123"))
    const completion = {
      "x-murmur-task-origin": "completion",
      "x-murmur-completion-session": door.sessionId,
      "x-murmur-delegation-id": "dlg_1",
      "x-murmur-completion-secret": "the-delegation-secret-0123"
    }
    const forged = await rpc(door.url, "message/send", { message: a2aMessage("/complete forged") }, { headers: { ...as("alice"), ...completion } })
    assertInsufficient(forged, "complete", "completion by a sender")
    const children = { authorization: `Bearer ${Redacted.value(credentials.completionToken!)}` }
    const delivered = await rpc(door.url, "message/send", { message: a2aMessage("/complete done") }, { headers: { ...children, ...completion } })
    assert.strictEqual(delivered.status, 200)
    assert.isString(delivered.body.result.id)
    assertInsufficient(await rpc(door.url, "message/send", { message: a2aMessage("/complete plain") }, { headers: children }), "send", "plain send by children")
    assertInsufficient(await rpc(door.url, "tasks/get", { id: delivered.body.result.id }, { headers: children }), "read", "read by children")
  })
})

describe("context ownership", () => {
  it("another principal's contextId is refused and starts nothing; the owner and an admin continue it", async () => {
    const { door } = await openScoped()
    const first = await rpc(door.url, "message/send", blocking("/complete one"), { headers: as("alice") })
    const contextId = first.body.result.contextId as string
    const before = (await door.run(door.registry.stats())).retained
    const hijack = await rpc(door.url, "message/send", blocking("/complete two", { contextId }), { headers: as("bob") })
    assert.strictEqual(hijack.body.error.code, -32602)
    assert.strictEqual(hijack.body.error.data.error, "context_not_owned")
    const streamed = await openStream(door.url, "message/stream", { message: a2aMessage("/complete three", { contextId }) }, { headers: as("bob") })
    assert.strictEqual((await json(streamed.response)).error.data.error, "context_not_owned")
    assert.strictEqual((await door.run(door.registry.stats())).retained, before)
    const continued = await rpc(door.url, "message/send", blocking("/complete four", { contextId }), { headers: as("alice") })
    assert.strictEqual(continued.body.result.contextId, contextId)
    const admin = await rpc(door.url, "message/send", blocking("/complete five", { contextId }), { headers: as("root") })
    assert.strictEqual(admin.body.result.contextId, contextId)
    // A context a client names first is its own from then on.
    const named = await rpc(door.url, "message/send", blocking("/complete six", { contextId: "ctx_bobs_own" }), { headers: as("bob") })
    assert.strictEqual(named.body.result.contextId, "ctx_bobs_own")
    assert.strictEqual((await rpc(door.url, "message/send", blocking("/complete seven", { contextId: "ctx_bobs_own" }), { headers: as("alice") })).body.error.data.error, "context_not_owned")
  })

  it("tasks/get, tasks/cancel and tasks/resubscribe answer another principal's task as not found (-32001), unless admin", async () => {
    const { door } = await openScoped()
    const started = await rpc(door.url, "message/send", { message: a2aMessage("/stream 50 40"), configuration: { blocking: false } }, { headers: as("alice") })
    const id = started.body.result.id as string
    for (const method of ["tasks/get", "tasks/cancel", "tasks/resubscribe"]) {
      const reply = await rpc(door.url, method, { id }, { headers: as("bob") })
      assert.strictEqual(reply.body.error?.code, -32001, method)
      assert.deepStrictEqual(reply.body.error.data, { taskId: id }, method)
    }
    assert.strictEqual((await rpc(door.url, "tasks/get", { id }, { headers: as("alice") })).body.result.id, id)
    assert.strictEqual((await rpc(door.url, "tasks/get", { id }, { headers: as("root") })).body.result.id, id)
    const canceled = await rpc(door.url, "tasks/cancel", { id }, { headers: as("root") })
    assert.strictEqual(canceled.body.result.status.state, "canceled")
  })

  it("stream/watch shows a principal the frames of its own contexts only; admin sees all", async () => {
    const { door } = await openScoped()
    const watch = async (who: string) => {
      const opened = await openStream(door.url, "stream/watch", {}, { headers: as(who) })
      assert.strictEqual(opened.response.status, 200)
      return opened
    }
    const [bobs, roots] = [await watch("bob"), await watch("root")]
    const alices = await rpc(door.url, "message/send", blocking("/complete alice-secret"), { headers: as("alice") })
    const bobsTask = await rpc(door.url, "message/send", blocking("/complete bob-visible"), { headers: as("bob") })
    const finalOf = (taskId: string) => (event: { event?: string; data?: string }) =>
      event.event === "status" && event.data !== undefined && JSON.parse(event.data).final === true && JSON.parse(event.data).id === taskId
    const seenByRoot = await collect(roots.events, finalOf(bobsTask.body.result.id))
    const seenByBob = await collect(bobs.events, finalOf(bobsTask.body.result.id))
    const taskIds = (events: ReadonlyArray<{ data?: string }>) =>
      new Set(events.flatMap((event) => {
        try {
          const id = JSON.parse(event.data ?? "null")?.id
          return typeof id === "string" ? [id] : []
        } catch {
          return []
        }
      }))
    assert.isTrue(taskIds(seenByRoot).has(alices.body.result.id))
    assert.isFalse(taskIds(seenByBob).has(alices.body.result.id))
    assert.isTrue(taskIds(seenByBob).has(bobsTask.body.result.id))
  })
})

describe("ownership, as a property", () => {
  it("whatever principals send, in whatever contexts, tasks/get finds a task only for its context's owner or an admin", async () => {
    const { door } = await openScoped()
    const who = fc.constantFrom("alice", "bob")
    const op = fc.record({ who, context: fc.option(fc.constantFrom("ctx_p1", "ctx_p2", "ctx_p3"), { nil: undefined }) })
    let round = 0
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 6 }), async (ops) => {
        round++
        const owner = new Map<string, string>()
        const tasks: Array<{ id: string; owner: string }> = []
        for (const { who, context } of ops) {
          // Each round has contexts of its own, so earlier rounds' claims do not carry over.
          const contextId = context === undefined ? undefined : `${context}_${round}`
          const reply = await rpc(door.url, "message/send", blocking("/complete p", contextId === undefined ? {} : { contextId }), { headers: as(who) })
          const claimed = contextId === undefined ? undefined : owner.get(contextId)
          if (claimed !== undefined && claimed !== who) {
            assert.strictEqual(reply.body.error?.data?.error, "context_not_owned")
            continue
          }
          const task = reply.body.result
          assert.isDefined(task, JSON.stringify(reply.body))
          owner.set(task.contextId, who)
          tasks.push({ id: task.id, owner: who })
        }
        for (const task of tasks) {
          for (const asker of ["alice", "bob", "root"]) {
            const reply = await rpc(door.url, "tasks/get", { id: task.id }, { headers: as(asker) })
            const sees = asker === "root" || asker === task.owner
            assert.strictEqual(reply.body.result?.id, sees ? task.id : undefined, `${asker} on ${task.owner}'s task`)
            if (!sees) assert.strictEqual(reply.body.error.code, -32001)
          }
        }
      }),
      { numRuns: 15 }
    )
  })
})

describe("agent cards", () => {
  it("a door with tokens: the public card has no session id, tools or grants; the extended card (any principal) has them", async () => {
    const { door } = await openScoped()
    const publicCard = await (await fetch(`${door.url}.well-known/agent-card.json`)).json()
    const text = JSON.stringify(publicCard)
    assert.notInclude(text, door.sessionId)
    assert.isUndefined(publicCard.session_id)
    for (const field of ["tools", "shell", "network"]) assert.isUndefined(publicCard.capabilities[field], field)
    assert.deepStrictEqual(Object.keys(publicCard.capabilities.extensions[0].params), ["methods"])
    assert.strictEqual(publicCard.supportsAuthenticatedExtendedCard, true)
    assert.strictEqual((await rpc(door.url, "agent/getAuthenticatedExtendedCard", {})).status, 401)
    const extended = await rpc(door.url, "agent/getAuthenticatedExtendedCard", {}, { headers: as("watcher") })
    assert.strictEqual(extended.body.result.session_id, door.sessionId)
    assert.strictEqual(extended.body.result.capabilities.extensions[0].params.session_id, door.sessionId)
    for (const field of ["tools", "shell", "network"]) assert.property(extended.body.result.capabilities, field)
  })

  it("an open door's public card stays whole (anyone may call it anyway) and declares no extended card", async () => {
    door = await openDoor()
    const card = await (await fetch(`${door.url}.well-known/agent-card.json`)).json()
    assert.strictEqual(card.session_id, door.sessionId)
    assert.strictEqual(card.supportsAuthenticatedExtendedCard, false)
  })
})

describe("the tokens file", () => {
  const refusal = (path: string) => {
    const made = makeDoorCredentials({ tokensFile: path })
    assert.isTrue(Either.isLeft(made), path)
    return Either.isLeft(made) ? made.left : undefined!
  }

  it("is refused when group or others can read or write it", () => {
    for (const mode of [0o640, 0o604, 0o620]) {
      const error = refusal(tokensFile(tokensYaml({ a: ["send"] }), mode))
      assert.strictEqual(error.code, "E-RUN-040")
      assert.include(error.message, "chmod 600")
    }
  })

  it("is refused when malformed, naming where", () => {
    const cases: ReadonlyArray<[string, string]> = [
      ["tokens: [", "is not YAML"],
      ["tokens:\n  a:\n    token: short\n    scopes: [send]\n", "at least 16 characters"],
      [`tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [sned]\n`, "unknown scope \"sned\""],
      [`tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: []\n`, "non-empty list"],
      [`tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [send]\n    extra: 1\n`, "unknown key 'extra'"],
      [`tokens:\n  operator:\n    token: ${tokenOf("a")}\n    scopes: [send]\n`, "reserved"],
      [`tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [send]\n  b:\n    token: ${tokenOf("a")}\n    scopes: [read]\n`, "same token"],
      [`tokens:\n  a:\n    sha256: abc\n    scopes: [send]\n`, "64 hex digits"],
      [`tokens:\n  a:\n    scopes: [send]\n`, "exactly one of token and sha256"],
      [`tokns: {}\n`, "unknown key 'tokns'"]
    ]
    for (const [text, expected] of cases) {
      const error = refusal(tokensFile(text))
      assert.strictEqual(error.code, "E-RUN-040", text)
      assert.include(error.message, expected, text)
    }
  })

  it("A2A 1.0 sees the same owners whichever binding: ListTasks, GetTask and REST show a principal its own tasks only (admin all)", async () => {
    const { door } = await openScoped()
    const v1 = (who: string) => ({ ...as(who), "a2a-version": "1.0" })
    const send1 = (who: string, text: string) =>
      rpc(door.url, "SendMessage", { message: { messageId: `scoped-${who}-${text.length}`, role: "ROLE_USER", parts: [{ text }] } }, { headers: v1(who) })
    const alices = (await send1("alice", "/complete a")).body.result.task
    const bobs = (await send1("bob", "/complete b")).body.result.task
    const listed = async (who: string) => (await rpc(door.url, "ListTasks", {}, { headers: v1(who) })).body.result.tasks.map((task: { id: string }) => task.id).sort()
    assert.deepStrictEqual(await listed("alice"), [alices.id])
    assert.deepStrictEqual(await listed("bob"), [bobs.id])
    assert.deepStrictEqual(await listed("root"), [alices.id, bobs.id].sort())
    // A task of another principal is not found, over JSON-RPC and over HTTP+JSON alike.
    assert.strictEqual((await rpc(door.url, "GetTask", { id: alices.id }, { headers: v1("bob") })).body.error.code, -32001)
    const rest = await fetch(`${door.url}tasks/${alices.id}`, { headers: v1("bob") })
    assert.strictEqual(rest.status, 404)
    // A context claimed over one binding is refused to another principal over the other.
    const claimed = await fetch(`${door.url}message:send`, {
      method: "POST",
      headers: { ...v1("bob"), "content-type": "application/json" },
      body: JSON.stringify({ message: { messageId: "scoped-steal", role: "ROLE_USER", contextId: alices.contextId, parts: [{ text: "/complete mine" }] } })
    })
    assert.strictEqual(claimed.status, 400)
    assert.strictEqual((await rpc(door.url, "ListTasks", {}, { headers: v1("sender") })).status, 403)
  })

  it("takes a token by its SHA-256 alone", async () => {
    const { createHash } = await import("node:crypto")
    const digest = createHash("sha256").update(tokenOf("hashed")).digest("hex")
    const credentials = Either.getOrThrow(makeDoorCredentials({ tokensFile: tokensFile(`tokens:\n  hashed:\n    sha256: ${digest}\n    scopes: [read]\n`) }))
    const found = credentials.authenticate(`Bearer ${tokenOf("hashed")}`)
    assert.strictEqual(typeof found === "object" ? found.name : found, "hashed")
    assert.strictEqual(credentials.authenticate(`Bearer ${digest}`), "invalid")
  })

  it("reload takes a new file and keeps the old table when the new one is refused", async () => {
    const path = tokensFile(tokensYaml({ first: ["read"] }))
    const credentials = Either.getOrThrow(makeDoorCredentials({ tokensFile: path }))
    door = await openDoor({ door: { credentials } })
    const get = (who: string) => rpc(door!.url, "tasks/get", { id: "tsk_nope" }, { headers: as(who) })
    assert.strictEqual((await get("first")).body.error.code, -32001)
    writeFileSync(path, tokensYaml({ second: ["read"] }))
    assert.deepStrictEqual(Either.getOrThrow(credentials.reload()).includes("second"), true)
    assert.strictEqual((await get("first")).status, 401)
    assert.strictEqual((await get("second")).body.error.code, -32001)
    chmodSync(path, 0o644)
    writeFileSync(path, tokensYaml({ third: ["read"] }))
    assert.isTrue(Either.isLeft(credentials.reload()))
    assert.strictEqual((await get("second")).body.error.code, -32001)
    assert.strictEqual((await get("third")).status, 401)
    await sleep(0)
  })
})
