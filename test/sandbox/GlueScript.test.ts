/**
 * The glue rewrite's one redirected call: `WebAssembly.promising(f)` goes through a helper that
 * behaves like the real call (same TypeError where there is no JSPI, the real function where
 * there is) without V8 re-parsing jco's instantiate body to word the error. Line numbers and
 * the other checks are in CodeCache.test.ts.
 */
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { Script } from "node:vm"
import { describe, expect, it } from "vitest"
import { ComponentCache } from "../../src/sandbox/component/ComponentCache.js"
import { glueScript, GlueShapeError, PROMISING_HELPER } from "../../src/sandbox/component/GlueScript.js"
import { buildComponent } from "../lib/components.js"

const cacheDirectory = new URL("../../.cache/cli-components", import.meta.url).pathname
const limits = { memoryBytes: 64 * 1024 * 1024, tableElements: 100_000 }

/** The shape jco emits around each call: try the JSPI wrapper, else keep the plain export. */
const glue = `"use components";
export function instantiate(getCoreModule, imports) {
  const exported = function exported() { return 42 };
  let wrapped;
  let caught;
  try {
    wrapped = WebAssembly.promising(exported);
  } catch (err) {
    caught = err;
    wrapped = exported;
  }
  return { exported, wrapped, caught };
}
export const _util = {}
`

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const instantiateOf = (source: string): any => new Script(source).runInThisContext()().instantiate()

describe("glue script: WebAssembly.promising", () => {
  it("without JSPI (Node 20) the call throws the same TypeError, so the glue falls back to the plain export", () => {
    expect(typeof (WebAssembly as unknown as Record<string, unknown>).promising).toBe("undefined")
    const script = glueScript(glue, "mini.js")
    expect(script).not.toContain("WebAssembly.promising(exported)")
    const out = instantiateOf(script)
    expect(out.wrapped).toBe(out.exported)
    expect(out.caught).toBeInstanceOf(TypeError)
    // What V8 itself says for the original call.
    let native: unknown
    try {
      ;(WebAssembly as unknown as { promising: (f: unknown) => unknown }).promising(out.exported)
    } catch (error) {
      native = error
    }
    expect(out.caught.message).toBe((native as Error).message)
  })

  it("with JSPI the real WebAssembly.promising is called, on WebAssembly, with the export", () => {
    const script = glueScript(glue, "mini.js")
    const calls: Array<{ self: unknown; fn: unknown }> = []
    const target = WebAssembly as unknown as Record<string, unknown>
    target.promising = function(this: unknown, fn: unknown) {
      calls.push({ self: this, fn })
      return "promising-wrapper"
    }
    try {
      const out = instantiateOf(script)
      expect(out.caught).toBeUndefined()
      expect(out.wrapped).toBe("promising-wrapper")
      expect(calls).toEqual([{ self: WebAssembly, fn: out.exported }])
    } finally {
      delete target.promising
    }
  })

  it("a glue that already uses the helper's name is refused", () => {
    expect(() => glueScript(glue.replace("let caught;", `let caught; const ${PROMISING_HELPER} = 1;`), "clash.js")).toThrow(GlueShapeError)
  })

  it("a real component's glue has its WebAssembly.promising calls redirected, and nothing else changed", async () => {
    const component = await Effect.runPromise(Effect.flatMap(ComponentCache, (cache) =>
      Effect.promise(() => buildComponent("echo-tool")).pipe(Effect.flatMap((bytes) => cache.load(bytes, limits)))
    ).pipe(Effect.provide(ComponentCache.layer({ directory: cacheDirectory }))))
    const esm = readFileSync(new URL(component.guest.jsUrl), "utf8")
    const script = readFileSync(component.guest.scriptPath, "utf8")
    const calls = esm.match(/\bWebAssembly\.promising\(/g)?.length ?? 0
    expect(calls).toBeGreaterThan(0)
    // Only the helper on the wrapper's first line still calls it.
    expect(script.split("\n").slice(1).join("\n")).not.toMatch(/\bWebAssembly\.promising\(/)
    expect(script.split(`${PROMISING_HELPER}(`).length - 1).toBe(calls)
    // Line by line, the script is the glue with only those calls (and the two exports) renamed.
    const lines = script.split("\n").slice(0, esm.split("\n").length)
    const expected = esm.split("\n").map((line) =>
      line.replace(/\bWebAssembly\.promising\(/g, `${PROMISING_HELPER}(`)
        .replace(/^export function instantiate\(/, "function instantiate(")
        .replace(/^export const _util = /, "const _util = ")
    )
    expect(lines.slice(1)).toEqual(expected.slice(1))
  })
})
