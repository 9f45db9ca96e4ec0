/**
 * Binary surgery on WebAssembly components built by componentize-qjs, so that they run on a
 * stock Node 20 (V8 11.3) without `--experimental-wasm-extended-const`.
 *
 * componentize-qjs links its QuickJS runtime as a shared-everything dynamic library: the library
 * module imports `env.__memory_base` / `env.__table_base` and initializes some globals with
 * extended constant expressions (`global.get $base; i32.const K; i32.add`). The bases are plain
 * constants exported by the component's `$main` module as `<library>:memory_base` /
 * `<library>:table_base`, so each such initializer can be folded to `i32.const (base + K)`.
 *
 * {@link lowerExtendedConst} walks every core module of a component (nested components too),
 * folds those initializers, re-encodes the enclosing section sizes and leaves every other byte
 * untouched. {@link extendedConstSites} reports initializers Node 20 would still reject. Both read
 * with the one `WasmReader`; the build (`build/QuickJsBuild.ts`) and the component cache share them.
 */
import { concatBytes, encodeSleb, encodeUleb, readSections, type Section, WasmReader } from "./WasmReader.js"
import { skipConstOp, skipValType } from "./WasmTypes.js"

// ---------------------------------------------------------------------------------------------
// Constant expressions
// ---------------------------------------------------------------------------------------------

type ConstOp =
  | { readonly op: "i32.const" | "i64.const"; readonly value: bigint }
  | { readonly op: "global.get"; readonly index: number }
  | { readonly op: "i32.add" | "i32.sub" | "i32.mul" | "i64.add" | "i64.sub" | "i64.mul" }
  | { readonly op: "other-mvp" }

const ARITHMETIC: ReadonlyMap<number, ConstOp> = new Map<number, ConstOp>([
  [0x6a, { op: "i32.add" }],
  [0x6b, { op: "i32.sub" }],
  [0x6c, { op: "i32.mul" }],
  [0x7c, { op: "i64.add" }],
  [0x7d, { op: "i64.sub" }],
  [0x7e, { op: "i64.mul" }]
])

/** Reads a constant expression up to and including its `end`. */
const readConstExpr = (r: WasmReader): ReadonlyArray<ConstOp> => {
  const ops: Array<ConstOp> = []
  for (let opcode = r.u8(); opcode !== 0x0b; opcode = r.u8()) {
    const arithmetic = ARITHMETIC.get(opcode)
    if (arithmetic !== undefined) ops.push(arithmetic)
    else if (opcode === 0x41) ops.push({ op: "i32.const", value: r.sleb(32) })
    else if (opcode === 0x42) ops.push({ op: "i64.const", value: r.sleb(64) })
    else if (opcode === 0x23) ops.push({ op: "global.get", index: r.u32() })
    else {
      skipConstOp(r, opcode)
      ops.push({ op: "other-mvp" })
    }
  }
  return ops
}

const EXTENDED: ReadonlySet<ConstOp> = new Set(ARITHMETIC.values())

const isExtended = (ops: ReadonlyArray<ConstOp>): boolean => ops.some((o) => EXTENDED.has(o))

// ---------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------

const HEADER = 8

const payloadOf = (bytes: Uint8Array, s: Section) => new WasmReader(bytes, s.start, s.end)

/** A section with its id and LEB128 size, as the bytes of a module or component carry it. */
const encodeSection = (id: number, payload: Uint8Array): ReadonlyArray<Uint8Array> => [
  Uint8Array.of(id),
  encodeUleb(BigInt(payload.length)),
  payload
]

/** Calls `visit` on each subsection of a custom section's payload (after its name). */
const forEachSubsection = (r: WasmReader, visit: (id: number, sub: WasmReader) => void): void => {
  while (!r.done) {
    const id = r.u8()
    const size = r.u32()
    visit(id, new WasmReader(r.bytes, r.pos, r.pos + size))
    r.skip(size)
  }
}

const isComponent = (bytes: Uint8Array): boolean => bytes[4] === 0x0d && bytes[6] === 0x01

// ---------------------------------------------------------------------------------------------
// Core modules
// ---------------------------------------------------------------------------------------------

type BaseKind = "memory_base" | "table_base"

interface ModuleFacts {
  readonly name: string | undefined
  /** global index -> "memory_base" | "table_base" for imported env.__memory_base/__table_base */
  readonly baseImports: ReadonlyMap<number, BaseKind>
  /** exported global name -> constant value, for `i32.const` initialized globals */
  readonly constExports: ReadonlyMap<string, bigint>
}

const skipLimits = (r: WasmReader): void => {
  const flags = r.u32()
  r.uleb(64)
  if (flags & 1) r.uleb(64)
}

/** The imported globals of an import section, in order, with the base each one is (if any). */
const importedGlobals = (r: WasmReader): Array<BaseKind | undefined> => {
  const globals: Array<BaseKind | undefined> = []
  for (let count = r.u32(); count > 0; count--) {
    const module = r.name()
    const field = r.name()
    const kind = r.u8()
    if (kind === 0x00) r.u32()
    else if (kind === 0x01) {
      skipValType(r)
      skipLimits(r)
    } else if (kind === 0x02) skipLimits(r)
    else if (kind === 0x03) {
      skipValType(r)
      r.u8()
      const base = module === "env" && (field === "__memory_base" || field === "__table_base")
        ? field.slice(2) as BaseKind
        : undefined
      globals.push(base)
    } else if (kind === 0x04) {
      r.u8()
      r.u32()
    } else r.fail(`unknown import kind ${kind}`)
  }
  return globals
}

