import { describe, expect, it } from "vitest"
import { parse, print, transpile } from "@bytecodealliance/jco"
import { Either } from "effect"
import * as fc from "fast-check"
import { GROW_FAILED_EXPORT } from "../../src/sandbox/wasm/GrowFailedExport.js"
import { type GrowProbeError, instrumentGrow } from "../../src/sandbox/wasm/GrowProbe.js"
import { capCoreModule } from "../../src/sandbox/wasm/MemoryCap.js"
import { buildComponent } from "../lib/components.js"
import { sections } from "../lib/WasmSections.js"

/** The slice of the JS WebAssembly API these tests use. */
interface WasmApi {
  validate(bytes: Uint8Array): boolean
  compile(bytes: Uint8Array): Promise<object>
  instantiate(module: object, imports?: object): Promise<{ readonly exports: Record<string, unknown> }>
  Global: new(descriptor: { value: "i32"; mutable?: boolean }, value: number) => object
}
const Wasm = (globalThis as unknown as { readonly WebAssembly: WasmApi }).WebAssembly

const PAGE = 65536

const instrument = (bytes: Uint8Array): Uint8Array => Either.getOrThrow(instrumentGrow(bytes))
const refusal = (bytes: Uint8Array): GrowProbeError => Either.getOrThrow(Either.flip(instrumentGrow(bytes)))
const cap = (bytes: Uint8Array, pages: number): Uint8Array =>
  Either.getOrThrow(capCoreModule(bytes, { memoryBytes: pages * PAGE, tableElements: 1000 }))

type Exports = Record<string, unknown> & { readonly grow: (...args: Array<number>) => number }
const instantiate = async (bytes: Uint8Array, imports?: object): Promise<Exports> =>
  (await Wasm.instantiate(await Wasm.compile(bytes), imports)).exports as Exports
const failed = (exports: Record<string, unknown>): number => (exports[GROW_FAILED_EXPORT] as { value: number }).value

const customSections = (bytes: Uint8Array) => sections(bytes).filter((s) => s.id === 0).map((s) => Array.from(s.body))
const count = (text: string, pattern: RegExp): number => text.match(pattern)?.length ?? 0

/** Stack-neutral snippets whose encodings put 0x40 bytes next to a grow (empty block types, -64, 64 in LEB, floats). */
const NOISE = [
  "nop",
  "(block (br 0))",
  "(block (result i32) (i32.const -64) (br 0)) drop",
  "(loop $l (br_if $l (i32.const 0)))",
  "(if (i32.const 1) (then nop) (else unreachable))",
  "(block (block (block (br_table 0 1 2 0 (i32.const 64)))))",
  "i64.const 0x4040404040 drop f32.const 3.0 drop f64.const 2.0 drop",
  "(i32.extend8_s (i32.const 64)) drop (i64.extend32_s (i64.const -64)) drop",
  "(i32.trunc_sat_f32_s (f32.const 64.5)) drop",
  "(select (result i32) (i32.const 1) (i32.const 2) (i32.const 0)) drop",
  "local.get 64 local.set 65",
  "i32.const 5 block (type 64) (param i32) (result i32) i32.const 64 i32.add end drop",
  "v128.const i32x4 64 64 64 64 v128.const i32x4 0x40404040 0 0 0 i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 31 i32x4.extract_lane 3 drop",
  "local.get $v i32.const 64 i32x4.replace_lane 2 local.set $v v128.const i64x2 64 64 i64x2.extract_lane 1 drop",
  "(if (memory.size) (then i32.const 0 v128.load offset=64 drop i32.const 0 local.get $v v128.load8_lane offset=64 3 local.set $v i32.const 64 v128.load32_zero drop i32.const 0 local.get $v v128.store16_lane offset=64 2))",
  "(memory.fill (i32.const 0) (i32.const 64) (i32.const 0)) (memory.copy (i32.const 0) (i32.const 0) (i32.const 0)) (memory.init $d (i32.const 0) (i32.const 0) (i32.const 0)) data.drop $d",
  "(table.size $t) drop (table.grow $t (ref.null func) (i32.const 0)) drop (table.fill $t (i32.const 0) (ref.null func) (i32.const 0)) (table.copy (i32.const 0) (i32.const 0) (i32.const 0)) (table.init $e (i32.const 0) (i32.const 0) (i32.const 0)) elem.drop $e",
  "(ref.is_null (ref.func $grow)) drop (ref.is_null (table.get $t (i32.const 0))) drop",
  "(if (memory.size) (then (i32.atomic.load offset=64 (i32.const 0)) drop (i64.atomic.rmw.add offset=64 (i32.const 0) (i64.const 0)) drop (memory.atomic.notify offset=64 (i32.const 0) (i32.const 0)) drop)) atomic.fence",
  "try i32.const 64 throw $x catch $x drop end try nop catch_all end",
  "block $out try try nop delegate $out catch_all end end"
]

