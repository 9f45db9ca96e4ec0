/**
 * Logging: `CAPSULE_RUNTIME_LOG_LEVEL=debug` adds one logfmt line per door request (method,
 * path, status, duration) on stderr; at the default level there is none (the door is built
 * without the wrapper). Runs `serve --json` (the embedded capsule) as a child process.
 */
import { spawn } from "node:child_process"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"
import { assert, describe, it } from "@effect/vitest"

const ROOT = resolve(import.meta.dirname, "../..")

const serveAndPoke = async (env: Record<string, string>) => {
  const child = spawn(process.execPath, [join(ROOT, "dist", "main.js"), "serve", "--json"], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const url = await new Promise<string>((done, fail) => {
    createInterface({ input: child.stdout! }).once("line", (line) => done(JSON.parse(line).url))
    child.once("exit", (code) => fail(new Error(`serve exited ${code}`)))
  })
  await (await fetch(`${url}.well-known/agent-card.json`)).text()
  await (await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "tsk_nope" } }) })).text()
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
  child.kill("SIGTERM")
  assert.strictEqual(await exited, 0)
  return stderr
}

describe("request log lines", () => {
  it("are written at debug, one per request", async () => {
    const stderr = await serveAndPoke({ CAPSULE_RUNTIME_LOG_LEVEL: "debug" })
    const lines = stderr.split("\n").filter((line) => line.includes("message=request"))
    assert.strictEqual(lines.length, 2, stderr)
    for (const [line, method, path] of [[lines[0]!, "GET", "/.well-known/agent-card.json"], [lines[1]!, "POST", "/"]] as const) {
      for (const field of ["level=DEBUG", `method=${method}`, `path=${path} `, "status=200"]) assert.include(line, field)
      assert.match(line, /duration_ms=\d+/)
    }
  }, 20_000)

  it("are not written at the default level", async () => {
    const stderr = await serveAndPoke({})
    assert.notInclude(stderr, "message=request")
  }, 20_000)
})