/** The module's own name, from the "name" custom section. */
const moduleName = (r: WasmReader): string | undefined => {
  if (r.name() !== "name") return undefined
  let name: string | undefined
  forEachSubsection(r, (id, sub) => {
    if (id === 0) name = sub.name()
  })
  return name
}

const moduleFacts = (bytes: Uint8Array): ModuleFacts => {
  let name: string | undefined
  const baseImports = new Map<number, BaseKind>()
  let imported = 0
  const globalInits = new Map<number, ReadonlyArray<ConstOp>>()
  const exportedGlobals: Array<[string, number]> = []
  for (const s of readSections(bytes)) {
    const r = payloadOf(bytes, s)
    if (s.id === 0) name = moduleName(r) ?? name
    else if (s.id === 2) {
      const globals = importedGlobals(r)
      globals.forEach((base, i) => base !== undefined && baseImports.set(imported + i, base))
      imported += globals.length
    } else if (s.id === 6) {
      for (let i = 0, count = r.u32(); i < count; i++) {
        skipValType(r)
        r.u8()
        globalInits.set(imported + i, readConstExpr(r))
      }
    } else if (s.id === 7) {
      for (let count = r.u32(); count > 0; count--) {
        const field = r.name()
        const kind = r.u8()
        const index = r.u32()
        if (kind === 0x03) exportedGlobals.push([field, index])
      }
    }
  }
  const constExports = new Map<string, bigint>()
  for (const [field, index] of exportedGlobals) {
    const init = globalInits.get(index)
    const only = init?.length === 1 ? init[0] : undefined
    if (only !== undefined && only.op === "i32.const") constExports.set(field, only.value)
  }
  return { name, baseImports, constExports }
}

/** The global section's payload with `global.get <base>; i32.const K; i32.add` folded, or undefined when none is. */
const foldGlobals = (
  r: WasmReader,
  base: (globalIndex: number) => bigint | undefined
): Uint8Array | undefined => {
  const count = r.u32()
  const out: Array<Uint8Array> = [encodeUleb(BigInt(count))]
  let changed = false
  for (let i = 0; i < count; i++) {
    const typeStart = r.pos
    skipValType(r)
    r.u8()
    const header = r.bytes.subarray(typeStart, r.pos)
    const exprStart = r.pos
    const ops = readConstExpr(r)
    const [a, b, c] = ops
    const value = a?.op === "global.get" ? base(a.index) : undefined
    if (ops.length === 3 && value !== undefined && b?.op === "i32.const" && c?.op === "i32.add") {
      out.push(header, Uint8Array.of(0x41), encodeSleb(BigInt.asIntN(32, value + b.value)), Uint8Array.of(0x0b))
      changed = true
    } else {
      out.push(header, r.bytes.subarray(exprStart, r.pos))
    }
  }
  return changed ? concatBytes(out) : undefined
}

/** Folds `global.get <base>; i32.const K; i32.add` global initializers of one core module. */
const foldModule = (
  bytes: Uint8Array,
  componentName: string | undefined,
  bases: ReadonlyMap<string, bigint>
): Uint8Array => {
  const facts = moduleFacts(bytes)
  const name = facts.name ?? componentName
  if (facts.baseImports.size === 0 || name === undefined) return bytes
  const sections = readSections(bytes)
  const globalSection = sections.find((s) => s.id === 6)
  if (globalSection === undefined) return bytes
  const payload = foldGlobals(payloadOf(bytes, globalSection), (index) => {
    const kind = facts.baseImports.get(index)
    return kind === undefined ? undefined : bases.get(`${name}:${kind}`)
  })
  if (payload === undefined) return bytes
  return concatBytes([
    bytes.subarray(0, HEADER),
    ...sections.flatMap((s) => encodeSection(s.id, s === globalSection ? payload : bytes.subarray(s.start, s.end)))
  ])
}

/** Extended initializers of a data section, as "data <i>". */
const dataSites = (r: WasmReader): Array<string> => {
  const sites: Array<string> = []
  for (let i = 0, count = r.u32(); i < count; i++) {
    const flags = r.u32()
    if (flags === 2) r.u32()
    if (flags !== 1 && isExtended(readConstExpr(r))) sites.push(`data ${i}`)
    r.skip(r.u32())
  }
  return sites
}

