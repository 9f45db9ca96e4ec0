/**
 * The package as a new user gets it: `npm pack` (once), the tarball installed in a temporary
 * project (dependencies from the npm cache, the registry only for what the cache lacks), the
 * consumer programs of docs/library.md typechecked strictly against the installed types and run,
 * and the shipped example run through the installed bin. `npm test` builds before vitest runs,
 * so the pack skips `prepack` (the same build); run `npm run build` first when running this alone.
 */
import { execFile } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const run = promisify(execFile)
const repo = join(import.meta.dirname, "..", "..")
const consumerSources = join(import.meta.dirname, "consumer")
let project = ""
let tarball = ""

const node = (args: ReadonlyArray<string>, timeout = 30_000) =>
  run(process.execPath, [...args], { cwd: project, timeout, env: { ...process.env, NO_COLOR: "1" } })

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), "capsule-runtime-consumer-"))
  const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", project], { cwd: repo, timeout: 60_000 })
  const [info] = JSON.parse(packed.stdout) as ReadonlyArray<{ readonly filename: string; readonly files: ReadonlyArray<{ readonly path: string }> }>
  const files = new Set(info!.files.map((file) => file.path))
  // The shipped guests travel prebuilt: an installed copy never needs the guest toolchain.
  for (const guest of ["drivers/scripted/scripted.wasm", "drivers/openai/openai.wasm", "examples/hello/artifacts/greet/greet.wasm"]) {
    assert.isTrue(files.has(guest), `${guest} is in the package`)
  }
  // `build` composes the tool authors' helper module from these in an installed copy too.
  for (const part of ["kit/core.js", "kit/files.js", "kit/http.js", "kit/env.js", "kit/tool.d.ts"]) assert.isTrue(files.has(part), `${part} is in the package`)
  tarball = join(project, info!.filename)
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: project, timeout: 120_000 })
  cpSync(consumerSources, project, { recursive: true })
  const tsconfig = JSON.parse(readFileSync(join(consumerSources, "tsconfig.json"), "utf8"))
  tsconfig.compilerOptions.typeRoots = [join(repo, "node_modules", "@types")]
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify(tsconfig))
}, 180_000)

afterAll(() => {
  if (project !== "") rmSync(project, { recursive: true, force: true })
})

describe("the packed package", () => {
  it("installs as a library whose import runs nothing, with the CLI apart", async () => {
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "capsule-runtime", "package.json"), "utf8"))
    assert.isUndefined(manifest.private)
    assert.strictEqual(manifest.peerDependencies.effect.startsWith("^3."), true)
    const probe = await node(["--input-type=module", "-e", "const m = await import('capsule-runtime'); const c = await import('capsule-runtime/cli'); console.log(typeof m.Door.layer, typeof m.CapsuleRuntime.layerDirectory, typeof c.cli)"])
    assert.strictEqual(probe.stdout.trim(), "function function function")
  })

  it("typechecks the consumer programs strictly against the installed types", async () => {
    const tsc = join(repo, "node_modules", "typescript", "bin", "tsc")
    const checked = await node([tsc, "-p", "tsconfig.json"], 60_000).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }))
    assert.isFalse("failed" in checked, checked.stdout)
    assert.isTrue(existsSync(join(project, "out", "OwnCapsule.js")))
  })

  it("(a) puts a capsule of its own behind Door.layer on the runtime's server and drives a task over HTTP", async () => {
    const { stdout } = await node(["out/OwnCapsule.js"])
    const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
    assert.strictEqual(report.card, "greeter")
    assert.strictEqual(report.task.status.state, "completed")
    assert.include(JSON.stringify(report.task), "Hello, Ada, from greeter!")
    assert.strictEqual(report.retained, 1)
  })

  it("(b) serves a capsule directory on the runtime's server, as `serve <dir>` does", async () => {
    const { stdout } = await node(["out/Directory.js"], 60_000)
    const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
    assert.strictEqual(report.card, "hello")
    assert.match(report.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
    assert.strictEqual(report.task.status.state, "completed")
    assert.include(JSON.stringify(report.task), "Ada")
  })

  it("(c) mounts doors (own capsules, a directory, the echo capsule) at paths of the host's router beside its own route, on its server", async () => {
    const { stdout } = await node(["out/TwoDoors.js"], 60_000)
    const report = JSON.parse(stdout.trim().split("\n").at(-1)!)
    assert.strictEqual(report.health, "ok")
    assert.deepStrictEqual(report.cards.map((card: { name: string }) => card.name), ["alpha", "beta", "hello", "scripted-echo"])
    assert.match(report.cards[0].url, /^http:\/\/127\.0\.0\.1:\d+\/alpha\/$/)
    assert.match(report.cards[1].url, /^http:\/\/127\.0\.0\.1:\d+\/beta\/$/)
    assert.match(report.cards[2].url, /^http:\/\/127\.0\.0\.1:\d+\/agents\/hello\/$/)
    assert.deepStrictEqual(report.tasks.map((task: { status: { state: string } }) => task.status.state), ["completed", "completed", "completed"])
    assert.include(JSON.stringify(report.tasks[1]), "Hello, Ada, from beta!")
    assert.include(JSON.stringify(report.tasks[2]), "Ada")
  })

  it("(d) runs the shipped example through the installed bin", async () => {
    const { stdout } = await run("npx", ["--no-install", "capsule-runtime", "run", "node_modules/capsule-runtime/examples/hello", "--task", "Ada"], {
      cwd: project,
      timeout: 60_000
    })
    assert.include(stdout, "status:  ok")
    const workdir = /workdir: (.+)/.exec(stdout)![1]!
    assert.include(readFileSync(join(workdir, "out", "result.txt"), "utf8"), "Ada")
  })
})
