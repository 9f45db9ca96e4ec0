/**
 * `watch` against a real door (scripted capsule on 127.0.0.1:0): rendered lines for a streamed
 * task, `capsule-closed` on session end, reconnection with `Last-Event-ID` through a proxy that
 * drops the first connection mid-frame (no frame twice, none missed), giving up, refusals, and
 * the command itself (`host:port`, `--json`, exit status).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { watch, type WatchOptions } from "../../src/cli/Watch.js"
import { createServer } from "node:net"
import { startCuttingProxy } from "../lib/CuttingProxy.js"
import { doorPerTest } from "../lib/DoorPerTest.js"
import { referenceMessage, rpc, sleep, waitForState } from "../lib/Door.js"
import { runWatch } from "../lib/WatchCli.js"

const perTest = doorPerTest()
const { cleanups } = perTest
const open = () => perTest.open()

const until = async (predicate: () => boolean, what: string, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

/** Runs `watch` in the background, collecting what it writes. */
const startWatch = (url: string, options: Partial<WatchOptions> = {}) => {
  const seen = { out: "", notices: [] as Array<string> }
  const fiber = Effect.runFork(
    watch(url, {
      json: false,
      out: (text) => Effect.sync(() => void (seen.out += text)),
      notice: (line) => Effect.sync(() => void seen.notices.push(line)),
      ...options
    }).pipe(Effect.provide(NodeHttpClient.layer))
  )
  cleanups.push(() => Effect.runPromise(Fiber.interrupt(fiber)).then(() => undefined))
  return { seen, done: () => Effect.runPromise(Fiber.await(fiber)) }
}

const send = async (url: string, text: string) => (await rpc(url, "message/send", { message: referenceMessage(text) })).body.result

const short = (taskId: string) => `tsk_…${taskId.slice(-8)}`

const cuttingProxy = (target: string, marker: string) => startCuttingProxy(target, marker, cleanups)

