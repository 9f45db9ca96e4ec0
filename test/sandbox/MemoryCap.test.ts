import { describe, expect, it } from "vitest"
import { parse, print } from "@bytecodealliance/jco"
import { Either } from "effect"
import * as fc from "fast-check"
import { capCoreModule, type CapLimits, type MemoryCapError, pagesFor } from "../../src/sandbox/wasm/MemoryCap.js"
import { sections } from "../lib/WasmSections.js"

/** The slice of the JS WebAssembly API these tests use (the project's `lib` has no DOM types). */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>
  instantiate(module: object, imports?: object): Promise<{ readonly exports: Record<string, unknown> }>
  Memory: new(descriptor: { initial: number; maximum?: number; shared?: boolean }) => object
  Table: new(descriptor: { initial: number; maximum?: number; element: "anyfunc" }) => object
}
const Wasm = (globalThis as unknown as { readonly WebAssembly: WasmApi }).WebAssembly

const PAGE = 65536

const cap = (bytes: Uint8Array, limits: CapLimits): Uint8Array => Either.getOrThrow(capCoreModule(bytes, limits))
const refusal = (bytes: Uint8Array, limits: CapLimits): MemoryCapError => Either.getOrThrow(Either.flip(capCoreModule(bytes, limits)))
const limits = (pages: number, tableElements = 100_000): CapLimits => ({ memoryBytes: pages * PAGE, tableElements })

const instantiate = async (bytes: Uint8Array, imports?: object) =>
  (await Wasm.instantiate(await Wasm.compile(bytes), imports)).exports as Record<string, (...args: Array<number>) => number>

const memoryModule = (initial: number, maximum: number | undefined, shared = false) =>
  parse(`(module
    (memory (export "mem") ${initial}${maximum === undefined ? "" : ` ${maximum}`}${shared ? " shared" : ""})
    (func (export "grow") (param i32) (result i32) local.get 0 memory.grow)
    (func (export "size") (result i32) memory.size))`)

const tableModule = (initial: number, maximum: number | undefined) =>
  parse(`(module
    (table (export "tab") ${initial}${maximum === undefined ? "" : ` ${maximum}`} funcref)
    (func (export "grow") (param i32) (result i32) ref.null func local.get 0 table.grow 0))`)


describe("pagesFor", () => {
  it.each([[0, 0], [65535, 0], [65536, 1], [100_000, 1], [536_870_912, 8192]])("%d bytes → %d pages", (bytes, pages) => {
    expect(pagesFor(bytes)).toBe(pages)
  })
})

