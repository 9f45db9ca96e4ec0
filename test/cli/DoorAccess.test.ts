/**
 * Who can reach a door, from the command line (`node dist/main.js serve`, the embedded scripted
 * capsule, port 0): `--auth-tokens-file` re-read on a real SIGHUP and refused at start when others
 * can read it; `--auth-token` on the command line warns W-RUN-041, `--auth-token-file` does not
 * (and refuses a file others can read); a door bound beyond loopback without a token warns
 * W-SEC-032, and stays silent on loopback or with a token.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { afterAll, afterEach, assert, describe, it } from "@effect/vitest"
import { rpc, sleep } from "../lib/Door.js"

const base = mkdtempSync(join(tmpdir(), "door-access-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const children: Array<ChildProcess> = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
})

const tokenOf = (name: string) => `tok-${name}-0123456789abcdef`
const as = (name: string) => ({ authorization: `Bearer ${tokenOf(name)}` })
const secret = (name: string, text: string, mode = 0o600) => {
  const path = join(base, name)
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}

interface Served {
  readonly child: ChildProcess
  readonly url: string
  readonly stderr: () => string
}

const { CAPSULE_RUNTIME_AUTH_TOKEN: _inherited, ...withoutToken } = process.env

/** `serve --json …` until its listening line (or its exit, with what it printed). */
const serve = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawn(process.execPath, ["dist/main.js", "serve", "--json", "--port", "0", ...args], {
    env: { ...withoutToken, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  let stderr = ""
  let stdout = ""
  child.stderr!.on("data", (chunk) => void (stderr += String(chunk)))
  return new Promise<Served | { readonly exit: number | null; readonly stderr: string; readonly stdout: string }>((resolve) => {
    const lines = createInterface({ input: child.stdout! })
    lines.on("line", (line) => {
      stdout += `${line}\n`
      const parsed = JSON.parse(line)
      if (parsed.event === "listening") resolve({ child, url: parsed.url, stderr: () => stderr })
    })
    child.once("exit", (code) => setTimeout(() => resolve({ exit: code, stderr, stdout }), 50))
  })
}

const listening = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const served = await serve(args, env)
  if ("exit" in served) throw new Error(`serve exited ${served.exit}: ${served.stderr}`)
  return served
}

/** Everything the session printed on stderr, once it has ended on SIGTERM. */
const settledStderr = async (served: Served) => {
  if (served.child.exitCode === null) await new Promise((resolve) => {
    served.child.once("exit", resolve)
    served.child.kill("SIGTERM")
  })
  return served.stderr()
}

describe("--auth-tokens-file", () => {
  it("is re-read on SIGHUP: the new tokens are in force, the old ones refused; a refused file keeps the table", async () => {
    const path = secret("hup.yaml", `tokens:\n  first:\n    token: ${tokenOf("first")}\n    scopes: [read]\n`)
    const served = await listening(["--auth-tokens-file", path])
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("first") })).body.error.code, -32001)
    writeFileSync(path, `tokens:\n  second:\n    token: ${tokenOf("second")}\n    scopes: [read]\n`)
    served.child.kill("SIGHUP")
    const deadline = Date.now() + 5_000
    while (!served.stderr().includes("door tokens reloaded") && Date.now() < deadline) await sleep(20)
    assert.include(served.stderr(), `door tokens reloaded from ${path}: delegations, second`)
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("first") })).status, 401)
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("second") })).body.error.code, -32001)
    chmodSync(path, 0o644)
    served.child.kill("SIGHUP")
    while (!served.stderr().includes("warning[E-RUN-040]") && Date.now() < deadline + 5_000) await sleep(20)
    assert.include(served.stderr(), "the tokens in force stay")
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("second") })).body.error.code, -32001)
    assert.isNull(served.child.exitCode)
  })

  it("refuses the start with E-RUN-040 when others can read the file, or it is malformed", async () => {
    const open = secret("open.yaml", `tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [read]\n`, 0o644)
    const bad = secret("bad.yaml", `tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [everything]\n`)
    for (const [path, why] of [[open, "chmod 600"], [bad, "unknown scope"]] as const) {
      const outcome = await serve(["--auth-tokens-file", path])
      assert.isTrue("exit" in outcome, path)
      if (!("exit" in outcome)) continue
      assert.strictEqual(outcome.exit, 1)
      const last = JSON.parse(outcome.stdout.trim().split("\n").at(-1)!)
      assert.strictEqual(last.error.code, "E-RUN-040")
      assert.include(last.error.message, why)
    }
  })
})

describe("the operator token", () => {
  it("--auth-token on the command line works and warns W-RUN-041", async () => {
    const served = await listening(["--auth-token", tokenOf("op")])
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("op") })).body.error.code, -32001)
    assert.include(await settledStderr(served), "warning[W-RUN-041]")
  })

  it("--auth-token-file gives it without the warning, and a file others can read is refused (E-RUN-041)", async () => {
    const path = secret("op-token", `${tokenOf("op")}\n`)
    const served = await listening(["--auth-token-file", path])
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" })).status, 401)
    assert.strictEqual((await rpc(served.url, "tasks/get", { id: "tsk_nope" }, { headers: as("op") })).body.error.code, -32001)
    assert.notInclude(await settledStderr(served), "W-RUN-041")
    const readable = secret("op-token-644", `${tokenOf("op")}\n`, 0o644)
    const refused = await serve(["--auth-token-file", readable])
    assert.isTrue("exit" in refused)
    if ("exit" in refused) {
      assert.strictEqual(refused.exit, 1)
      assert.include(refused.stderr, "error[E-RUN-041]: --auth-token-file")
    }
  })
})

describe("W-SEC-032", () => {
  it("warns of a door bound beyond loopback without a token, and not on loopback or with a token", async () => {
    const exposed = await listening(["--host", "0.0.0.0"])
    const line = (await settledStderr(exposed)).split("\n").find((text) => text.includes("W-SEC-032"))
    assert.isDefined(line)
    assert.include(line!, "warning[W-SEC-032]: the door is bound to 0.0.0.0 and has no token")
    assert.include(line!, "message/send, message/stream, stream/watch, tasks/get, tasks/cancel, session/stop")
    const loopback = await listening(["--host", "127.0.0.1"])
    assert.notInclude(await settledStderr(loopback), "W-SEC-032")
    const tokensFile = secret("wsec.yaml", `tokens:\n  a:\n    token: ${tokenOf("a")}\n    scopes: [read]\n`)
    const locked = await listening(["--host", "0.0.0.0", "--auth-tokens-file", tokensFile])
    assert.notInclude(await settledStderr(locked), "W-SEC-032")
  })
})
