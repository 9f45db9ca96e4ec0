/**
 * `node dist/main.js run <dir>` end to end with real components in real workers: the
 * reference's fixture behaviours (sandbox spec §7) and every grant's enforcement.
 */
import { createServer, type Server } from "node:http"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildComponent } from "../lib/components.js"
import { exitEvent, makeCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const result = (workdir: string) => readFileSync(join(workdir, "out", "result.txt"), "utf8")

describe("run: tools", () => {
  it("runs a capsule that invokes an allowlisted tool in a nested instance, and pins it in murmur.lock", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-allowlisted", tools: { "echo-tool": "echo-tool" } })
    const first = await runCli(["run", dir])
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^status: {2}ok\nworkdir: (\S+)\n$/)
    const workdir = /workdir: (\S+)/.exec(first.stdout)![1]!
    expect(result(workdir)).toBe("ok")
    const lock = readFileSync(join(dir, "murmur.lock"), "utf8")
    expect(lock).toContain("name: echo-tool")
    expect(lock).toContain("resolved_version: 0.1.0")
    // The second run verifies against the pin and leaves the lock as it was.
    const second = await runCli(["run", dir, "--json"])
    expect(exitEvent(second)).toMatchObject({ event: "exit", status: "ok" })
    expect(readFileSync(join(dir, "murmur.lock"), "utf8")).toBe(lock)
  })

  it("refuses a registry artifact whose bytes changed after pinning (integrity)", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-allowlisted", tools: { "echo-tool": "echo-tool" } })
    expect((await runCli(["run", dir])).code).toBe(0)
    writeFileSync(join(dir, ".murmur", "artifacts", "echo-tool", "0.1.0", "echo-tool.wasm"), await buildComponent("chunks-tool"))
    const tampered = await runCli(["run", dir, "--json"])
    expect(tampered.code).toBe(1)
    expect(exitEvent(tampered).error).toEqual({ code: "E-REG-002", message: "artifact integrity check failed for echo-tool@0.1.0" })
  })

  it("fails with E-RUN-008 when a declared artifact is not installed", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-allowlisted", tools: { "echo-tool": "echo-tool" } })
    writeFileSync(join(dir, "murmur.yaml"), readFileSync(join(dir, "murmur.yaml"), "utf8").replace("version: 0.1.0\n    runtime", "version: 9.9.9\n    runtime"))
    const missing = await runCli(["run", dir, "--json"])
    expect(missing.code).toBe(1)
    // The path it looked in is named, so a capsule copied elsewhere shows which `source:` broke.
    expect(exitEvent(missing).error).toEqual({
      code: "E-RUN-008",
      message: `missing artifacts: echo-tool@9.9.9 (looked in ${join(dir, ".murmur", "artifacts", "echo-tool", "9.9.9")})`
    })
  })

  it("an undeclared tool is an err the capsule sees, not a crash", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-unlisted", tools: { "echo-tool": "echo-tool" } })
    const run = await runCli(["run", dir, "--json"])
    expect(exitEvent(run).status).toBe("ok")
    expect(result(exitEvent(run).workdir)).toContain("tool 'undeclared-tool' is not declared in manifest allowlist")
  })
})

describe("run: environment grant", () => {
  const host = { GITHUB_TOKEN: "ghp_secret", MURMUR_TEST_ALLOWED_VAR: "visible-value" }

  it("without an env block the guest sees neither variable", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-env-echo" })
    const run = await runCli(["run", dir, "--json"], host)
    expect(result(exitEvent(run).workdir)).toBe("GITHUB_TOKEN=absent\nMURMUR_TEST_ALLOWED_VAR=absent")
  })

  it("an allowed name is copied; a credential is stripped even when allowed", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-env-echo", capabilities: "  env:\n    allow: [MURMUR_TEST_ALLOWED_VAR, GITHUB_TOKEN]\n" })
    const run = await runCli(["run", dir, "--json"], host)
    expect(result(exitEvent(run).workdir)).toBe("GITHUB_TOKEN=absent\nMURMUR_TEST_ALLOWED_VAR=present:visible-value")
    expect(run.stderr).toContain("GITHUB_TOKEN")
  })
})

