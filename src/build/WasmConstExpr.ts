/**
 * Binary surgery on WebAssembly components built by componentize-qjs, so that the test fixtures
 * run on a stock Node 20 (V8 11.3) without `--experimental-wasm-extended-const`.
 *
 * componentize-qjs links its QuickJS runtime as a shared-everything dynamic library: the library
 * module imports `env.__memory_base` / `env.__table_base` and initializes some globals with
 * extended constant expressions (`global.get $base; i32.const K; i32.add`). The bases are plain
 * constants exported by the component's `$main` module as `<library>:memory_base` /
 * `<library>:table_base`, so each such initializer can be folded to `i32.const (base + K)`.
 *
 * {@link lowerExtendedConst} walks every core module of a component (nested components too),
 * folds those initializers, re-encodes the enclosing section sizes and leaves every other byte
 * untouched. {@link extendedConstSites} reports initializers Node 20 would still reject.
 */

// ---------------------------------------------------------------------------------------------
// LEB128 and byte reading
// ---------------------------------------------------------------------------------------------

class Reader {
  constructor(readonly bytes: Uint8Array, public pos = 0, readonly end = bytes.length) {}

  get done(): boolean {
    return this.pos >= this.end
  }

  byte(): number {
    if (this.pos >= this.end) throw new Error(`wasm: unexpected end at ${this.pos}`)
    return this.bytes[this.pos++]!
  }

  u32(): number {
    let result = 0
    let shift = 0
    for (;;) {
      const b = this.byte()
      result += (b & 0x7f) * 2 ** shift
      if ((b & 0x80) === 0) return result
      shift += 7
      if (shift > 35) throw new Error("wasm: u32 LEB too long")
    }
  }

  /** Signed LEB128 as a bigint (i32 or i64 immediates). */
  sleb(): bigint {
    let result = 0n
    let shift = 0n
    let b: number
    do {
      b = this.byte()
      result |= BigInt(b & 0x7f) << shift
      shift += 7n
    } while (b & 0x80)
    if (b & 0x40) result -= 1n << shift
    return result
  }

  skip(n: number): void {
    this.pos += n
    if (this.pos > this.end) throw new Error("wasm: unexpected end")
  }

  name(): string {
    const len = this.u32()
    const s = new TextDecoder().decode(this.bytes.subarray(this.pos, this.pos + len))
    this.skip(len)
    return s
  }
}

const uleb = (value: number): Array<number> => {
  const out: Array<number> = []
  let v = value
  do {
    let b = v % 128
    v = Math.floor(v / 128)
    if (v !== 0) b |= 0x80
    out.push(b)
  } while (v !== 0)
  return out
}

const sleb = (value: bigint): Array<number> => {
  const out: Array<number> = []
  let v = value
  for (;;) {
    const b = Number(v & 0x7fn)
    v >>= 7n
    const signBit = (b & 0x40) !== 0
    if ((v === 0n && !signBit) || (v === -1n && signBit)) {
      out.push(b)
      return out
    }
    out.push(b | 0x80)
  }
}

