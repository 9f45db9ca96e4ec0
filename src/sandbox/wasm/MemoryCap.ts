/**
 * The memory and table caps (reference §5.1), enforced the only way V8 allows: by rewriting each
 * core module's declared maxima before `WebAssembly.compile` (spec §8.2 item 7, feasibility
 * §3.4(b)). Every memory — defined in section 5 or imported in section 2 — gets
 * `max = min(existing max, floor(memory_bytes / 65536))` pages, and every table
 * `max = min(existing max, table_elements)`. A guest's `memory.grow` past the cap then returns -1
 * (and `table.grow` likewise), which is what makes a runaway allocation trap instead of eating the
 * host. A declared minimum above the cap is refused with the reference limiter's own text, since
 * Wasmtime refuses that instantiation too. Bytes outside the rewritten limits are left untouched;
 * a module that needs no change is returned as the same array.
 *
 * Capping imports as well as definitions keeps linking valid: if an exporter's maximum was at most
 * an importer's before, it still is after, because both are clamped by the same cap.
 */
import { Either, Schema } from "effect"
import { concatBytes, encodeUleb, hex, WasmMalformed, WasmReader, WasmUnsupported } from "./WasmReader.js"
import { skipConstExpr, skipRefType, skipValType } from "./WasmTypes.js"

export const WASM_PAGE_BYTES = 65536

export class MemoryCapError extends Schema.TaggedError<MemoryCapError>()("MemoryCapError", {
  reason: Schema.Literal("Malformed", "Unsupported", "MemoryLimit", "TableLimit"),
  message: Schema.String
}) {}

export interface CapLimits {
  /** `capabilities.limits.memory_bytes`, a cap per linear memory. */
  readonly memoryBytes: number
  /** `capabilities.limits.table_elements`, a cap per table. */
  readonly tableElements: number
}

/** Whole wasm pages that fit in `memoryBytes` (the cap rounds down). */
export const pagesFor = (memoryBytes: number): number => Math.floor(memoryBytes / WASM_PAGE_BYTES)

const MAX_PAGES_32 = 65536n
const MAX_PAGES_64 = 1n << 48n
const MAX_TABLE_32 = 0xffff_ffffn
const MAX_TABLE_64 = (1n << 64n) - 1n

const SECTION_IMPORT = 2
const SECTION_TABLE = 4
const SECTION_MEMORY = 5

const MAGIC = [0x00, 0x61, 0x73, 0x6d]

/** Thrown inside the walk and returned as a `MemoryCapError`. */
class Refusal extends Error {
  constructor(readonly reason: MemoryCapError["reason"], detail: string) {
    super(detail)
  }
}

/** One replaced byte range of a section payload. */
interface Patch {
  readonly start: number
  readonly end: number
  readonly bytes: Uint8Array
}

interface Caps {
  readonly memoryBytes: bigint
  readonly pages: bigint
  readonly tableElements: bigint
}

/**
 * Returns `bytes` with every memory and table maximum clamped to the caps, or a `MemoryCapError`
 * when the module is not a core module, uses an encoding this walker does not know, or declares
 * a minimum above a cap.
 */
export const capCoreModule = (bytes: Uint8Array, limits: CapLimits): Either.Either<Uint8Array, MemoryCapError> => {
  if (!isCount(limits.memoryBytes) || !isCount(limits.tableElements)) {
    return Either.left(
      new MemoryCapError({ reason: "Unsupported", message: "memory_bytes and table_elements must be non-negative integers" })
    )
  }
  const caps: Caps = {
    memoryBytes: BigInt(limits.memoryBytes),
    pages: BigInt(pagesFor(limits.memoryBytes)),
    tableElements: BigInt(limits.tableElements)
  }
  try {
    return Either.right(rewrite(bytes, caps))
  } catch (error) {
    if (error instanceof Refusal) return Either.left(new MemoryCapError({ reason: error.reason, message: error.message }))
    if (error instanceof WasmMalformed) return Either.left(new MemoryCapError({ reason: "Malformed", message: error.message }))
    if (error instanceof WasmUnsupported) return Either.left(new MemoryCapError({ reason: "Unsupported", message: error.message }))
    throw error
  }
}

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0

const rewrite = (bytes: Uint8Array, caps: Caps): Uint8Array => {
  checkHeader(bytes)
  const reader = new WasmReader(bytes, 8)
  const parts: Array<Uint8Array> = [bytes.subarray(0, 8)]
  let changed = false
  while (!reader.done) {
    const sectionStart = reader.pos
    const id = reader.u8()
    const size = reader.u32()
    const payloadStart = reader.pos
    reader.skip(size)
    const payload = new WasmReader(bytes, payloadStart, reader.pos)
    const patches = id === SECTION_IMPORT
      ? importPatches(payload, caps)
      : id === SECTION_TABLE
      ? tablePatches(payload, caps)
      : id === SECTION_MEMORY
      ? memoryPatches(payload, caps)
      : []
    if (patches.length === 0) {
      parts.push(bytes.subarray(sectionStart, reader.pos))
      continue
    }
    changed = true
    const body = applyPatches(bytes, payloadStart, reader.pos, patches)
    parts.push(Uint8Array.of(id), encodeUleb(BigInt(body.length)), body)
  }
  return changed ? concatBytes(parts) : bytes
}

