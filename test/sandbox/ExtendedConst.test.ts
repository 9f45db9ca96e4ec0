import { describe, expect, it } from "vitest"
import { parse, print } from "@bytecodealliance/jco"
import { coreModules, extendedConstSites, lowerExtendedConst } from "../../src/sandbox/wasm/ExtendedConst.js"
import { sections } from "../lib/WasmSections.js"

/** The shape componentize-qjs links: a library importing its base, initializers relative to it. */
const library = (exportBase: boolean) =>
  parse(`(module $lib
    (import "env" "__memory_base" (global $base i32))
    (import "env" "memory" (memory 1))
    ${exportBase ? `(global (export "lib:memory_base") i32 (i32.const 100))` : ""}
    (global (export "g") i32 (i32.add (global.get $base) (i32.const 5)))
    (global (export "h") i32 (i32.const -7))
    (data (i32.add (global.get $base) (i32.const 3)) "x"))`)

describe("extendedConstSites", () => {
  it("names every extended initializer, globals and data alike", async () => {
    expect(extendedConstSites(await library(true))).toEqual(["module 0: global 1", "module 0: data 0"])
  })

  it("finds none in a module of plain constants", async () => {
    expect(extendedConstSites(await parse(`(module (global i32 (i32.const 1)))`))).toEqual([])
  })
})

describe("lowerExtendedConst", () => {
  it("folds a global initializer on an exported base into one i32.const and leaves other sections alone", async () => {
    const bytes = await library(true)
    const lowered = lowerExtendedConst(bytes)
    expect(await print(lowered)).toContain(`(global (;2;) i32 i32.const 105)`)
    expect(extendedConstSites(lowered)).toEqual(["module 0: data 0"])
    const before = sections(bytes)
    const after = sections(lowered)
    expect(after.map((s) => s.id)).toEqual(before.map((s) => s.id))
    for (const [i, s] of after.entries()) {
      if (s.id !== 6) expect(Buffer.from(s.body).equals(Buffer.from(before[i]!.body))).toBe(true)
    }
  })

  it("returns the very input when no base is exported", async () => {
    const bytes = await library(false)
    expect(lowerExtendedConst(bytes)).toBe(bytes)
  })

  it("sees a bare core module as a component of one module", async () => {
    const bytes = await library(true)
    expect(coreModules(bytes)).toEqual([bytes])
  })
})