const concat = (parts: ReadonlyArray<Uint8Array | ReadonlyArray<number>>): Uint8Array => {
  const total = parts.reduce((n, p) => n + p.length, 0)
  const out = new Uint8Array(total)
  let off = 0
  for (const p of parts) {
    out.set(p, off)
    off += p.length
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Constant expressions
// ---------------------------------------------------------------------------------------------

type ConstOp =
  | { readonly op: "i32.const" | "i64.const"; readonly value: bigint }
  | { readonly op: "global.get"; readonly index: number }
  | { readonly op: "i32.add" | "i32.sub" | "i32.mul" | "i64.add" | "i64.sub" | "i64.mul" }
  | { readonly op: "other-mvp" }

const EXTENDED: ReadonlySet<string> = new Set(["i32.add", "i32.sub", "i32.mul", "i64.add", "i64.sub", "i64.mul"])

/** Reads a constant expression up to and including its `end`. */
const readConstExpr = (r: Reader): ReadonlyArray<ConstOp> => {
  const ops: Array<ConstOp> = []
  for (;;) {
    const opcode = r.byte()
    switch (opcode) {
      case 0x0b:
        return ops
      case 0x41:
        ops.push({ op: "i32.const", value: r.sleb() })
        break
      case 0x42:
        ops.push({ op: "i64.const", value: r.sleb() })
        break
      case 0x43:
        r.skip(4)
        ops.push({ op: "other-mvp" })
        break
      case 0x44:
        r.skip(8)
        ops.push({ op: "other-mvp" })
        break
      case 0x23:
        ops.push({ op: "global.get", index: r.u32() })
        break
      case 0xd0:
        r.sleb() // heap type
        ops.push({ op: "other-mvp" })
        break
      case 0xd2:
        r.u32()
        ops.push({ op: "other-mvp" })
        break
      case 0x6a:
        ops.push({ op: "i32.add" })
        break
      case 0x6b:
        ops.push({ op: "i32.sub" })
        break
      case 0x6c:
        ops.push({ op: "i32.mul" })
        break
      case 0x7c:
        ops.push({ op: "i64.add" })
        break
      case 0x7d:
        ops.push({ op: "i64.sub" })
        break
      case 0x7e:
        ops.push({ op: "i64.mul" })
        break
      default:
        throw new Error(`wasm: unsupported opcode 0x${opcode.toString(16)} in a constant expression`)
    }
  }
}

const isExtended = (ops: ReadonlyArray<ConstOp>): boolean => ops.some((o) => EXTENDED.has(o.op))

// ---------------------------------------------------------------------------------------------
// Core modules
// ---------------------------------------------------------------------------------------------

interface Section {
  readonly id: number
  readonly start: number // payload start
  readonly end: number // payload end
}

const HEADER = 8

const readSections = (bytes: Uint8Array): Array<Section> => {
  const r = new Reader(bytes, HEADER)
  const sections: Array<Section> = []
  while (!r.done) {
    const id = r.byte()
    const size = r.u32()
    sections.push({ id, start: r.pos, end: r.pos + size })
    r.skip(size)
  }
  return sections
}

const isComponent = (bytes: Uint8Array): boolean => bytes[4] === 0x0d && bytes[6] === 0x01

/** Skips a value type (numeric, vector or reference type). */
const skipValType = (r: Reader): void => {
  const t = r.byte()
  if (t === 0x63 || t === 0x64) r.sleb() // (ref null? ht)
}

interface ModuleFacts {
  readonly name: string | undefined
  /** global index -> "memory_base" | "table_base" for imported env.__memory_base/__table_base */
  readonly baseImports: ReadonlyMap<number, "memory_base" | "table_base">
  readonly importedGlobals: number
  /** exported global name -> constant value, for `i32.const` initialized globals */
  readonly constExports: ReadonlyMap<string, bigint>
}

const moduleFacts = (bytes: Uint8Array): ModuleFacts => {
  let name: string | undefined
  const baseImports = new Map<number, "memory_base" | "table_base">()
  let importedGlobals = 0
  const globalInits = new Map<number, ReadonlyArray<ConstOp>>()
  const exportedGlobals: Array<[string, number]> = []
  for (const s of readSections(bytes)) {
    const r = new Reader(bytes, s.start, s.end)
    if (s.id === 0) {
      if (r.name() !== "name") continue
      while (!r.done) {
        const sub = r.byte()
        const size = r.u32()
        if (sub === 0) name = new Reader(bytes, r.pos, r.pos + size).name()
        r.skip(size)
      }
    } else if (s.id === 2) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        const module = r.name()
        const field = r.name()
        const kind = r.byte()
        if (kind === 0x00) r.u32()
        else if (kind === 0x01) {
          skipValType(r)
          const flags = r.u32()
          r.u32()
          if (flags & 1) r.u32()
        } else if (kind === 0x02) {
          const flags = r.u32()
          r.u32()
          if (flags & 1) r.u32()
        } else if (kind === 0x03) {
          skipValType(r)
          r.byte()
          if (module === "env" && field === "__memory_base") baseImports.set(importedGlobals, "memory_base")
          if (module === "env" && field === "__table_base") baseImports.set(importedGlobals, "table_base")
          importedGlobals++
        } else if (kind === 0x04) {
          r.byte()
          r.u32()
        } else throw new Error(`wasm: unknown import kind ${kind}`)
      }
    } else if (s.id === 6) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        skipValType(r)
        r.byte()
        globalInits.set(importedGlobals + i, readConstExpr(r))
      }
    } else if (s.id === 7) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        const field = r.name()
        const kind = r.byte()
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
  return { name, baseImports, importedGlobals, constExports }
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
  const r = new Reader(bytes, globalSection.start, globalSection.end)
  const count = r.u32()
  const out: Array<Uint8Array | Array<number>> = [uleb(count)]
  let changed = false
  for (let i = 0; i < count; i++) {
    const typeStart = r.pos
    skipValType(r)
    r.byte()
    const header = bytes.subarray(typeStart, r.pos)
    const exprStart = r.pos
    const ops = readConstExpr(r)
    const [a, b, c] = ops
    const kind = a?.op === "global.get" ? facts.baseImports.get(a.index) : undefined
    const base = kind === undefined ? undefined : bases.get(`${name}:${kind}`)
    if (ops.length === 3 && kind !== undefined && base !== undefined && b?.op === "i32.const" && c?.op === "i32.add") {
      const folded = BigInt.asIntN(32, base + b.value)
      out.push(header, [0x41, ...sleb(folded), 0x0b])
      changed = true
    } else {
      out.push(header, bytes.subarray(exprStart, r.pos))
    }
  }
  if (!changed) return bytes
  const payload = concat(out)
  const parts: Array<Uint8Array | Array<number>> = [bytes.subarray(0, HEADER)]
  for (const s of sections) {
    if (s === globalSection) parts.push([6, ...uleb(payload.length)], payload)
    else parts.push([s.id, ...uleb(s.end - s.start)], bytes.subarray(s.start, s.end))
  }
  return concat(parts)
}

