/**
 * The client commands against a door with a bearer token, through the real binary (`npm run build`
 * first): `serve` says where the clients take the token, and `send`, `chat` and `watch` without it
 * name the 401 and the flag or variable that supplies it (they printed "undefined undefined").
 */
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { afterAll, describe, expect, it } from "vitest"
import { refusalOf } from "../../src/cli/DoorClient.js"
import { runCli } from "../lib/CapsuleDirs.js"

const base = mkdtempSync(join(tmpdir(), "client-refusals-"))
const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  rmSync(base, { recursive: true, force: true })
})

const { CAPSULE_RUNTIME_AUTH_TOKEN: _inherited, ...withoutToken } = process.env

/** `serve examples/hello` with a token file, without --json: its lines until the token hint, and its URL. */
const serveWithToken = async () => {
  const tokenFile = join(base, "token")
  writeFileSync(tokenFile, "tok-client-refusals-0123456789\n")
  chmodSync(tokenFile, 0o600)
  const child = spawn(process.execPath, ["dist/main.js", "serve", "examples/hello", "--port", "0", "--auth-token-file", tokenFile], {
    env: { ...withoutToken, MURMUR_STORE: "memory", MURMUR_HOME: join(base, "home") },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  const lines: Array<string> = []
  for await (const line of createInterface({ input: child.stdout! })) {
    lines.push(line)
    if (line.startsWith("the door wants a bearer token")) break
  }
  const url = /serving at (\S+)/.exec(lines.join("\n"))![1]!
  return { lines, url, tokenFile }
}

describe("a door with a bearer token, from the client commands", () => {
  it("serve names what supplies the token; send and watch without it name the 401 and the flag; with it, send works", async () => {
    const served = await serveWithToken()
    expect(served.lines.at(-1)).toBe("the door wants a bearer token: give the client commands --auth-token-file PATH or $CAPSULE_RUNTIME_AUTH_TOKEN")
    for (const args of [["send", served.url, "Ada"], ["watch", served.url]]) {
      const refused = await runCli(args, withoutToken as Record<string, string>, 30_000)
      expect(refused.code, args[0]).not.toBe(0)
      expect(refused.stderr, args[0]).toContain("HTTP 401, the door wants a bearer token")
      expect(refused.stderr, args[0]).toContain("--auth-token-file PATH (mode 0600) or $CAPSULE_RUNTIME_AUTH_TOKEN")
      expect(refused.stderr, args[0]).not.toContain("undefined")
    }
    const sent = await runCli(["send", served.url, "Ada", "--auth-token-file", served.tokenFile], withoutToken as Record<string, string>, 60_000)
    expect(sent.code, sent.stderr).toBe(0)
  }, 90_000)
})

describe("refusalOf", () => {
  const url = "http://127.0.0.1:1/"
  it("names a JSON-RPC error by its code, a 401 and a 403 by what they mean, anything else as not a door", () => {
    expect(refusalOf(url, "tasks/get", 200, JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32001, message: "no such task" } })))
      .toBe(`${url} refused tasks/get: -32001 no such task`)
    expect(refusalOf(url, "message/stream", 401, JSON.stringify({ error: "unauthorized", message: "the bearer token is not one of this door's" })))
      .toBe(`${url} refused message/stream: HTTP 401, the door wants a bearer token (the door says: the bearer token is not one of this door's); give it with --auth-token-file PATH (mode 0600) or $CAPSULE_RUNTIME_AUTH_TOKEN`)
    expect(refusalOf(url, "resources/files", 403, JSON.stringify({ error: "insufficient_scope", message: "token 'ci' lacks resources", scope: "resources" })))
      .toContain("HTTP 403, the token given lacks the 'resources' scope (the door says: token 'ci' lacks resources)")
    expect(refusalOf(url, "tasks/get", 404, "nope")).toBe(`${url} is not a door (HTTP 404: nope)`)
  })
})