/** A module whose `grow(delta, path)` reaches one of three `memory.grow` sites, each wrapped in noise. */
const growModule = (o: {
  initial: number
  maximum: number | undefined
  noise: ReadonlyArray<string>
  imports: boolean
}): Promise<Uint8Array> => {
  const n = (i: number) => o.noise[i % o.noise.length] ?? "nop"
  return parse(`(module
    ${o.imports ? `(import "env" "f" (func $f)) (import "env" "g" (global $g i32))` : ""}
    ${"(type (func)) ".repeat(64)}
    (type $bt (func (param i32) (result i32)))
    (memory (export "mem") ${o.initial}${o.maximum === undefined ? "" : ` ${o.maximum}`})
    (table $t 1 funcref)
    (elem $e funcref (ref.null func))
    (elem declare func $grow)
    (data $d "@@@@")
    (tag $x (param i32))
    ${o.imports ? `(global $h (mut i32) (global.get $g))` : ""}
    (func $grow (export "grow") (param $delta i32) (param $path i32) (result i32)
      (local ${"i32 ".repeat(70)}) (local $v v128)
      ${n(0)}
      (block $c
        (block $b
          (block $a ${n(1)} (br_table $a $b $c (local.get $path)))
          ${n(2)}
          (return (memory.grow (local.get $delta))))
        ${n(3)} local.get $delta memory.grow ${n(4)} return)
      ${n(5)}
      (if (result i32) (i32.const 1) (then (memory.grow (local.get $delta))) (else (i32.const 0))))
    (func (export "tail") (param i32 i32) (result i32) local.get 0 local.get 1 return_call $grow))`)
}

const envImports = { env: { f: () => {}, g: new Wasm.Global({ value: "i32" }, 7) } }

describe("instrumentGrow: behaviour", () => {
  it("every grow returns what the uninstrumented module returns, and a failed grow's delta is exported", async () => {
    const delta = fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }) },
      { weight: 2, arbitrary: fc.integer({ min: 64, max: 300 }) },
      { weight: 1, arbitrary: fc.constantFrom(-1, 0x7fff_ffff, 65536) }
    )
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 256 }),
        fc.integer({ min: 0, max: 8 }),
        fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined }),
        fc.array(fc.constantFrom(...NOISE), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.record({ delta, path: fc.integer({ min: 0, max: 3 }), tail: fc.boolean() }), { minLength: 1, maxLength: 8 }),
        async (capPages, initial0, extra, noise, imports, capFirst, steps) => {
          const initial = Math.min(initial0, capPages)
          const original = await growModule({ initial, maximum: extra === undefined ? undefined : initial + extra, noise, imports })
          const reference = cap(original, capPages)
          const instrumented = capFirst ? instrument(cap(original, capPages)) : cap(instrument(original), capPages)
          expect(Wasm.validate(instrumented)).toBe(true)
          expect(customSections(instrumented)).toEqual(customSections(original))
          const env = imports ? envImports : undefined
          const [plain, probed] = [await instantiate(reference, env), await instantiate(instrumented, env)]
          let lastFailed = 0
          expect(failed(probed)).toBe(0)
          for (const step of steps) {
            const run = (e: Exports) => step.tail ? (e["tail"] as Exports["grow"])(step.delta, step.path) : e.grow(step.delta, step.path)
            const result = run(probed)
            expect(result).toBe(run(plain))
            if (result === -1) lastFailed = step.delta | 0
            expect(failed(probed)).toBe(lastFailed)
          }
        }
      ),
      { numRuns: 150 }
    )
  })

  it("an 8 MiB request under a 16 MiB cap is reported exactly", async () => {
    const bytes = instrument(cap(await growModule({ initial: 9 * 16, maximum: undefined, noise: [], imports: false }), 256))
    const exports = await instantiate(bytes)
    expect(exports.grow(128, 0)).toBe(-1)
    expect(failed(exports)).toBe(128)
    expect(exports.grow(112, 1)).toBe(144)
    expect(failed(exports)).toBe(128)
  })
})

