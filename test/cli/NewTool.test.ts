/**
 * `new tool <dir> --http | --files` through the binary: a tool made inside a capsule's
 * `artifacts/` says the entry to add (and, for --http, the grant); the flags are refused with
 * E-NEW-002 where they mean nothing or together. What the templates do when built and run is
 * test/build/ToolKit.test.ts's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCli } from "../lib/CapsuleDirs.js"

const scratch = mkdtempSync(join(tmpdir(), "new-tool-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe("new tool --http / --files", () => {
  it("inside a capsule's artifacts/, names the entry to add and the grant an HTTP tool needs", async () => {
    const agent = await runCli(["new", "agent", join(scratch, "cap")])
    expect(agent.code, agent.stderr).toBe(0)
    const made = await runCli(["new", "tool", join(scratch, "cap", "artifacts", "fetch"), "--http"])
    expect(made.code, made.stderr).toBe(0)
    expect(made.stdout).toContain("murmur.yaml's artifacts:\n  - name: fetch\n    runtime: tool\n    source: artifacts/fetch\n    local_source: true\n")
    expect(made.stdout).toContain("capabilities.network.allow")
    const world = readFileSync(join(scratch, "cap", "artifacts", "fetch", "world.wit"), "utf8")
    expect(world).toContain("import wasi:http/outgoing-handler@0.2.12;")
    expect(readFileSync(join(scratch, "cap", "artifacts", "fetch", "tool.ts"), "utf8")).toContain(`from "capsule-runtime/tool"`)
    expect(existsSync(join(scratch, "cap", "artifacts", "fetch", "capsule-runtime-tool.d.ts"))).toBe(true)
  })

  it("--files makes a notes tool whose world imports the workdir's preopen", async () => {
    const made = await runCli(["new", "tool", join(scratch, "notes"), "--files"])
    expect(made.code, made.stderr).toBe(0)
    expect(readFileSync(join(scratch, "notes", "world.wit"), "utf8")).toContain("import wasi:filesystem/preopens@0.2.12;")
    expect(made.stdout).toContain("build")
  })

  it("refuses the flags together, and on anything but a tool, with E-NEW-002 and nothing written", async () => {
    const both = await runCli(["new", "tool", join(scratch, "both"), "--http", "--files"])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain("error[E-NEW-002]: choose one of --http and --files")
    const agent = await runCli(["new", "agent", join(scratch, "agent-http"), "--http"])
    expect(agent.code).toBe(2)
    expect(agent.stderr).toContain("error[E-NEW-002]: --http and --files choose what a new tool does; they do not apply to agent")
    expect(existsSync(join(scratch, "both"))).toBe(false)
    expect(existsSync(join(scratch, "agent-http"))).toBe(false)
  })
})
