/**
 * The peer plane with two real sessions (`serve --json`, the shipped scripted driver playing the
 * model): A shares a file for B's audience with `share-file`, B fetches it with
 * `fetch-peer-file` into peer-in/, a third audience is refused with the same bytes as a forged
 * handle, a redirecting peer is not followed, and the handle never reaches either trace.
 * (`npx tsc -p tsconfig.build.json` first.)
 */
import { createServer, type Server } from "node:http"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { serveCli } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { rawRequest } from "../lib/RawHttp.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const driver = new URL("../../drivers/scripted", import.meta.url).pathname

const capsule = (name: string, script: unknown, extra: string) => {
  const dir = mkdtempSync(join(tmpdir(), `peer-${name}-`))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, "murmur.yaml"), `name: ${name}
version: 0.1.0
artifacts:
  - { name: scripted, runtime: driver, source: ${driver}, local_source: true }
inference:
  endpoint: http://localhost/unused
  model: scripted
  driver:
    artifact: scripted
    config: ${JSON.stringify({ scripts: [script] })}
lifecycle: { task_acceptance: queue, queue_depth: 4 }
${extra}`)
  return dir
}

const task = async (url: string, text: string, workdir: string) => {
  const reply = await rpc(url, "message/send", { message: referenceMessage(text), configuration: { blocking: true } })
  expect(reply.body.result.status.state).toBe("completed")
  return readFileSync(join(workdir, "out", "result.txt"), "utf8")
}

const traceText = (workdir: string) => readFileSync(join(workdir, "trace.jsonl"), "utf8")
const events = (workdir: string, type: string) =>
  traceText(workdir).split("\n").filter(Boolean).map((line) => JSON.parse(line)).filter((line) => line.event_type === type)

describe("peer plane between two sessions", () => {
  it("A shares for B's audience, B fetches through the tool, a third audience is refused, a redirect is not followed", async () => {
    const minterDir = capsule("minter", {
      when: "share (\\S+) with (\\S+)",
      replies: [
        { stop_reason: "tool_call", content: [{ type: "tool_call", id: "s1", name: "share-file", input: { path: "{{1}}", peer: "{{2}}" } }] },
        { stop_reason: "end_turn", content: [{ type: "text", text: "{{tool_result}}" }] }
      ]
    }, "capabilities: { network: { allow: [127.0.0.1] } }\nexports: { peer_files: { root: share, max_ttl: 10m } }\n")
    const minter = await serveCli(minterDir, {}, cleanups)
    mkdirSync(join(minter.listening.workdir, "share"), { recursive: true })
    writeFileSync(join(minter.listening.workdir, "share", "note.txt"), "hand this to the reader")

    const readerDir = capsule("reader", {
      when: "fetch (\\S+) from (\\S+)",
      replies: [
        { stop_reason: "tool_call", content: [{ type: "tool_call", id: "f1", name: "fetch-peer-file", input: { peer: "{{2}}", handle: "{{1}}" } }] },
        { stop_reason: "end_turn", content: [{ type: "text", text: "{{tool_result}}" }] }
      ]
    }, "capabilities: { network: { allow: [127.0.0.1] }, peer_fetch: { allow: [127.0.0.1] } }\n")
    const reader = await serveCli(readerDir, {}, cleanups)

    const shared = JSON.parse(await task(minter.listening.url, `share note.txt with ${reader.listening.url}`, minter.listening.workdir))
    expect(shared.handle).toMatch(/^mh1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(shared.audience).toBe(`reader@${new URL(reader.listening.url).host}`)

    const fetched = JSON.parse(await task(reader.listening.url, `fetch ${shared.handle} from ${minter.listening.url}`, reader.listening.workdir))
    expect(fetched).toMatchObject({ path: `peer-in/${shared.handle_id}-note.txt`, bytes: 23 })
    expect(readFileSync(join(reader.listening.workdir, fetched.path), "utf8")).toBe("hand this to the reader")

    // A third capsule asserting its own audience gets exactly what a forged handle gets.
    const third = await rawRequest(minter.listening.url, "GET", `/resources/peer/${shared.handle}`, { "x-murmur-audience": "eve@127.0.0.1:1" })
    // The tag's first character carries six whole bits: changing it always changes the MAC (the
    // last two, as once here, can decode to the same bytes about one time in a thousand).
    const tagAt = shared.handle.lastIndexOf(".") + 1
    const forgedHandle = `${shared.handle.slice(0, tagAt)}${shared.handle[tagAt] === "A" ? "B" : "A"}${shared.handle.slice(tagAt + 1)}`
    const forged = await rawRequest(minter.listening.url, "GET", `/resources/peer/${forgedHandle}`, { "x-murmur-audience": shared.audience })
    expect(third.status).toBe(403)
    expect(third.body.equals(forged.body)).toBe(true)
    expect(third.json().error).toBe("handle_not_valid")
    expect(third.headers["x-murmur-handle-id"]).toBe(shared.handle_id)
    // The reader's audience in another case is the same audience: minting and checking share one form.
    const shouted = await rawRequest(minter.listening.url, "GET", `/resources/peer/${shared.handle}`, { "x-murmur-audience": ` ${shared.audience.toUpperCase()}` })
    expect([shouted.status, shouted.body.toString()]).toEqual([200, "hand this to the reader"])

    // A peer answering 307 towards the minter: nothing is followed, nothing is written.
    const redirecting: Server = createServer((_, res) => res.writeHead(307, { location: `${minter.listening.url}resources/peer/${shared.handle}` }).end())
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve))
    cleanups.push(() => new Promise<void>((resolve) => redirecting.close(() => resolve())))
    const port = (redirecting.address() as { port: number }).port
    const refused = await task(reader.listening.url, `fetch ${shared.handle} from http://127.0.0.1:${port}/`, reader.listening.workdir)
    expect(refused).toContain("redirect")
    expect(readdirSync(join(reader.listening.workdir, "peer-in"))).toHaveLength(1)

    expect(events(minter.listening.records, "peer_handle_mint")).toMatchObject([{ handle_id: shared.handle_id, path: "note.txt", audience: shared.audience, outcome: "ok" }])
    const redeems = events(minter.listening.records, "peer_handle_redeem")
    expect(redeems.map((line) => line.outcome)).toEqual(["ok", "handle_not_valid", "handle_not_valid", "ok"])
    expect(redeems[1].path).toBeNull()
    expect(events(reader.listening.records, "peer_file_fetch").map((line) => line.outcome)).toEqual(["ok", "redirect_refused"])
    expect(traceText(minter.listening.records)).not.toContain(shared.handle)
    expect(traceText(reader.listening.records)).not.toContain(shared.handle)
  }, 60_000)
})