describe("capCoreModule: memories", () => {
  it("growing up to the cap succeeds and past it fails, for any initial/maximum/cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 24 }),
        fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
        fc.integer({ min: 0, max: 32 }),
        async (initial, extra, capPages) => {
          const maximum = extra === undefined ? undefined : initial + extra
          const original = await memoryModule(initial, maximum)
          const result = capCoreModule(original, limits(capPages))
          if (initial > capPages) {
            expect(Either.isLeft(result) && result.left.reason).toBe("MemoryLimit")
            return
          }
          const effective = Math.min(maximum ?? Infinity, capPages)
          const { grow, size } = await instantiate(Either.getOrThrow(result))
          expect(size!()).toBe(initial)
          expect(grow!(effective - initial)).toBe(initial)
          expect(size!()).toBe(effective)
          expect(grow!(1)).toBe(-1)
          expect(size!()).toBe(effective)
        }
      ),
      { numRuns: 60 }
    )
  })

  it("changes nothing but the limits and is idempotent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 4 }),
        fc.option(fc.integer({ min: 4, max: 70_000 }), { nil: undefined }),
        fc.integer({ min: 4, max: 70_000 }),
        fc.integer({ min: 3, max: 200_000 }),
        fc.boolean(),
        async (initial, maximum, capPages, tableCap, importMemory) => {
          const max = maximum === undefined ? "" : ` ${Math.min(maximum, 65536)}`
          // Node 20 has no multi-memory, so the one memory is either imported or defined.
          const original = await parse(`(module
            (import "env" "f" (func (param i32)))
            ${importMemory ? `(import "env" "mem" (memory ${initial}${max}))` : ""}
            (import "env" "g" (global (mut i32)))
            (import "env" "tab" (table 2 externref))
            (table 3 funcref)
            ${importMemory ? "" : `(memory ${initial}${max})`}
            (global i32 (i32.const 7))
            (func (export "run") i32.const 1 call 0)
            (data (memory 0) (i32.const 0) "hello")
            (@custom "note" "untouched"))`)
          const capped = cap(original, { memoryBytes: capPages * PAGE, tableElements: tableCap })
          const before = sections(original)
          const after = sections(capped)
          expect(after.map((s) => s.id)).toStrictEqual(before.map((s) => s.id))
          before.forEach((section, i) => {
            if (![2, 4, 5].includes(section.id)) expect(after[i]!.body).toStrictEqual(section.body)
          })
          expect(cap(capped, { memoryBytes: capPages * PAGE, tableElements: tableCap })).toBe(capped)
          await Wasm.compile(capped)
        }
      ),
      { numRuns: 40 }
    )
  })

  it("returns the same bytes when every maximum already fits", async () => {
    const original = await memoryModule(1, 4)
    expect(cap(original, limits(4))).toBe(original)
    const noMemory = await parse(`(module (func (export "f")))`)
    expect(cap(noMemory, limits(0))).toBe(noMemory)
  })

  it("adds a maximum to a memory that declares none", async () => {
    const capped = cap(await memoryModule(2, undefined), limits(8192))
    expect(await print(capped)).toContain("(memory (;0;) 2 8192)")
  })

  it("rounds the byte cap down to whole pages", async () => {
    const capped = cap(await memoryModule(1, undefined), { memoryBytes: 100_000, tableElements: 10 })
    expect(await print(capped)).toContain("(memory (;0;) 1 1)")
  })

  it("never writes a wasm32 maximum above 65536 pages", async () => {
    const capped = cap(await memoryModule(1, undefined), { memoryBytes: 8 * 2 ** 30, tableElements: 10 })
    expect(await print(capped)).toContain("(memory (;0;) 1 65536)")
    await Wasm.compile(capped)
  })

  it("refuses a minimum above the cap with the reference limiter's text", async () => {
    const error = refusal(await memoryModule(17, undefined), { memoryBytes: 16 * PAGE, tableElements: 10 })
    expect(error.reason).toBe("MemoryLimit")
    expect(error.message).toBe(
      "linear memory growth to 1114112 bytes exceeds capabilities.limits.memory_bytes (1048576)"
    )
  })

  it("caps shared memories and keeps them shared", async () => {
    const capped = cap(await memoryModule(1, 100, true), limits(3))
    expect(await print(capped)).toContain("(memory (;0;) 1 3 shared)")
    const { grow } = await instantiate(capped)
    expect(grow!(2)).toBe(1)
    expect(grow!(1)).toBe(-1)
  })

  it("caps 64-bit memories with 64-bit limits", async () => {
    const capped = cap(await parse(`(module (memory i64 1 100) (memory i64 2))`), limits(10))
    const text = await print(capped)
    expect(text).toContain("(memory (;0;) i64 1 10)")
    expect(text).toContain("(memory (;1;) i64 2 10)")
  })

  it("caps imported memories, so a host memory above the cap no longer links", async () => {
    const original = await parse(`(module (import "env" "mem" (memory 1 100)) (func (export "f")))`)
    const capped = cap(original, limits(10))
    expect(await print(capped)).toContain(`(import "env" "mem" (memory (;0;) 1 10))`)
    await instantiate(capped, { env: { mem: new Wasm.Memory({ initial: 1, maximum: 10 }) } })
    await expect(instantiate(capped, { env: { mem: new Wasm.Memory({ initial: 1, maximum: 100 }) } })).rejects.toThrow()
  })

  it("keeps an over-long encoding of the minimum byte for byte", async () => {
    // memory section: one memory, flags 0x00, min = 1 written as the two-byte LEB128 0x81 0x00
    const original = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 4, 1, 0x00, 0x81, 0x00)
    const capped = cap(original, limits(7))
    expect(Array.from(capped)).toStrictEqual([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 5, 1, 0x01, 0x81, 0x00, 7])
    await Wasm.compile(capped)
  })
})