describe("run: filesystem grant", () => {
  it("refuses .., absolute paths, symlinks out of the workdir and reading host files", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-fs-escape", capabilities: "  env:\n    allow: [ESCAPE_ID]\n" })
    const outside = mkdtempSync(join(tmpdir(), "outside-"))
    const workdir = mkdtempSync(join(tmpdir(), "workdir-"))
    symlinkSync(outside, join(workdir, "link-out"))
    const id = `${process.pid}-${Date.now()}`
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { ESCAPE_ID: id })
    expect(exitEvent(run).status).toBe("ok")
    expect(result(workdir).trim().split("\n")).toEqual(["blocked", "blocked", "blocked", "blocked"])
    expect(existsSync(join(outside, "escape.txt"))).toBe(false)
    expect(existsSync(`/tmp/capsule-escape-${id}.txt`)).toBe(false)
    expect(existsSync(join(workdir, "..", "..", "outside.txt"))).toBe(false)
    rmSync(outside, { recursive: true, force: true })
  })
})

describe("run: network grant", () => {
  let server: Server
  let port: number
  let hits = 0
  beforeAll(async () => {
    server = createServer((_, res) => {
      hits++
      res.writeHead(200, { "content-type": "text/plain" }).end("hi")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const attempt = async (allow: string | undefined) => {
    const capabilities = `  env:\n    allow: [TARGET_URL]\n${allow === undefined ? "" : `  network:\n    allow: [${allow}]\n`}`
    const dir = await makeCapsuleDir({ capsule: "capsule-network-attempt", capabilities })
    const run = await runCli(["run", dir, "--json"], { TARGET_URL: `http://127.0.0.1:${port}/` })
    expect(exitEvent(run).status).toBe("ok")
    return result(exitEvent(run).workdir)
  }

  it("denies every request without a network grant, before any connection", async () => {
    const before = hits
    expect(await attempt(undefined)).toBe("denied")
    expect(await attempt(`"http://127.0.0.1:${port + 1}"`)).toBe("denied")
    expect(await attempt(`"https://127.0.0.1:${port}"`)).toBe("denied")
    expect(hits).toBe(before)
  })

  it("allows a request a rule matches (scheme, host and port)", async () => {
    const before = hits
    expect(await attempt(`"http://127.0.0.1:${port}"`)).toBe("allowed:200")
    expect(await attempt(`"127.0.0.1:${port}"`)).toBe("allowed:200")
    expect(hits).toBe(before + 2)
  })
})

describe("run: limits and failures", () => {
  it("stops a spin loop at its deadline", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-spin-loop", capabilities: "  limits:\n    deadline_seconds: 1\n" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.code).toBe("E-RUN-001")
    expect(exitEvent(run).error.message).toMatch(/^capsule execution exceeded its 1s deadline and was interrupted; raise capabilities\.limits\.deadline_seconds/)
    expect(run.ms).toBeLessThan(15_000)
  })

  it("stops a memory balloon at the cap", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-memory-balloon", capabilities: "  limits:\n    memory_bytes: 16777216\n" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    const error = exitEvent(run).error
    expect(error.code).toBe("E-RUN-001")
    // 1 page + 128 pages held, the next 8 MiB (128 pages) refused: 257 pages > 256.
    expect(error.message).toBe(
      "capsule execution exceeded its configured resource limits: linear memory growth to 16842752 bytes exceeds capabilities.limits.memory_bytes (16777216)"
    )
  })

  it("refuses more core instances than capabilities.limits.instances", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-env-echo", capabilities: "  limits:\n    instances: 1\n" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.message).toBe(
      "capsule execution exceeded its configured resource limits: instance count 2 exceeds capabilities.limits.instances (1)"
    )
  })

  it("reports a trap with the guest's stderr, which never reaches the host's own output", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-trap" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    const event = exitEvent(run)
    expect(event.error.message).toMatch(/^capsule execution trapped: /)
    expect(event.error.stderr).toContain("about to trap")
    expect(run.stdout.trim().split("\n")).toHaveLength(1)
    expect(run.stderr).not.toContain("about to trap")
    expect(readFileSync(join(event.workdir, "logs", "guest.log"), "utf8")).toContain("about to trap")
  })

  it("refuses a component built against an unsupported WIT version, naming the interface", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-bad-version" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.message).toContain("murmur:capsule/run@0.2.0")
    expect(exitEvent(run).error.message).toContain("rebuild the artifact against the versioned WIT")
  })

  it("refuses a tool that imports an unsupported interface version", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-allowlisted", tools: { "echo-tool": "tool-bad-import" } })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.message).toContain("murmur:tool-registry/invoke@0.9.0")
  })

  it("refuses a bad manifest with its code and text", async () => {
    const dir = await makeCapsuleDir({ capsule: "capsule-trap", capabilities: "  limits:\n    memory_bytes: 0\n" })
    const run = await runCli(["run", dir, "--json"])
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.message).toContain("must be greater than zero")
  })
})

