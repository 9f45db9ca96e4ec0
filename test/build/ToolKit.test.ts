/**
 * The `capsule-runtime/tool` helper module (kit/, src/build/ToolKit.ts, docs/tools.md) as tool
 * authors meet it: composed per world, built into real tools by `build` (the real binary), and
 * run by a real session whose scripted driver calls them, against a local HTTP server. The
 * probe (test/fixtures/kit-probe, QuickJS) covers the core, files and env parts one operation
 * per call; the fetch tool is exactly what `new tool <capsule>/artifacts/fetch --http` writes
 * (StarlingMonkey, with the env part for its config; the same sources as docs/first-capsule.md's,
 * so the build cache builds it once for both). What each call answered is read from the trace (`trace.capture: content`).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { composeKit, pointAtKit, usesKit } from "../../src/build/ToolKit.js"
import { toolFiles } from "../../src/cli/Templates.js"
import { exitEvent, runCli } from "../lib/CapsuleDirs.js"

const repo = new URL("../..", import.meta.url).pathname

describe("composing the module", () => {
  it("finds the module's imports and points them at the composed file, and nothing else", () => {
    const text = `import { tool } from "capsule-runtime/tool"\nconst later = import('capsule-runtime/tool')\nimport other from "capsule-runtime/tools"\n`
    expect(usesKit(text)).toBe(true)
    expect(usesKit(`import x from "capsule-runtime/tools"`)).toBe(false)
    expect(pointAtKit(text)).toBe(`import { tool } from "./capsule-runtime-tool.js"\nconst later = import('./capsule-runtime-tool.js')\nimport other from "capsule-runtime/tools"\n`)
  })

  it("binds each part the world imports, the builder's way, and stubs the rest with the import to add", () => {
    const quickJs = composeKit("import wasi:filesystem/preopens@0.2.12;\nexport murmur:tool/run@0.1.0;", false)
    expect(quickJs).toContain(`import $preopens from "wasi:filesystem/preopens@0.2.12";`)
    expect(quickJs).toContain("const $u64 = Number;")
    expect(quickJs).not.toContain("wasi:http/types")
    expect(quickJs).toMatch(/export function request\(\) \{\n {2}throw new ToolError\(".*add `import wasi:http\/outgoing-handler@0\.2\.12;` to world\.wit/)
    expect(quickJs).toMatch(/export function config\(\) \{\n {2}throw new ToolError\(".*wasi:cli\/environment/)
    const sm = composeKit("import wasi:http/outgoing-handler@0.2.12;", true)
    expect(sm).toContain(`import * as $http from "wasi:http/outgoing-handler@0.2.12";`)
    expect(sm).toContain("const $u64 = BigInt;")
    expect(sm).toMatch(/export function readText\(\) \{\n {2}throw new ToolError/)
  })
})

interface ToolCallLine {
  readonly tool_call_id: string
  readonly status: "ok" | "error"
  readonly output: string
}

/** The text a call's output fence holds. */
const unfenced = (output: string) => /^<untrusted-content[^>]*>\n([\s\S]*)\n<\/untrusted-content>$/.exec(output)?.[1] ?? output

const probeCalls: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
  ["write", { op: "write", path: "notes/a.txt", text: "héllo ✓ 𝄞" }],
  ["append", { op: "append", path: "notes/a.txt", text: "\nmore" }],
  ["read", { op: "read", path: "notes/a.txt" }],
  ["list", { op: "list", path: "notes" }],
  ["json", { op: "json", path: "data/v.json", value: { a: [1, "two"], b: null } }],
  ["exists", { op: "exists", path: "data/v.json" }],
  ["remove", { op: "remove", path: "data/v.json" }],
  ["gone", { op: "exists", path: "data/v.json" }],
  ["missing", { op: "read", path: "nothing-here.txt" }],
  ["escape", { op: "read", path: "../outside.txt" }],
  ["absolute", { op: "write", path: "/etc/passwd", text: "x" }],
  ["too-large", { op: "read", path: "notes/a.txt", maxBytes: 4 }],
  ["config", { op: "config" }],
  ["stub", { op: "fetch" }],
  ["reply", { op: "reply" }],
  ["crash", { op: "crash" }],
  ["unknown", { op: "dance" }],
  ["no-op", {}]
]