const checkHeader = (bytes: Uint8Array): void => {
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new Refusal("Malformed", "not a WebAssembly binary (bad magic)")
  }
  const version = bytes[4]! | (bytes[5]! << 8)
  const layer = bytes[6]! | (bytes[7]! << 8)
  if (layer === 1) throw new Refusal("Unsupported", "a component, not a core module: cap its core modules instead")
  if (layer !== 0 || version !== 1) throw new Refusal("Unsupported", `unsupported core module version ${version}`)
}

const applyPatches = (bytes: Uint8Array, start: number, end: number, patches: ReadonlyArray<Patch>): Uint8Array => {
  const parts: Array<Uint8Array> = []
  let cursor = start
  for (const patch of patches) {
    parts.push(bytes.subarray(cursor, patch.start), patch.bytes)
    cursor = patch.end
  }
  parts.push(bytes.subarray(cursor, end))
  return concatBytes(parts)
}

const finish = (reader: WasmReader, what: string): void => {
  if (reader.pos !== reader.end) reader.fail(`${what} section has trailing bytes`)
}

const importPatches = (reader: WasmReader, caps: Caps): Array<Patch> => {
  const patches: Array<Patch> = []
  for (let n = reader.u32(); n > 0; n--) {
    reader.skipName()
    reader.skipName()
    const kind = reader.u8()
    switch (kind) {
      case 0x00: // func: type index
        reader.u32()
        break
      case 0x01: // table
        skipRefType(reader)
        pushPatch(patches, tableLimits(reader, caps))
        break
      case 0x02: // memory
        pushPatch(patches, memoryLimits(reader, caps))
        break
      case 0x03: // global: value type, mutability
        skipValType(reader)
        reader.u8()
        break
      case 0x04: // tag: attribute, type index
        reader.u8()
        reader.u32()
        break
      default:
        throw new WasmUnsupported(`import kind 0x${hex(kind)} is not supported`)
    }
  }
  finish(reader, "import")
  return patches
}

const tablePatches = (reader: WasmReader, caps: Caps): Array<Patch> => {
  const patches: Array<Patch> = []
  for (let n = reader.u32(); n > 0; n--) {
    const withInit = reader.peek() === 0x40
    if (withInit) {
      reader.u8()
      if (reader.u8() !== 0x00) reader.fail("table with initializer: expected reserved byte 0x00")
    }
    skipRefType(reader)
    pushPatch(patches, tableLimits(reader, caps))
    if (withInit) skipConstExpr(reader)
  }
  finish(reader, "table")
  return patches
}

const memoryPatches = (reader: WasmReader, caps: Caps): Array<Patch> => {
  const patches: Array<Patch> = []
  for (let n = reader.u32(); n > 0; n--) pushPatch(patches, memoryLimits(reader, caps))
  finish(reader, "memory")
  return patches
}

const pushPatch = (patches: Array<Patch>, patch: Patch | undefined): void => {
  if (patch !== undefined) patches.push(patch)
}

interface Limits {
  readonly start: number
  readonly flags: number
  /** The encoded minimum, copied through verbatim. */
  readonly minBytes: Uint8Array
  readonly min: bigint
  readonly max: bigint | undefined
  readonly end: number
  readonly is64: boolean
}

const readLimits = (reader: WasmReader, allowedFlags: number, what: string): Limits => {
  const start = reader.pos
  const flags = reader.u8()
  if ((flags & ~allowedFlags) !== 0) {
    throw new Refusal(
      "Unsupported",
      `${what} limits flags 0x${hex(flags)} are not supported (custom page sizes, shared tables or unknown bits)`
    )
  }
  const is64 = (flags & 0x04) !== 0
  const minStart = reader.pos
  const min = reader.uleb(is64 ? 64 : 32)
  const minBytes = reader.bytes.subarray(minStart, reader.pos)
  const max = (flags & 0x01) !== 0 ? reader.uleb(is64 ? 64 : 32) : undefined
  return { start, flags, minBytes, min, max, end: reader.pos, is64 }
}

/** The patch that clamps `limits` to `cap`, or nothing when the maximum already fits. */
const clamp = (limits: Limits, cap: bigint): Patch | undefined => {
  if (limits.max !== undefined && limits.max <= cap) return undefined
  return {
    start: limits.start,
    end: limits.end,
    bytes: concatBytes([Uint8Array.of(limits.flags | 0x01), limits.minBytes, encodeUleb(cap)])
  }
}

const memoryLimits = (reader: WasmReader, caps: Caps): Patch | undefined => {
  const limits = readLimits(reader, 0x07, "memory")
  if ((limits.flags & 0x02) !== 0 && limits.max === undefined) {
    throw new Refusal("Malformed", "shared memory declares no maximum")
  }
  const cap = min(caps.pages, limits.is64 ? MAX_PAGES_64 : MAX_PAGES_32)
  if (limits.min > cap) {
    throw new Refusal(
      "MemoryLimit",
      `linear memory growth to ${limits.min * BigInt(WASM_PAGE_BYTES)} bytes exceeds capabilities.limits.memory_bytes (${caps.memoryBytes})`
    )
  }
  return clamp(limits, cap)
}

const tableLimits = (reader: WasmReader, caps: Caps): Patch | undefined => {
  const limits = readLimits(reader, 0x05, "table")
  const cap = min(caps.tableElements, limits.is64 ? MAX_TABLE_64 : MAX_TABLE_32)
  if (limits.min > cap) {
    throw new Refusal(
      "TableLimit",
      `table growth to ${limits.min} elements exceeds capabilities.limits.table_elements (${caps.tableElements})`
    )
  }
  return clamp(limits, cap)
}

const min = (a: bigint, b: bigint): bigint => a < b ? a : b