describe("instrumentGrow: module surgery", () => {
  it("appends the probe type when none matches, and inserts missing global and export sections", async () => {
    const original = await parse(`(module (memory 1 4) (func $g i32.const 1 memory.grow drop) (start $g))`)
    const out = instrument(original)
    expect(Wasm.validate(out)).toBe(true)
    const text = await print(out)
    expect(text).toMatch(/\(type \(;1;\) \(func \(param i32\) \(result i32\)\)\)/)
    expect(text).toMatch(/\(global \(;0;\) \(mut i32\) i32\.const 0\)/)
    expect(text).toContain(`(export "${GROW_FAILED_EXPORT}" (global 0))`)
    expect(count(text, /memory\.grow/g)).toBe(1)
    expect(text).toContain("call 1")
    expect(failed(await instantiate(out))).toBe(0)
  })

  it("reuses a matching type and counts imported functions and globals", async () => {
    const original = await parse(`(module
      (import "env" "f" (func)) (import "env" "g" (global i32))
      (global (mut i32) (i32.const 3))
      (memory 0 2)
      (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))`)
    const out = instrument(original)
    const text = await print(out)
    expect(count(text, /\(type \(;/g)).toBe(count(await print(original), /\(type \(;/g))
    expect(text).toContain(`(export "${GROW_FAILED_EXPORT}" (global 2))`)
    expect(text).toContain("call 2")
    const exports = await instantiate(out, envImports)
    expect(exports.grow(3)).toBe(-1)
    expect(failed(exports)).toBe(3)
  })

  it("leaves modules without memory 0, without memory.grow, or with a 64-bit memory 0 as they are", async () => {
    for (
      const wat of [
        `(module (func (export "f") (result i32) i32.const 64))`,
        `(module (memory 1) (func (export "f") (result i32) (block (result i32) (i32.const -64))))`,
        `(module (memory i64 1) (func (export "f") (result i64) (memory.grow (i64.const 1))))`,
        `(module (memory 1) (memory $m2 1) (func (result i32) (memory.grow $m2 (i32.const 1))))`
      ]
    ) {
      const original = await parse(wat)
      expect(instrumentGrow(original)).toEqual(Either.right(original))
    }
  })

  it("only rewrites grows of memory 0 in a multi-memory module", async () => {
    const out = instrument(await parse(`(module (memory 1) (memory $m2 1)
      (func (result i32) (drop (memory.grow $m2 (i32.const 1))) (memory.grow (i32.const 1))))`))
    const text = await print(out)
    expect(text).toContain("memory.grow $m2")
    expect(count(text, /memory\.grow/g)).toBe(2)
  })

  it("decodes try_table, call_ref and br_on_null around a grow", async () => {
    const out = instrument(await parse(`(module (memory 1) (tag $x) (type $ft (func (param i32) (result i32)))
      (elem declare func $f)
      (func $f (param i32) (result i32)
        (block $h (try_table (catch $x $h) (catch_all $h) (drop (memory.grow (local.get 0)))))
        (block $n (br_on_null $n (ref.func $f)) drop)
        (call_ref $ft (i32.const 64) (ref.func $f))))`))
    const text = await print(out)
    expect(count(text, /memory\.grow/g)).toBe(1)
    expect(text).toMatch(/call 1\n/)
  })
})

describe("instrumentGrow: refusals", () => {
  it("refuses unknown opcodes, truncation, components and a clashing export", async () => {
    const gc = await parse(`(module (memory 1) (type $s (struct))
      (func (drop (memory.grow (i32.const 1))) (drop (struct.new $s))))`)
    expect(refusal(gc)).toMatchObject({ reason: "Unsupported", message: expect.stringMatching(/opcode 0xfb/) })
    const plain = await parse(`(module (memory 1) (func (export "g") (param i32) (result i32) (memory.grow (local.get 0))))`)
    expect(refusal(plain.subarray(0, plain.length - 3)).reason).toBe("Malformed")
    expect(refusal(instrument(plain)).message).toMatch(/already exports "__murmur_grow_failed"/)
    expect(refusal(await parse(`(component)`)).reason).toBe("Unsupported")
  })
})

describe("instrumentGrow: a real QuickJS core module", () => {
  it("instruments, validates and compiles", async () => {
    const { files } = await transpile(await buildComponent("echo-tool"), { name: "c", instantiation: "sync", noTypescript: true })
    const cores = Object.entries(files).filter(([name]) => /\.core\d*\.wasm$/.test(name)).map(([, data]) => data as Uint8Array)
    const core = cores.reduce((a, b) => b.length > a.length ? b : a)
    const capped = cap(core, 256)
    const out = instrument(capped)
    expect(out).not.toBe(capped)
    expect(Wasm.validate(out)).toBe(true)
    await Wasm.compile(out)
    expect(customSections(out)).toEqual(customSections(core))
    const [before, after] = [await print(capped), await print(out)]
    const grows = count(before, /memory\.grow/g)
    expect(grows).toBeGreaterThan(0)
    expect(count(after, /memory\.grow/g)).toBe(1)
    expect(after).toMatch(/\(export "__murmur_grow_failed" \(global \d+\)\)/)
    const probe = [...after.matchAll(/\(func \(;(\d+);\)/g)].at(-1)![1]
    expect(count(after, new RegExp(`call ${probe}\\n`, "g"))).toBe(grows)
    for (const other of cores.filter((c) => c !== core)) expect(Wasm.validate(instrument(cap(other, 256)))).toBe(true)
  }, 120_000)
})