const fetchCalls = (base: string): ReadonlyArray<readonly [string, Record<string, unknown>]> => [
  ["hello", { url: `${base}/hello` }],
  ["not-found", { url: `${base}/missing` }],
  ["big", { url: `${base}/big` }],
  ["denied", { url: "http://example.com/" }],
  ["bad-url", { url: "ftp://example.com/x" }],
  ["no-url", {}]
]

/** What `new tool <dir> --files` writes, used as its input schema says. */
const notesCalls: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
  ["notes-empty", { action: "read" }],
  ["notes-add", { action: "add", note: "buy milk" }],
  ["notes-add-2", { action: "add", note: " call Ada " }],
  ["notes-read", { action: "read" }],
  ["notes-bad", { action: "shred" }]
]

describe("tools built with the module, run by a session", () => {
  let server: Server
  let base = ""
  let dir = ""
  const calls = new Map<string, ToolCallLine>()
  let build = ""

  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/hello") return void res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("hello ✓ from the server")
      if (req.url === "/big") return void res.writeHead(200).end("x".repeat(100 * 1024))
      res.writeHead(404).end("nope")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    dir = mkdtempSync(join(tmpdir(), "tool-kit-"))
    for (const file of ["murmur.yaml", "world.wit", "driver.js"]) cpSync(join(repo, "drivers/scripted", file), join(dir, "artifacts/scripted", file))
    cpSync(join(repo, "test/fixtures/kit-probe"), join(dir, "artifacts/probe"), { recursive: true })
    for (const [path, text] of toolFiles("fetch", "http")) write(join("artifacts/fetch", path), text)
    for (const [path, text] of toolFiles("notes", "files")) write(join("artifacts/notes", path), text)
    const toolCall = (name: string) => ([id, input]: readonly [string, Record<string, unknown>]) => ({ type: "tool_call", id, name, input })
    const replies = [
      { stop_reason: "tool_call", content: [...probeCalls.map(toolCall("probe")), ...fetchCalls(base).map(toolCall("fetch")), ...notesCalls.map(toolCall("notes"))] },
      { stop_reason: "end_turn", content: [{ type: "text", text: "done" }] }
    ]
    write("murmur.yaml", [
      "name: tool-kit",
      "version: 0.1.0",
      "artifacts:",
      "  - { name: scripted, runtime: driver, source: artifacts/scripted, local_source: true }",
      "  - name: probe",
      "    runtime: tool",
      "    source: artifacts/probe",
      "    local_source: true",
      "    config: { greeting: hi, n: 2 }",
      "  - { name: fetch, runtime: tool, source: artifacts/fetch, local_source: true, config: { max_bytes: 32768 } }",
      "  - { name: notes, runtime: tool, source: artifacts/notes, local_source: true }",
      "capabilities:",
      `  network: { allow: ["${base}"] }`,
      "trace: { capture: content }",
      "inference:",
      "  endpoint: http://localhost/unused",
      "  model: scripted",
      `  driver: { artifact: scripted, config: ${JSON.stringify({ replies })} }`,
      ""
    ].join("\n"))
    const built = await runCli(["build", dir], {}, 240_000)
    expect(built.code, built.stderr).toBe(0)
    build = built.stdout
    const run = await runCli(["run", dir, "--task", "go", "--json"], {}, 120_000)
    expect(run.code, run.stderr).toBe(0)
    const trace = readFileSync(join(exitEvent(run).records, "trace.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line))
    for (const line of trace) if (line.event_type === "tool_call") calls.set(line.tool_call_id, { ...line, output: unfenced(line.output) })
  }, 300_000)

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    rmSync(dir, { recursive: true, force: true })
  })

  const answer = (id: string) => {
    const call = calls.get(id)
    expect(call, `no tool_call line for ${id}`).toBeDefined()
    return call!
  }
  const error = (id: string) => {
    const call = answer(id)
    expect(call.status, call.output).toBe("error")
    return (JSON.parse(call.output) as { error: { code: string; message: string; details?: unknown } }).error
  }

  it("build composes the module into both tools and says what it did for each", () => {
    expect(build).toMatch(/(built|reused|up to date) tool kit-probe/)
    expect(build).toMatch(/(built|reused|up to date) tool fetch/)
  })

  it("files: written, appended and read back as UTF-8, listed, JSON round-tripped, removed", () => {
    expect(answer("write")).toMatchObject({ status: "ok", output: "written" })
    expect(answer("append").status).toBe("ok")
    expect(answer("read")).toMatchObject({ status: "ok", output: "héllo ✓ 𝄞\nmore" })
    expect(JSON.parse(answer("list").output)).toEqual(["a.txt"])
    expect(JSON.parse(answer("json").output)).toEqual({ a: [1, "two"], b: null })
    expect(JSON.parse(answer("exists").output)).toEqual({ exists: true })
    expect(answer("remove").output).toBe("removed")
    expect(JSON.parse(answer("gone").output)).toEqual({ exists: false })
  })

  it("files: refusals and limits are structured errors that name the path", () => {
    expect(error("missing")).toMatchObject({ code: "not-found", message: "readText nothing-here.txt: no such file or directory" })
    expect(error("escape")).toMatchObject({ code: "not-permitted", details: { path: "../outside.txt" } })
    expect(error("absolute").code).toBe("not-permitted")
    expect(error("too-large")).toMatchObject({ code: "too-large", details: { path: "notes/a.txt", maxBytes: 4 } })
  })

  it("the core: config from the entry, a missing import named, reply's status, a bug and bad input kept apart", () => {
    expect(JSON.parse(answer("config").output)).toEqual({ greeting: "hi", n: 2 })
    const stub = error("stub")
    expect(stub.code).toBe("not-built-in")
    expect(stub.message).toContain("import wasi:http/outgoing-handler@0.2.12;")
    // reply(..., { status: "failed" }): the model gets the data; the trace's status is not ok.
    expect(answer("reply")).toMatchObject({ status: "error", output: JSON.stringify({ n: 1 }) })
    expect(error("crash")).toMatchObject({ code: "internal" })
    expect(error("crash").message).toMatch(/undefined/)
    expect(error("unknown")).toMatchObject({ code: "bad-op", message: "unknown op 'dance'", details: { op: "dance" } })
    expect(error("no-op")).toMatchObject({ code: "bad-input", details: { field: "op" } })
  })

  it("http: a GET under the grant, a 404 as a failed check, a body cut at the entry's config max_bytes", () => {
    expect(answer("hello")).toMatchObject({ status: "ok", output: "hello ✓ from the server" })
    expect(error("not-found")).toMatchObject({ code: "http-status", details: { status: 404 } })
    expect(answer("big").status).toBe("ok")
    expect(answer("big").output).toBe("x".repeat(32768))
  })

  it("the --files template: notes added to its workdir and read back, an unknown action refused", () => {
    expect(answer("notes-empty").output).toBe("(no notes yet)")
    expect(answer("notes-add")).toMatchObject({ status: "ok", output: "noted in notes.md" })
    expect(answer("notes-read").output).toBe("- buy milk\n- call Ada\n")
    expect(error("notes-bad")).toMatchObject({ code: "bad-input", message: `unknown action 'shred': use "add" or "read"` })
  })

  it("http: outside the grant, a bad URL and no URL are errors the model can act on", () => {
    const denied = error("denied")
    expect(denied.code).toBe("network-denied")
    expect(denied.message).toContain("capabilities.network.allow")
    expect(error("bad-url")).toMatchObject({ code: "bad-url" })
    expect(error("no-url")).toMatchObject({ code: "bad-input", details: { field: "url" } })
  })
})
