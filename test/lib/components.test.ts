/**
 * The fixture components build from source and carry the imports/exports (with versions) the
 * sandbox tests rely on.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import {
  buildComponent,
  cacheDir,
  componentPath,
  componentWorld,
  type ComponentWorld,
  type FixtureName,
  fixtureNames
} from "./components.js"
import { coreModules, extendedConstSites } from "../../src/sandbox/wasm/ExtendedConst.js"

const CAPSULE_RUN = "murmur:capsule/run@0.1.0"
const TOOL_RUN = "murmur:tool/run@0.1.0"
const INVOKE = "murmur:tool-registry/invoke@0.1.0"

/** The murmur:* imports and exports each fixture must have, exactly. */
const expected: Record<FixtureName, { readonly imports: ReadonlyArray<string>; readonly exports: ReadonlyArray<string> }> = {
  "echo-tool": { imports: [], exports: [TOOL_RUN] },
  "tool-flood-output": { imports: [], exports: [TOOL_RUN] },
  // a capsule importing invoke also imports murmur:tool/run for the `use`d types (as the reference's)
  "capsule-allowlisted": { imports: [TOOL_RUN, INVOKE], exports: [CAPSULE_RUN] },
  "capsule-unlisted": { imports: [TOOL_RUN, INVOKE], exports: [CAPSULE_RUN] },
  "capsule-env-echo": { imports: [], exports: [CAPSULE_RUN] },
  "capsule-fs-escape": { imports: [], exports: [CAPSULE_RUN] },
  "capsule-network-attempt": { imports: [], exports: [CAPSULE_RUN] },
  "capsule-spin-loop": { imports: [], exports: [CAPSULE_RUN] },
  "capsule-memory-balloon": { imports: [], exports: [CAPSULE_RUN] },
  "chunks-tool": { imports: ["murmur:text/chunks@0.1.0"], exports: [TOOL_RUN] },
  "request-input-tool": { imports: ["murmur:task/task@0.1.0"], exports: [TOOL_RUN] },
  "capsule-calls-tool": { imports: [TOOL_RUN, INVOKE], exports: [CAPSULE_RUN] },
  "counter-tool": { imports: [], exports: [TOOL_RUN] },
  "capsule-bad-version": { imports: [], exports: ["murmur:capsule/run@0.2.0"] },
  "tool-bad-import": { imports: [TOOL_RUN, "murmur:tool-registry/invoke@0.9.0"], exports: [TOOL_RUN] },
  "capsule-trap": { imports: [], exports: [CAPSULE_RUN] },
  "scripted-driver": { imports: ["murmur:text/chunks@0.1.0"], exports: [TOOL_RUN] },
  "capsule-send-message": { imports: ["murmur:message/send@0.1.0"], exports: [CAPSULE_RUN] },
  "capsule-manage": { imports: ["murmur:artifact-manager/manage@0.1.0"], exports: [CAPSULE_RUN] },
  "capsule-plant-links": { imports: [], exports: [CAPSULE_RUN] },
  "tool-plant-links": { imports: ["murmur:text/chunks@0.1.0"], exports: [TOOL_RUN] },
  "capsule-ro-probe": { imports: [], exports: [CAPSULE_RUN] },
  "tool-ro-probe": { imports: ["murmur:text/chunks@0.1.0"], exports: [TOOL_RUN] },
  "tool-state-probe": { imports: ["murmur:text/chunks@0.1.0"], exports: [TOOL_RUN] },
  "tool-throws": { imports: [], exports: [TOOL_RUN] },
  "hook-probe": {
    imports: ["murmur:conversation/read@0.1.0", "murmur:hook/lifecycle@0.8.0", "murmur:runtime/inference@0.3.0", "murmur:runtime/tokens@0.3.0", "murmur:task-io/read@0.1.0"],
    exports: ["murmur:hook/lifecycle@0.8.0"]
  }
}

const murmur = (names: ReadonlyArray<string>) => names.filter((n) => n.startsWith("murmur:")).sort()

const worlds = new Map<FixtureName, ComponentWorld>()
const timings: Array<string> = []

beforeAll(async () => {
  for (const name of fixtureNames) {
    const t0 = performance.now()
    const bytes = await buildComponent(name)
    timings.push(`${name} ${Math.round(performance.now() - t0)} ms ${bytes.length} B`)
    worlds.set(name, await componentWorld(bytes))
  }
  if (process.env["COMPONENTS_TIMINGS"] !== undefined) console.log(timings.join("\n"))
}, 300_000)

describe("fixture components", () => {
  it.each(fixtureNames.map((n) => [n]))("%s has the expected murmur imports and exports", (name) => {
    const world = worlds.get(name)!
    expect({ imports: murmur(world.imports), exports: murmur(world.exports) }).toEqual({
      imports: [...expected[name].imports].sort(),
      exports: [...expected[name].exports].sort()
    })
  })

  it("spin-loop and memory-balloon import nothing at all", () => {
    expect(worlds.get("capsule-spin-loop")!.imports).toEqual([])
    expect(worlds.get("capsule-memory-balloon")!.imports).toEqual([])
  })

  it("the WASI-using guests import what their behaviour needs", () => {
    const imports = (name: FixtureName) => worlds.get(name)!.imports
    expect(imports("capsule-network-attempt")).toEqual(
      expect.arrayContaining([
        "wasi:http/outgoing-handler@0.2.12",
        "wasi:http/types@0.2.12",
        "wasi:cli/environment@0.2.12",
        "wasi:filesystem/preopens@0.2.12"
      ])
    )
    expect(imports("capsule-trap")).toEqual(expect.arrayContaining(["wasi:cli/stderr@0.2.12"]))
    expect(imports("capsule-env-echo")).toEqual(
      expect.arrayContaining(["wasi:cli/environment@0.2.12", "wasi:filesystem/preopens@0.2.12"])
    )
    expect(imports("capsule-allowlisted")).toEqual(expect.arrayContaining(["wasi:filesystem/preopens@0.2.12"]))
  })

  it("no fixture needs --experimental-wasm-extended-const", async () => {
    const modules: Array<string> = []
    for (const name of fixtureNames) {
      const bytes = await buildComponent(name)
      expect(extendedConstSites(bytes), name).toEqual([])
      for (const m of coreModules(bytes)) modules.push(Buffer.from(m).toString("base64"))
    }
    // compile every core module in a plain `node` (no V8 flags), as a runtime worker would
    const script = `
      let input = ""
      process.stdin.on("data", (d) => (input += d))
      process.stdin.on("end", async () => {
        const failures = []
        for (const [i, b64] of JSON.parse(input).entries()) {
          try { await WebAssembly.compile(Buffer.from(b64, "base64")) } catch (e) { failures.push(i + ": " + e.message) }
        }
        console.log(JSON.stringify(failures))
      })`
    const child = spawnSync(process.execPath, ["-e", script], { input: JSON.stringify(modules), encoding: "utf8" })
    expect(child.status, child.stderr).toBe(0)
    expect(JSON.parse(child.stdout)).toEqual([])
  })

  it("caches by content hash under .cache/components and in memory", async () => {
    const file = await componentPath("echo-tool")
    expect(path.dirname(file)).toBe(cacheDir)
    expect(path.basename(file)).toMatch(/^[0-9a-f]{64}\.wasm$/)
    expect(Buffer.compare(fs.readFileSync(file), await buildComponent("echo-tool"))).toBe(0)
    const [a, b] = await Promise.all([buildComponent("capsule-trap"), buildComponent("capsule-trap")])
    expect(a).toBe(b)
  })
})
