/**
 * `capabilities.filesystem.read_only` enforced in the guest filesystem (issue 8 item 3), with
 * real components under `run`: the script capsule itself (`capsule-ro-probe`), a tool it invokes
 * (`tool-ro-probe`, whole-workdir preopen) and a scoped tool, whose entry is made relative to its
 * preopen. Every change is refused `not-permitted` (Wasmtime's answer for a preopen without write
 * permissions), the subtree keeps its bytes, and a write outside it still works.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type CapsuleDirOptions, exitEvent, makeCapsuleDir, runCli } from "../lib/CapsuleDirs.js"
import { snapshot as snapshotTree } from "../lib/TreeSnapshot.js"

const cleanups: Array<() => void> = []

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
})

const STEPS = [
  "create",
  "overwrite",
  "append",
  "truncate",
  "unlink",
  "rename-out",
  "rename-in",
  "mkdir",
  "symlink",
  "rmdir",
  "hard-link",
  "set-times",
  "normalised",
  "through-link"
]

const allRefused = [...STEPS.map((step) => `${step}: refused:not-permitted`), "outside: ok"]

const snapshot = (root: string) => snapshotTree(root, { withMtime: true })

/** A workdir holding the read-only subtree `<at>/ro` (keep.txt, an empty sub/). */
const workdirWith = (at = "") => {
  const workdir = mkdtempSync(join(tmpdir(), "read-only-"))
  cleanups.push(() => rmSync(workdir, { recursive: true, force: true }))
  const ro = join(workdir, at, "ro")
  mkdirSync(join(ro, "sub"), { recursive: true })
  writeFileSync(join(ro, "keep.txt"), "KEEP")
  return { workdir, ro }
}

const capsule = async (options: CapsuleDirOptions) => {
  const dir = await makeCapsuleDir(options)
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const lines = (path: string) => readFileSync(path, "utf8").split("\n")

describe("read_only: the script capsule", () => {
  it("refuses all changes to ro/ with not-permitted; ro/ keeps its bytes; a write outside works", async () => {
    const dir = await capsule({ capsule: "capsule-ro-probe", capabilities: "  filesystem:\n    read_only: [ro]\n" })
    const { ro, workdir } = workdirWith()
    const before = snapshot(ro)
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"])
    expect(exitEvent(run).status).toBe("ok")
    expect(lines(join(workdir, "out", "result.txt"))).toEqual(allRefused)
    expect(snapshot(ro)).toEqual(before)
    expect(readFileSync(join(workdir, "outside.txt"), "utf8")).toBe("written outside")
  })

  it("an entry is normalised (`./ro/`) and covers the subtree whatever path reaches it", async () => {
    const dir = await capsule({ capsule: "capsule-ro-probe", capabilities: "  filesystem:\n    read_only: [\"./ro/\"]\n" })
    const { ro, workdir } = workdirWith()
    const before = snapshot(ro)
    await runCli(["run", dir, "--workdir", workdir, "--json"])
    expect(lines(join(workdir, "out", "result.txt"))).toEqual(allRefused)
    expect(snapshot(ro)).toEqual(before)
  })

  it("without read_only the same steps go through (the probe can change ro/)", async () => {
    const dir = await capsule({ capsule: "capsule-ro-probe" })
    const { workdir } = workdirWith()
    await runCli(["run", dir, "--workdir", workdir, "--json"])
    const report = lines(join(workdir, "out", "result.txt"))
    expect(report.slice(0, 3)).toEqual(["create: ok", "overwrite: ok", "append: ok"])
    expect(report.at(-1)).toBe("outside: ok")
  })
})

describe("read_only: tools", () => {
  const callsProbe = (extra: Partial<CapsuleDirOptions> = {}): CapsuleDirOptions => ({
    capsule: "capsule-calls-tool",
    tools: { "tool-ro-probe": "tool-ro-probe" },
    capabilities: "  env:\n    allow: [TOOL_NAME, TOOL_DATA]\n  filesystem:\n    read_only: [ro, data/ro]\n",
    ...extra
  })

  it("a tool with the whole workdir as its preopen gets the same refusals", async () => {
    const dir = await capsule(callsProbe())
    const { ro, workdir } = workdirWith()
    const before = snapshot(ro)
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { TOOL_NAME: "tool-ro-probe", TOOL_DATA: "\"ro\"" })
    expect(exitEvent(run).status).toBe("ok")
    expect(lines(join(workdir, "ro-report.txt"))).toEqual(allRefused)
    expect(lines(join(workdir, "out", "result.txt"))).toEqual(allRefused)
    expect(snapshot(ro)).toEqual(before)
  })

  it("a scoped tool: the workdir-relative entry data/ro is its ro/", async () => {
    const dir = await capsule(callsProbe({ toolEntries: { "tool-ro-probe": "    capabilities:\n      filesystem:\n        scope: data\n" } }))
    const { ro, workdir } = workdirWith("data")
    const before = snapshot(ro)
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { TOOL_NAME: "tool-ro-probe", TOOL_DATA: "\"ro\"" })
    expect(exitEvent(run).status).toBe("ok")
    expect(lines(join(workdir, "data", "ro-report.txt"))).toEqual(allRefused)
    expect(snapshot(ro)).toEqual(before)
  })
})
