/**
 * The glue's V8 code cache: the first successful run of a component leaves one, later workers
 * of that component load the glue with it, and a cache V8 refuses costs nothing but the cache.
 * (What it saves is measured in docs/benchmarks.md, not asserted here.)
 */
import { Effect, Layer } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ComponentCache } from "../../src/sandbox/component/ComponentCache.js"
import { glueScript, GlueShapeError } from "../../src/sandbox/component/GlueScript.js"
import { Sandbox, silentHost } from "../../src/sandbox/Sandbox.js"
import { buildComponent } from "../lib/components.js"

const cacheDirectory = new URL("../../.cache/cli-components", import.meta.url).pathname
const limits = { memoryBytes: 64 * 1024 * 1024, tableElements: 100_000 }

const echo = Effect.gen(function*() {
  const cache = yield* ComponentCache
  const component = yield* cache.load(yield* Effect.promise(() => buildComponent("echo-tool")), limits)
  const sandbox = yield* Sandbox
  const run = (data: string) =>
    sandbox.run({
      role: { kind: "tool", name: "echo-tool" },
      component,
      grant: { preopen: mkdtempSync(join(tmpdir(), "codecache-")), env: {}, network: [], memoryBytes: limits.memoryBytes, instances: 1000 },
      deadlineSeconds: 30,
      input: { data },
      allowlist: [],
      tools: {},
      inTask: false,
      sessionId: "ses_test",
      artifacts: [],
      host: silentHost
    }).pipe(Effect.map((outcome) => outcome.result?.data))
  return { component, sandbox, run }
})

const provide = <A, E>(effect: Effect.Effect<A, E, Sandbox | ComponentCache>) =>
  Effect.runPromise(Effect.scoped(effect.pipe(
    Effect.provide(Layer.merge(ComponentCache.layer({ directory: cacheDirectory }), Sandbox.layer()))
  )))

describe("glue code cache", () => {
  it("the second run of a component gets the cache the first one made", async () => {
    await provide(Effect.gen(function*() {
      const { run, sandbox } = yield* echo
      expect(yield* run("one")).toBe("one")
      expect(yield* sandbox.codeCacheStats()).toEqual({ none: 1, accepted: 0, rejected: 0, made: 1 })
      expect(yield* run("two")).toBe("two")
      expect(yield* sandbox.codeCacheStats()).toEqual({ none: 1, accepted: 1, rejected: 0, made: 2 })
    }))
  })

  it("is refreshed after a component's first three runs, then only used", async () => {
    await provide(Effect.gen(function*() {
      const { run, sandbox } = yield* echo
      for (const data of ["a", "b", "c", "d", "e"]) expect(yield* run(data)).toBe(data)
      expect(yield* sandbox.codeCacheStats()).toEqual({ none: 1, accepted: 4, rejected: 0, made: 3 })
    }))
  })

  it("a refused cache still runs correctly, and the run leaves a good one", async () => {
    await provide(Effect.gen(function*() {
      const { component, run, sandbox } = yield* echo
      yield* sandbox.putCodeCache(component.guest.scriptPath, new Uint8Array(4096).fill(7))
      expect(yield* run("refused")).toBe("refused")
      expect(yield* sandbox.codeCacheStats()).toEqual({ none: 0, accepted: 0, rejected: 1, made: 1 })
      expect(yield* run("again")).toBe("again")
      expect(yield* sandbox.codeCacheStats()).toEqual({ none: 0, accepted: 1, rejected: 1, made: 2 })
    }))
  })

  it("the glue script is the ESM glue's lines, wrapped; other shapes fail loudly", async () => {
    const component = await provide(Effect.flatMap(ComponentCache, (cache) =>
      Effect.promise(() => buildComponent("echo-tool")).pipe(Effect.flatMap((bytes) => cache.load(bytes, limits)))))
    const esm = readFileSync(new URL(component.guest.jsUrl), "utf8")
    const script = readFileSync(component.guest.scriptPath, "utf8")
    expect(script.split("\n").length).toBe(esm.split("\n").length + 2)
    expect(() => glueScript(`import x from "y"\n${esm}`, "extra-import.js")).toThrow(GlueShapeError)
    expect(() => glueScript(esm.replace(/^export const _util = /m, "const _util = "), "no-util.js")).toThrow(GlueShapeError)
    expect(() => glueScript(`${esm}\nawait 1\n`, "top-level-await.js")).toThrow(GlueShapeError)
  })
})