describe("capCoreModule: tables", () => {
  it("growing up to the cap succeeds and past it fails, for any initial/maximum/cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 50 }),
        fc.option(fc.integer({ min: 0, max: 80 }), { nil: undefined }),
        fc.integer({ min: 0, max: 100 }),
        async (initial, extra, tableCap) => {
          const maximum = extra === undefined ? undefined : initial + extra
          const result = capCoreModule(await tableModule(initial, maximum), limits(1, tableCap))
          if (initial > tableCap) {
            expect(Either.isLeft(result) && result.left.reason).toBe("TableLimit")
            return
          }
          const effective = Math.min(maximum ?? Infinity, tableCap)
          const { grow } = await instantiate(Either.getOrThrow(result))
          expect(grow!(effective - initial)).toBe(initial)
          expect(grow!(1)).toBe(-1)
        }
      ),
      { numRuns: 60 }
    )
  })

  it("refuses a minimum above the cap with the reference limiter's text", async () => {
    const error = refusal(await tableModule(12, undefined), limits(1, 10))
    expect(error.reason).toBe("TableLimit")
    expect(error.message).toBe("table growth to 12 elements exceeds capabilities.limits.table_elements (10)")
  })

  it("caps imported tables and tables with an initializer", async () => {
    const original = await parse(`(module
      (import "env" "tab" (table 1 funcref))
      (table 4 funcref (ref.null func))
      (table 2 50 externref))`)
    const text = await print(cap(original, limits(1, 20)))
    expect(text).toContain(`(import "env" "tab" (table (;0;) 1 20 funcref))`)
    expect(text).toContain("(table (;1;) 4 20 funcref ref.null func)")
    expect(text).toContain("(table (;2;) 2 20 externref)")
  })
})

describe("capCoreModule: refusals", () => {
  it("refuses a component", async () => {
    const error = refusal(await parse(`(component)`), limits(1))
    expect(error.reason).toBe("Unsupported")
    expect(error.message).toContain("a component, not a core module")
  })

  it.each([
    ["empty input", Uint8Array.of()],
    ["bad magic", Uint8Array.of(1, 2, 3, 4, 1, 0, 0, 0)],
    ["truncated section", Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 9, 1, 0)],
    ["trailing bytes in the memory section", Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 4, 1, 0, 1, 0xff)],
    ["over-long LEB128", Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 8, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0)],
    ["shared memory without a maximum", Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 3, 1, 0x02, 1)]
  ])("refuses %s as malformed", (_name, bytes) => {
    expect(refusal(bytes, limits(1)).reason).toBe("Malformed")
  })

  it("refuses custom page sizes rather than guessing the page", () => {
    const bytes = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 5, 4, 1, 0x08, 1, 0)
    expect(refusal(bytes, limits(1)).reason).toBe("Unsupported")
  })

  it("refuses invalid limits", () => {
    expect(refusal(Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0), { memoryBytes: -1, tableElements: 1 }).reason)
      .toBe("Unsupported")
  })

  it("never throws on a valid module with corrupted bytes", async () => {
    const original = await parse(`(module
      (import "env" "mem" (memory 1 9))
      (import "env" "tab" (table 1 funcref))
      (table 4 funcref (ref.null func))
      (global (mut i64) (i64.const -5))
      (func (export "f") (result i32) i32.const 42))`)
    fc.assert(
      fc.property(fc.nat({ max: original.length - 1 }), fc.integer({ min: 0, max: 255 }), (index, byte) => {
        const bytes = Uint8Array.from(original)
        bytes[index] = byte
        const result = capCoreModule(bytes, limits(2, 10))
        if (Either.isRight(result)) expect(result.right.length).toBeGreaterThanOrEqual(8)
      }),
      { numRuns: 1000 }
    )
  })

  it("never throws on arbitrary bytes after a valid header", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (tail) => {
        const bytes = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...tail)
        const result = capCoreModule(bytes, limits(2, 10))
        if (Either.isLeft(result)) expect(["Malformed", "Unsupported", "MemoryLimit", "TableLimit"]).toContain(result.left.reason)
      }),
      { numRuns: 1000 }
    )
  })
})