describe("watch", () => {
  it("prints a streamed task readably and ends with exit 0 on capsule-closed", async () => {
    const { url } = await open()
    const watcher = startWatch(url.replace(/^http:\/\//, "").replace(/\/$/, ""))
    await until(() => watcher.seen.notices.length > 0, "the connection")
    assert.deepStrictEqual(watcher.seen.notices, [`watching ${url}`])

    const task = await send(url, "/stream 3 10")
    await waitForState(url, task.id, ["completed"])
    await until(() => watcher.seen.out.includes("completed"), "the final status")
    await perTest.door!.close()
    const exit = await watcher.done()
    assert.isTrue(Exit.isSuccess(exit))
    assert.strictEqual(
      watcher.seen.out,
      [
        `[${short(task.id)}] working`,
        `[${short(task.id)}] chunk 1 chunk 2 chunk 3 `,
        `[${short(task.id)}] completed: streamed 3 chunks`,
        "capsule closed",
        ""
      ].join("\n")
    )
  })

  it("prints text chunks before the task ends", async () => {
    const { url } = await open()
    const watcher = startWatch(url)
    const task = await send(url, "/stream 3 300")
    await until(() => watcher.seen.out.includes("chunk 1 "), "the first chunk")
    assert.strictEqual(watcher.seen.out, `[${short(task.id)}] working\n[${short(task.id)}] chunk 1 `)
    await rpc(url, "tasks/cancel", { id: task.id })
    await until(() => watcher.seen.out.includes("canceled"), "the cancel")
    assert.isTrue(watcher.seen.out.endsWith(`chunk 1 \n[${short(task.id)}] canceled: task canceled\n`))
  })

  it("reconnects with Last-Event-ID after a drop mid-frame, printing every frame once", async () => {
    const { url } = await open()
    const proxy = await cuttingProxy(url, "chunk 3")
    const watcher = startWatch(proxy.url, { json: true, retry: { initialMs: 20 } })
    await until(() => watcher.seen.notices.length > 0, "the connection")

    const task = await send(url, "/stream 6 30")
    await waitForState(url, task.id, ["completed"])
    await until(() => watcher.seen.out.includes("streamed 6 chunks"), "the final status", 8_000)
    await perTest.door!.close()
    assert.isTrue(Exit.isSuccess(await watcher.done()))

    assert.strictEqual(proxy.requests.length, 2)
    assert.notMatch(proxy.requests[0]!, /last-event-id/i)
    // Frames 1-3 (working, chunk 1, chunk 2) arrived whole before the cut inside chunk 3.
    assert.match(proxy.requests[1]!, /\r\nlast-event-id: 3\r\n/i)
    assert.strictEqual(watcher.seen.notices.length, 3)
    assert.strictEqual(watcher.seen.notices[0], `watching ${proxy.url}`)
    assert.match(watcher.seen.notices[1]!, /^connection to http:\/\/127\.0\.0\.1:\d+\/ lost \((ECONNRESET|aborted)\); reconnecting after event 3$/)
    assert.strictEqual(watcher.seen.notices[2], `reconnected to ${proxy.url}; resuming after event 3`)

    const frames = watcher.seen.out.trimEnd().split("\n").map((line) => JSON.parse(line))
    const numbered = frames.filter((f) => f.id !== null)
    assert.deepStrictEqual(numbered.map((f) => f.id), Array.from({ length: 9 }, (_, i) => i + 1))
    assert.strictEqual(numbered.filter((f) => f.event === "text").map((f) => f.data.text).join(""), "chunk 1 chunk 2 chunk 3 chunk 4 chunk 5 chunk 6 ")
    assert.deepStrictEqual(frames.filter((f) => f.id === null).map((f) => f.event), ["connection-ack", "connection-ack", "capsule-closed"])
    assert.strictEqual(frames.at(-1).event, "capsule-closed")
  })

  it("gives up after the give-up time without a connection", async () => {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as { port: number }
    await new Promise<void>((resolve) => server.close(() => resolve()))

    const started = Date.now()
    const watcher = startWatch(`127.0.0.1:${port}`, { retry: { initialMs: 10, maxMs: 40, giveUpMs: 300 } })
    const exit = await watcher.done()
    assert.isTrue(Date.now() - started < 2_000)
    assert.isTrue(Exit.isFailure(exit))
    if (Exit.isFailure(exit)) {
      const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.strictEqual(error?.reason, "Unreachable")
      assert.match(error?.message ?? "", /^gave up on http:\/\/127\.0\.0\.1:\d+\/ after 0 s without a connection \(ECONNREFUSED\)$/)
    }
    assert.deepStrictEqual(watcher.seen.notices, [`cannot connect to http://127.0.0.1:${port}/ (ECONNREFUSED); retrying`])
  })

  it("refuses at once what is not a door's stream/watch", async () => {
    const { url } = await open()
    for (const [target, message] of [
      [`${url}nope`, /^http:\/\/127\.0\.0\.1:\d+\/nope is not a door's stream\/watch \(HTTP 404: /],
      ["::not a url", /^not a door URL: ::not a url/]
    ] as const) {
      const exit = await startWatch(target).done()
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error.reason === "Refused")
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") assert.match(exit.cause.error.message, message)
    }
  })
})

describe("watchCommand", () => {
  const run = async (argv: ReadonlyArray<string>) => runWatch(argv, cleanups)

  it("follows host:port with --json until capsule-closed", async () => {
    const { url } = await open()
    const command = await run([url.replace(/^http:\/\//, ""), "--json"])
    const task = await send(url, "/complete fine")
    await waitForState(url, task.id, ["completed"])
    await until(() => command.output().includes("\"completed\""), "the final status")
    await perTest.door!.close()
    assert.isTrue(Exit.isSuccess(await command.done()))
    const frames = command.output().trimEnd().split("\n").map((line) => JSON.parse(line))
    assert.deepStrictEqual(frames.map((f) => f.event), ["connection-ack", "status", "text", "status", "capsule-closed"])
    assert.deepStrictEqual(frames[3], {
      id: 3,
      event: "status",
      data: { id: task.id, context_id: task.contextId, status: { state: "completed", message: "session ended", response: "fine" }, final: true }
    })
  })

  it("exits 1 when the URL is not a door", async () => {
    const { url } = await open()
    const exit = await (await run([`${url}nope`])).done()
    assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && (exit.cause.error as { _tag: string; code?: number })._tag === "ExitStatus")
  })
})