/** Lists the extended constant expressions of one core module (globals, data and elements). */
const moduleExtendedSites = (bytes: Uint8Array): Array<string> => {
  const sites: Array<string> = []
  for (const s of readSections(bytes)) {
    const r = new Reader(bytes, s.start, s.end)
    if (s.id === 6) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        skipValType(r)
        r.byte()
        if (isExtended(readConstExpr(r))) sites.push(`global ${i}`)
      }
    } else if (s.id === 11) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        const flags = r.u32()
        if (flags === 2) r.u32()
        if (flags !== 1 && isExtended(readConstExpr(r))) sites.push(`data ${i}`)
        r.skip(r.u32())
      }
    } else if (s.id === 9) {
      const count = r.u32()
      for (let i = 0; i < count; i++) {
        const flags = r.u32()
        if (flags === 2 || flags === 6) r.u32()
        if ((flags & 1) === 0 && isExtended(readConstExpr(r))) sites.push(`elem ${i}`)
        if (flags === 1 || flags === 2 || flags === 3) r.byte()
        else if (flags === 5 || flags === 6 || flags === 7) skipValType(r)
        const n = r.u32()
        for (let j = 0; j < n; j++) {
          if (flags & 4) {
            if (isExtended(readConstExpr(r))) sites.push(`elem ${i} item ${j}`)
          } else r.u32()
        }
      }
    }
  }
  return sites
}

// ---------------------------------------------------------------------------------------------
// Components
// ---------------------------------------------------------------------------------------------

/**
 * Names of a component's core modules from its "component-name" custom section (wit-component
 * names the linked libraries there, e.g. "componentize_qjs_runtime.wasm"), by core module index.
 */