describe("validate and agent capsules", () => {
  it("validate: exit 0 with warnings for a good manifest, exit 1 with the error text for a bad one", async () => {
    const good = await makeCapsuleDir({ capsule: "capsule-trap", extra: "surprise: 1\n" })
    const ok = await runCli(["validate", good])
    expect(ok.code).toBe(0)
    expect(ok.stderr).toContain("W-SEC-019")
    const bad = await makeCapsuleDir({ capsule: "capsule-trap", capabilities: "  limits:\n    memory_bytes: 0\n" })
    const refused = await runCli(["validate", bad, "--json"])
    expect(refused.code).toBe(1)
    const report = JSON.parse(refused.stdout)
    expect(report.ok).toBe(false)
    expect(report.errors[0].message).toContain("must be greater than zero")
  })

  it("run loads an agent capsule as one (its missing driver is E-RUN-008), the key never printed", async () => {
    const dir = await makeCapsuleDir({
      capsule: "capsule-trap",
      extra: "inference:\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n  api_key: ${MY_TEST_KEY}\n  driver:\n    artifact: drv\n",
      tools: {}
    })
    writeFileSync(join(dir, "murmur.yaml"), readFileSync(join(dir, "murmur.yaml"), "utf8").replace("artifacts: []", "artifacts:\n  - name: drv\n    version: 0.1.0\n    runtime: driver"))
    const run = await runCli(["run", dir, "--json"], { MY_TEST_KEY: "sk-secret-value" })
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.code).toBe("E-RUN-008")
    expect(run.stdout + run.stderr).not.toContain("sk-secret-value")
  })
})

describe("inspect", () => {
  it("prints imports and exports with versions and whether the runtime can run it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "inspect-"))
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, "good.wasm"), await buildComponent("capsule-allowlisted"))
    writeFileSync(join(dir, "bad.wasm"), await buildComponent("capsule-bad-version"))
    const good = await runCli(["inspect", join(dir, "good.wasm")])
    expect(good.code).toBe(0)
    expect(good.stdout).toContain("murmur:tool-registry/invoke@0.1.0")
    expect(good.stdout).toContain("murmur:capsule/run@0.1.0")
    expect(good.stdout).toContain("runnable: yes, as a script capsule")
    const bad = await runCli(["inspect", join(dir, "bad.wasm"), "--json"])
    expect(bad.code).toBe(1)
    const report = JSON.parse(bad.stdout)
    expect(report.runnable).toBe(false)
    expect(report.exports).toContain("murmur:capsule/run@0.2.0")
  })
})
