/**
 * Issue 12, as a capsule author meets it through `node dist/main.js`: `new` templates that
 * build, validate and run at once; `build` incremental by digest; a raw componentize-qjs
 * component (extended-const initializers) that `inspect` calls runnable now loads; bad flag
 * values are one coded line with exit 2; help piped into a file has no ANSI.
 * The templates are built once into .cache/author-flow/<digest of the templates>/, so later
 * runs find them up to date.
 */
import { createHash } from "node:crypto"
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { assembleWit } from "../../src/build/GuestWit.js"
import { endTurn, ofType, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const repo = new URL("../..", import.meta.url).pathname
const templatesDigest = createHash("sha256")
  .update(readFileSync(join(repo, "dist/cli/Templates.js")))
  .update(readFileSync(join(repo, "examples/script/capsule.js")))
  .update(readFileSync(join(repo, "drivers/scripted/driver.js")))
  .digest("hex")
  .slice(0, 16)
const root = join(repo, ".cache", "author-flow", templatesDigest)
const dir = (kind: string) => join(root, `my-${kind}`)

beforeAll(async () => {
  mkdirSync(root, { recursive: true })
  await Promise.all(["agent", "tool", "hook", "script"].map(async (kind) => {
    if (!existsSync(join(dir(kind), "murmur.yaml"))) {
      const made = await runCli(["new", kind, dir(kind)])
      expect(made.code, made.stderr).toBe(0)
    }
    const built = await runCli(["build", dir(kind)], {}, 120_000)
    expect(built.code, built.stderr).toBe(0)
  }))
}, 180_000)

describe("new + build + validate + run", () => {
  it("an agent template validates strictly and runs a task through its tool and shell", async () => {
    const checked = await runCli(["validate", dir("agent"), "--strict"])
    expect(checked.code, checked.stderr).toBe(0)
    const run = await runCli(["run", dir("agent"), "--task", "Ada", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const exit = JSON.parse(run.stdout.trim().split("\n").at(-1)!)
    expect(readFileSync(join(exit.workdir, "out", "result.txt"), "utf8")).toContain("shouted \"Ada\"")
  })

  it("a script template runs and writes out/result.txt", async () => {
    const run = await runCli(["run", dir("script"), "--json"])
    expect(run.code, run.stderr).toBe(0)
    const exit = JSON.parse(run.stdout.trim().split("\n").at(-1)!)
    expect(readFileSync(join(exit.workdir, "out", "result.txt"), "utf8")).toBe("Hello from a script capsule!\n")
  })

  it("a TypeScript tool template builds into a component inspect calls runnable as a tool", async () => {
    const checked = await runCli(["validate", dir("tool"), "--strict"])
    expect(checked.code, checked.stderr).toBe(0)
    const inspected = await runCli(["inspect", join(dir("tool"), "my-tool.wasm")])
    expect(inspected.code).toBe(0)
    expect(inspected.stdout).toContain("runnable: yes, as a tool or driver")
  })

  it("a TypeScript hook template builds into a hook that sends an empty answer back once", async () => {
    const inspected = await runCli(["inspect", join(dir("hook"), "my-hook.wasm")])
    expect(inspected.stdout).toContain("runnable: yes, as a hook")
    const capsule = await makeAgentCapsuleDir({ driverConfig: { replies: [endTurn(" "), endTurn("now an answer")] } })
    const manifest = readFileSync(join(capsule, "murmur.yaml"), "utf8").replace("\ninference:\n",
      `\n  - name: my-hook\n    runtime: hook\n    source: ${dir("hook")}\n    local_source: true\n    capabilities: { task_io: { read: true } }\ninference:\n`)
    writeFileSync(join(capsule, "murmur.yaml"), manifest)
    const run = await runCli(["run", capsule, "--task", "say something", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const reopened = ofType(traceLines(exitEvent(run).records), "task_reopened")
    rmSync(capsule, { recursive: true, force: true })
    expect(reopened).toEqual([expect.objectContaining({ hook_name: "my-hook", reason: "the answer was empty; answer the task" })])
  })

  it("build is incremental: an unchanged guest is up to date, one line per guest", async () => {
    const again = await runCli(["build", dir("agent")])
    expect(again.code).toBe(0)
    expect(again.stdout.trim().split("\n").map((line) => line.split(" → ")[0])).toEqual(["up to date driver scripted", "up to date tool shout"])
  })

  it("new refuses a directory that is not empty, with a code", async () => {
    const again = await runCli(["new", "agent", dir("agent")])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/^error\[E-NEW-001\]: .* already exists and is not empty/)
  })
})

describe("inspect and the loader agree", () => {
  it("a component straight out of componentize-qjs (extended-const) loads and runs", async () => {
    const raw = join(root, "raw-script")
    rmSync(raw, { recursive: true, force: true })
    cpSync(dir("script"), raw, { recursive: true, filter: (path) => !path.includes("workdir") && !path.endsWith(".wasm") && !path.includes(".stamp") })
    const { componentize } = await import("componentize-qjs")
    const witPath = join(raw, "assembled.wit")
    writeFileSync(witPath, assembleWit(readFileSync(join(raw, "world.wit"), "utf8")))
    const entry = join(raw, "capsule.js")
    const { component } = await componentize({ witPath, jsSource: readFileSync(entry, "utf8"), jsPath: entry, moduleRoot: raw, world: "capsule", sync: true })
    writeFileSync(join(raw, "capsule.wasm"), component)
    const inspected = await runCli(["inspect", join(raw, "capsule.wasm")])
    expect(inspected.stdout).toContain("runnable: yes")
    const run = await runCli(["run", raw])
    expect(run.code, run.stderr).toBe(0)
  }, 60_000)
})

describe("the command line as a person meets it", () => {
  // One process end to end (stderr, exit 2); every other flag's refusal is in CommandLine.test.ts, in process.
  it.each([
    [["serve", "--port", "70000"], "error[E-CLI-001]: --port: '70000' is out of range; expected an integer from 0 to 65535"]
  ])("%j is one coded line naming the flag, exit 2, no stack trace", async (args, line) => {
    const result = await runCli(args)
    expect(result.code).toBe(2)
    expect(result.stderr.trim()).toBe(line)
    expect(result.stdout).toBe("")
  })

  it("help piped into a file has no ANSI codes, and shows placeholders and defaults", async () => {
    const help = await runCli(["serve", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).not.toMatch(/\x1b\[/)
    expect(help.stdout).toContain("--port PORT")
    expect(help.stdout).toContain("default 32")
    expect(help.stdout).toContain("--keep-sessions N")
    const top = await runCli(["--help"])
    expect(top.stdout).not.toMatch(/\x1b\[/)
    for (const command of ["new", "build", "validate"]) expect(top.stdout).toContain(command)
  })
})