const coreModuleNames = (bytes: Uint8Array, sections: ReadonlyArray<Section>): Map<number, string> => {
  const names = new Map<number, string>()
  for (const s of sections) {
    if (s.id !== 0) continue
    const r = new Reader(bytes, s.start, s.end)
    if (r.name() !== "component-name") continue
    while (!r.done) {
      const sub = r.byte()
      const size = r.u32()
      const end = r.pos + size
      if (sub === 1) {
        const sort = r.byte()
        const coreSort = sort === 0x00 ? r.byte() : undefined
        if (sort === 0x00 && coreSort === 0x11) {
          const count = r.u32()
          for (let i = 0; i < count; i++) {
            const index = r.u32()
            names.set(index, r.name())
          }
        }
      }
      r.pos = end
    }
  }
  return names
}

/** How many core modules an alias section adds to the core module index space. */
const aliasedCoreModules = (bytes: Uint8Array, s: Section): number => {
  const r = new Reader(bytes, s.start, s.end)
  const count = r.u32()
  let modules = 0
  for (let i = 0; i < count; i++) {
    const sort = r.byte()
    const coreSort = sort === 0x00 ? r.byte() : undefined
    const tag = r.byte()
    if (tag === 0x00 || tag === 0x01) {
      r.u32()
      r.name()
    } else if (tag === 0x02) {
      r.u32()
      r.u32()
    } else throw new Error(`wasm: unknown alias target ${tag}`)
    if (sort === 0x00 && coreSort === 0x11) modules++
  }
  return modules
}

type ModuleVisitor = (module: Uint8Array, name: string | undefined) => Uint8Array

/** Calls `visit` on every core module (depth-first) and re-encodes what it returns. */
const mapCoreModules = (bytes: Uint8Array, visit: ModuleVisitor): Uint8Array => {
  if (!isComponent(bytes)) return visit(bytes, undefined)
  const sections = readSections(bytes)
  const names = coreModuleNames(bytes, sections)
  const parts: Array<Uint8Array | Array<number>> = [bytes.subarray(0, HEADER)]
  let changed = false
  let moduleIndex = 0
  for (const s of sections) {
    const payload = bytes.subarray(s.start, s.end)
    let next = payload
    if (s.id === 1) next = visit(payload, names.get(moduleIndex++))
    else if (s.id === 4) next = mapCoreModules(payload, visit)
    else if (s.id === 6) moduleIndex += aliasedCoreModules(bytes, s)
    if (next !== payload) changed = true
    parts.push([s.id, ...uleb(next.length)], next)
  }
  return changed ? concat(parts) : bytes
}

const forEachCoreModule = (bytes: Uint8Array, visit: (module: Uint8Array) => void): void => {
  mapCoreModules(bytes, (m) => {
    visit(m)
    return m
  })
}

/** Every core module of a component, depth-first (the bytes of each embedded module). */
export const coreModules = (component: Uint8Array): Array<Uint8Array> => {
  const modules: Array<Uint8Array> = []
  forEachCoreModule(component, (m) => modules.push(m))
  return modules
}

/**
 * Folds the `__memory_base` / `__table_base` extended-const global initializers of a
 * componentize-qjs component into plain `i32.const`s. Returns the input unchanged when there is
 * nothing to fold.
 */
export const lowerExtendedConst = (component: Uint8Array): Uint8Array => {
  const bases = new Map<string, bigint>()
  forEachCoreModule(component, (m) => {
    for (const [field, value] of moduleFacts(m).constExports) {
      if (/:(memory|table)_base$/.test(field)) bases.set(field, value)
    }
  })
  if (bases.size === 0) return component
  return mapCoreModules(component, (m, name) => foldModule(m, name, bases))
}

/** Extended constant expressions left in a component, as "module <i>: <site>" strings. */
export const extendedConstSites = (component: Uint8Array): Array<string> =>
  coreModules(component).flatMap((m, i) => moduleExtendedSites(m).map((site) => `module ${i}: ${site}`))