/** Extended offsets and items of an element section, as "elem <i>" / "elem <i> item <j>". */
const elemSites = (r: WasmReader): Array<string> => {
  const sites: Array<string> = []
  for (let i = 0, count = r.u32(); i < count; i++) {
    const flags = r.u32()
    if (flags === 2 || flags === 6) r.u32()
    if ((flags & 1) === 0 && isExtended(readConstExpr(r))) sites.push(`elem ${i}`)
    if (flags === 1 || flags === 2 || flags === 3) r.u8()
    else if (flags === 5 || flags === 6 || flags === 7) skipValType(r)
    for (let j = 0, n = r.u32(); j < n; j++) {
      if (flags & 4) {
        if (isExtended(readConstExpr(r))) sites.push(`elem ${i} item ${j}`)
      } else r.u32()
    }
  }
  return sites
}

/** Extended initializers of a global section, as "global <i>". */
const globalSites = (r: WasmReader): Array<string> => {
  const sites: Array<string> = []
  for (let i = 0, count = r.u32(); i < count; i++) {
    skipValType(r)
    r.u8()
    if (isExtended(readConstExpr(r))) sites.push(`global ${i}`)
  }
  return sites
}

/** Lists the extended constant expressions of one core module (globals, data and elements). */
const moduleExtendedSites = (bytes: Uint8Array): Array<string> =>
  readSections(bytes).flatMap((s) =>
    s.id === 6
      ? globalSites(payloadOf(bytes, s))
      : s.id === 11
      ? dataSites(payloadOf(bytes, s))
      : s.id === 9
      ? elemSites(payloadOf(bytes, s))
      : []
  )

// ---------------------------------------------------------------------------------------------
// Components
// ---------------------------------------------------------------------------------------------

/** Reads a sort; a core sort carries a second byte. True for the core module sort (0x00 0x11). */
const isCoreModuleSort = (r: WasmReader): boolean => {
  const sort = r.u8()
  return sort === 0x00 && r.u8() === 0x11
}

/**
 * Names of a component's core modules from its "component-name" custom section (wit-component
 * names the linked libraries there, e.g. "componentize_qjs_runtime.wasm"), by core module index.
 */
const coreModuleNames = (bytes: Uint8Array, sections: ReadonlyArray<Section>): Map<number, string> => {
  const names = new Map<number, string>()
  for (const s of sections) {
    if (s.id !== 0) continue
    const r = payloadOf(bytes, s)
    if (r.name() !== "component-name") continue
    forEachSubsection(r, (id, sub) => {
      if (id !== 1 || !isCoreModuleSort(sub)) return
      for (let count = sub.u32(); count > 0; count--) {
        const index = sub.u32()
        names.set(index, sub.name())
      }
    })
  }
  return names
}

/** How many core modules an alias section adds to the core module index space. */
const aliasedCoreModules = (r: WasmReader): number => {
  let modules = 0
  for (let count = r.u32(); count > 0; count--) {
    const coreModule = isCoreModuleSort(r)
    const tag = r.u8()
    if (tag === 0x00 || tag === 0x01) {
      r.u32()
      r.name()
    } else if (tag === 0x02) {
      r.u32()
      r.u32()
    } else r.fail(`unknown alias target ${tag}`)
    if (coreModule) modules++
  }
  return modules
}

type ModuleVisitor = (module: Uint8Array, name: string | undefined) => Uint8Array

/** Calls `visit` on every core module (depth-first) and re-encodes what it returns. */
const mapCoreModules = (bytes: Uint8Array, visit: ModuleVisitor): Uint8Array => {
  if (!isComponent(bytes)) return visit(bytes, undefined)
  const sections = readSections(bytes)
  const names = coreModuleNames(bytes, sections)
  const parts: Array<Uint8Array> = [bytes.subarray(0, HEADER)]
  let changed = false
  let moduleIndex = 0
  for (const s of sections) {
    const payload = bytes.subarray(s.start, s.end)
    let next = payload
    if (s.id === 1) next = visit(payload, names.get(moduleIndex++))
    else if (s.id === 4) next = mapCoreModules(payload, visit)
    else if (s.id === 6) moduleIndex += aliasedCoreModules(payloadOf(bytes, s))
    if (next !== payload) changed = true
    parts.push(...encodeSection(s.id, next))
  }
  return changed ? concatBytes(parts) : bytes
}

/** Every core module of a component, depth-first (the bytes of each embedded module). */
export const coreModules = (component: Uint8Array): Array<Uint8Array> => {
  const modules: Array<Uint8Array> = []
  mapCoreModules(component, (m) => {
    modules.push(m)
    return m
  })
  return modules
}

/**
 * Folds the `__memory_base` / `__table_base` extended-const global initializers of a
 * componentize-qjs component into plain `i32.const`s. Returns the input unchanged when there is
 * nothing to fold.
 */
export const lowerExtendedConst = (component: Uint8Array): Uint8Array => {
  const bases = new Map<string, bigint>()
  for (const m of coreModules(component)) {
    for (const [field, value] of moduleFacts(m).constExports) {
      if (/:(memory|table)_base$/.test(field)) bases.set(field, value)
    }
  }
  if (bases.size === 0) return component
  return mapCoreModules(component, (m, name) => foldModule(m, name, bases))
}

/** Extended constant expressions left in a component, as "module <i>: <site>" strings. */
export const extendedConstSites = (component: Uint8Array): Array<string> =>
  coreModules(component).flatMap((m, i) => moduleExtendedSites(m).map((site) => `module ${i}: ${site}`))
