/**
 * The resource plane (door spec §8.5) black-box through `serve <agent dir> --json`: one row per
 * status and header, each refusal with its code, links never followed, and the trace lines.
 * (`npx tsc -p tsconfig.build.json` first.) The peer plane's rows: PeerPlane.test.ts.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listeningCli, makeAgentCapsuleDir, serveCli, type ServeProcess } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"
import { rawRequest } from "../lib/RawHttp.js"

const cleanups: Array<() => Promise<void> | void> = []
let served: ServeProcess
let bare: ServeProcess

const EXPORTS = "exports:\n  files:\n    root: out\n    mode: read-only\n    max_bytes: 64\n"
const reply = { replies: [{ stop_reason: "end_turn", content: [{ type: "text", text: "done" }] }] }

beforeAll(async () => {
  const dir = await makeAgentCapsuleDir({ driverConfig: reply, extra: EXPORTS })
  const bareDir = await makeAgentCapsuleDir({ driverConfig: reply })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(bareDir, { recursive: true, force: true }))
  ;[served, bare] = await Promise.all([serveCli(dir, {}, cleanups), serveCli(bareDir, {}, cleanups)])
  const out = join(served.listening.workdir, "out")
  mkdirSync(join(out, "sub", "deep"), { recursive: true })
  writeFileSync(join(out, "report.md"), "# report\n")
  writeFileSync(join(out, "sub", "deep", "b.txt"), "bee")
  writeFileSync(join(out, "big.bin"), Buffer.alloc(65, 1))
  writeFileSync(join(served.listening.workdir, "secret.txt"), "TOP-SECRET-BYTES")
  symlinkSync(join(served.listening.workdir, "secret.txt"), join(out, "link.txt"))
  symlinkSync(served.listening.workdir, join(out, "linkdir"))
  execFileSync("mkfifo", [join(out, "pipe")])
}, 60_000)

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const get = (path: string, method = "GET", headers: Record<string, string> = {}) => rawRequest(served.listening.url, method, path, headers)
const sha = (text: string | Buffer) => createHash("sha256").update(text).digest("hex")

describe("resource plane (exports.files)", () => {
  it("lists: keys in order, recursive and sorted, oversized listed with its real size, links and fifos left out", async () => {
    const answer = await get("/resources/files")
    expect(answer.status).toBe(200)
    expect(answer.headers["content-type"]).toBe("application/json")
    expect(answer.headers["x-murmur-generation"]).toBe("0")
    expect(answer.headers["x-murmur-containment"]).toMatch(/^(advisory|scoped|sealed)$/)
    expect(answer.headers["x-murmur-export-root"]).toBe("out")
    const body = answer.json()
    expect(Object.keys(body)).toEqual(["root", "mode", "max_bytes", "generation", "containment_achieved", "entries"])
    expect(body).toMatchObject({ root: "out", mode: "read-only", max_bytes: 64, generation: 0 })
    expect(body.entries.map((entry: any) => entry.path)).toEqual(["big.bin", "report.md", "sub/deep/b.txt"])
    expect(Object.keys(body.entries[1])).toEqual(["path", "size_bytes", "mtime_ms", "sha256"])
    expect(body.entries[1]).toMatchObject({ size_bytes: 9, sha256: sha("# report\n") })
    expect(body.entries[0]).toMatchObject({ size_bytes: 65, sha256: null })
    expect((await get("/resources/files/")).status).toBe(200)
    expect((await get("/resources/files?x=1")).status).toBe(200)
  })

  it("reads: octet-stream, etag, mtime, generation, containment, export root, content-length", async () => {
    const answer = await get("/resources/files/report.md")
    expect(answer.status).toBe(200)
    expect(answer.body.toString()).toBe("# report\n")
    expect(answer.headers["content-type"]).toBe("application/octet-stream")
    expect(answer.headers["etag"]).toBe(`"sha256:${sha("# report\n")}"`)
    expect(answer.headers["content-length"]).toBe("9")
    expect(Number(answer.headers["x-murmur-mtime-ms"])).toBeGreaterThan(0)
    expect(answer.headers["x-murmur-generation"]).toBe("0")
    expect(answer.headers["x-murmur-export-root"]).toBe("out")
    expect((await get("/resources/files/sub%2Fdeep/b.txt")).body.toString()).toBe("bee")
    expect((await get("/resources/files/sub/deep/b.txt/")).body.toString()).toBe("bee")
  })

  const refusals: ReadonlyArray<readonly [string, string, number, string]> = [
    ["PUT", "/resources/files/report.md", 405, "method_not_allowed"],
    ["DELETE", "/resources/files", 405, "method_not_allowed"],
    ["GET", "/resources/files/missing.md", 404, "not_found"],
    ["GET", "/resources/nothing", 404, "not_found"],
    ["GET", "/resources/peerless/x", 404, "not_found"],
    ["GET", "/resources/files/../secret.txt", 403, "outside_root"],
    ["GET", "/resources/files/%2e%2e/secret.txt", 403, "outside_root"],
    ["GET", "/resources/files/%2e%2e%2fsecret.txt", 403, "outside_root"],
    ["GET", "/resources/files/%2Fetc%2Fpasswd", 403, "outside_root"],
    ["GET", "/resources/files/sub//deep/b.txt", 403, "outside_root"],
    ["GET", "/resources/files/./report.md", 403, "outside_root"],
    ["GET", "/resources/files/report.md%00", 403, "outside_root"],
    ["GET", "/resources/files/a%ff", 403, "outside_root"],
    ["GET", "/resources/files/%c3", 403, "outside_root"],
    ["GET", "/resources/files/link.txt", 403, "symlink_refused"],
    ["GET", "/resources/files/linkdir/secret.txt", 403, "symlink_refused"],
    ["GET", "/resources/files/sub", 403, "not_a_regular_file"],
    ["GET", "/resources/files/pipe", 403, "not_a_regular_file"],
    ["GET", "/resources/files/big.bin", 413, "too_large"]
  ]
  it.each(refusals)("%s %s → %d %s", async (method, path, status, code) => {
    const answer = await get(path, method)
    expect(answer.status).toBe(status)
    expect(answer.headers["content-type"]).toBe("application/json")
    const body = answer.json()
    expect(Object.keys(body)).toEqual(["error", "message"])
    expect(body.error).toBe(code)
    expect(answer.body.toString()).not.toContain("TOP-SECRET-BYTES")
    if (status === 405) expect(answer.headers["allow"]).toBe("GET")
    else expect(answer.headers["x-murmur-generation"]).toBe("0")
  })

  it("an undeclared plane: the method check first, then no_resource_plane / no_peer_plane; /resources alone is the door's 404", async () => {
    const at = (method: string, path: string, headers: Record<string, string> = {}) => rawRequest(bare.listening.url, method, path, headers)
    expect((await at("POST", "/resources/files")).status).toBe(405)
    const files = await at("GET", "/resources/files/report.md")
    expect([files.status, files.json().error]).toEqual([404, "no_resource_plane"])
    const peer = await at("GET", "/resources/peer/mh1.a.b", { "x-murmur-audience": "x@127.0.0.1:1" })
    expect([peer.status, peer.json().error]).toEqual([404, "no_peer_plane"])
    const post = await at("POST", "/resources/peer/mh1.a.b")
    expect([post.status, post.headers["allow"], post.json().error]).toEqual([405, "GET", "method_not_allowed"])
    expect((await at("GET", "/resources")).json().error).toBe("not_found")
  })

  it("every list and read is traced with its outcome", async () => {
    await get("/resources/files/report.md")
    const lines = readFileSync(join(served.listening.records, "trace.jsonl"), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
    const reads = lines.filter((line) => line.event_type === "resource_read")
    expect(reads.some((line) => line.outcome === "ok" && line.path === "report.md" && line.sha256 === sha("# report\n"))).toBe(true)
    expect(reads.some((line) => line.outcome === "symlink_refused")).toBe(true)
    expect(lines.some((line) => line.event_type === "resource_list" && line.outcome === "ok")).toBe(true)
  })
})

describe("examples/hello exports out/ (the README's curl)", () => {
  it("after a task, curl <url>resources/files lists result.txt and reading it answers the task's result", async () => {
    const workdir = mkdtempSync(join(tmpdir(), "hello-export-"))
    cleanups.push(() => rmSync(workdir, { recursive: true, force: true }))
    const hello = new URL("../../examples/hello", import.meta.url).pathname
    const { listening } = await listeningCli(["serve", hello, "--json", "--workdir", workdir], {}, cleanups)
    const reply = await rpc(listening.url, "message/send", { message: referenceMessage("Ada"), configuration: { blocking: true } })
    expect(reply.body.result.status.state).toBe("completed")
    const listed = JSON.parse(execFileSync("curl", ["-s", `${listening.url}resources/files`], { encoding: "utf8" }))
    expect(listed.entries.map((entry: any) => entry.path)).toContain("result.txt")
    const read = execFileSync("curl", ["-s", `${listening.url}resources/files/result.txt`], { encoding: "utf8" })
    expect(read).toBe(readFileSync(join(workdir, "out", "result.txt"), "utf8"))
  }, 60_000)
})
