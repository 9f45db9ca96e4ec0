/**
 * Makes a failed `memory.grow` visible from JS. A grow refused at the memory cap returns -1 inside
 * the guest, whose allocator then traps like any other trap; this rewrite routes every
 * `memory.grow` on memory 0 through a probe that records the refused delta in an exported global,
 * so the host can word the trap as the reference limiter does.
 *
 * Each `memory.grow 0` in a function body becomes `call $probe`, where `$probe` is appended at the
 * end of the function index space (no existing index shifts) with type `[i32] -> [i32]` (an
 * existing top-level type is reused, else one is appended to the type section):
 *
 *     local.get 0  memory.grow 0  local.tee 1  i32.const -1  i32.eq
 *     if  local.get 0  global.set $failed  end  local.get 1
 *
 * `$failed` is a new mutable i32 global (initially 0), exported as `__murmur_grow_failed`: the
 * delta in pages of the last refused grow, as a signed i32 (read it with `>>> 0`). Every other
 * section, custom sections included, is copied byte for byte; sections the module lacks (global,
 * export) are inserted in their place. A module with no memory 0, no `memory.grow 0`, or a 64-bit
 * memory 0 (whose grow takes an i64; not instrumented) is returned as the same array.
 */
import { GROW_FAILED_EXPORT } from "./GrowFailedExport.js"
import { Either, Schema } from "effect"
import { leb32, scanBody, type GrowSite } from "./WasmCode.js"
import { concatBytes, encodeUleb, hex, WasmMalformed, WasmReader, WasmUnsupported } from "./WasmReader.js"
import { skipRefType, skipSubType, skipValType } from "./WasmTypes.js"

export class GrowProbeError extends Schema.TaggedError<GrowProbeError>()("GrowProbeError", {
  reason: Schema.Literal("Malformed", "Unsupported"),
  message: Schema.String
}) {}

/** Name of the exported global holding the delta (pages) of the last failed grow; 0 if none. */

const EXPORT_NAME = new TextEncoder().encode(GROW_FAILED_EXPORT)
const MAGIC = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]
const I32_TO_I32 = Uint8Array.of(0x60, 0x01, 0x7f, 0x01, 0x7f)
/** Where each known section id sits in the required order (tag, 13, sits between memory and global). */
const RANK: Record<number, number> = { 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13 }
const GLOBAL = 6
const EXPORT = 7

interface Section {
  readonly id: number
  /** First byte of the section (its id). */
  readonly start: number
  /** First byte after the entry count (or the payload start, for sections without one). */
  readonly entries: number
  readonly count: number
  readonly end: number
}

interface Body {
  /** The body's size prefix starts here; its content runs `[content, end)`. */
  readonly sizeStart: number
  readonly content: number
  readonly end: number
  readonly sites: ReadonlyArray<GrowSite>
}

/** What the rewrite needs from the module. */
interface Survey {
  readonly sections: ReadonlyArray<Section>
  typeCount: number
  probeType: number | undefined
  importedFuncs: number
  importedGlobals: number
  /** Whether memory 0 exists and whether it is 64-bit. */
  memory0: "none" | "32" | "64"
  definedFuncs: number
  definedGlobals: number
  bodies: Array<Body>
}

/**
 * Returns `bytes` with every `memory.grow 0` routed through the probe, the same array when there
 * is nothing to instrument, or a `GrowProbeError` for a malformed module or one using an encoding
 * the decoder does not know (including a clashing `__murmur_grow_failed` export).
 */
export const instrumentGrow = (bytes: Uint8Array): Either.Either<Uint8Array, GrowProbeError> => {
  try {
    return Either.right(rewrite(bytes))
  } catch (error) {
    if (error instanceof WasmMalformed) return Either.left(new GrowProbeError({ reason: "Malformed", message: error.message }))
    if (error instanceof WasmUnsupported) return Either.left(new GrowProbeError({ reason: "Unsupported", message: error.message }))
    throw error
  }
}

const rewrite = (bytes: Uint8Array): Uint8Array => {
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw new WasmUnsupported("not a version 1 core WebAssembly module (components: instrument their core modules)")
  }
  const survey = surveyModule(bytes)
  if (survey.memory0 !== "32" || !survey.bodies.some((body) => body.sites.some((site) => site.memory === 0))) return bytes
  if (survey.definedFuncs !== survey.bodies.length) throw new WasmMalformed("function and code section counts differ", 8)

  const probeFunc = survey.importedFuncs + survey.definedFuncs
  const failedGlobal = survey.importedGlobals + survey.definedGlobals
  const probeType = survey.probeType ?? survey.typeCount
  const call = concatBytes([Uint8Array.of(0x10), encodeUleb(BigInt(probeFunc))])
  const globalEntry = Uint8Array.of(0x7f, 0x01, 0x41, 0x00, 0x0b) // mut i32 = i32.const 0
  const exportEntry = concatBytes([encodeUleb(BigInt(EXPORT_NAME.length)), EXPORT_NAME, Uint8Array.of(0x03), encodeUleb(BigInt(failedGlobal))])
  const missing = new Map<number, Uint8Array>([[GLOBAL, concatBytes([Uint8Array.of(1), globalEntry])], [EXPORT, concatBytes([Uint8Array.of(1), exportEntry])]])

  const parts: Array<Uint8Array> = [bytes.subarray(0, 8)]
  const emit = (id: number, payload: ReadonlyArray<Uint8Array>): void => {
    const body = concatBytes(payload)
    parts.push(Uint8Array.of(id), encodeUleb(BigInt(body.length)), body)
  }
  const insertMissingBefore = (rank: number): void => {
    for (const [id, payload] of missing) {
      if (RANK[id]! < rank) {
        emit(id, [payload])
        missing.delete(id)
      }
    }
  }
  const appended = (section: Section, extra: ReadonlyArray<Uint8Array>): Array<Uint8Array> => [
    encodeUleb(BigInt(section.count + 1)),
    bytes.subarray(section.entries, section.end),
    ...extra
  ]
  for (const section of survey.sections) {
    if (section.id !== 0) insertMissingBefore(RANK[section.id]!)
    missing.delete(section.id)
    switch (section.id) {
      case 1:
        if (survey.probeType === undefined) emit(1, appended(section, [I32_TO_I32]))
        else parts.push(bytes.subarray(section.start, section.end))
        break
      case 3:
        emit(3, appended(section, [encodeUleb(BigInt(probeType))]))
        break
      case GLOBAL:
        emit(GLOBAL, appended(section, [globalEntry]))
        break
      case EXPORT:
        emit(EXPORT, appended(section, [exportEntry]))
        break
      case 10:
        emit(10, codePayload(bytes, section, survey.bodies, call, failedGlobal))
        break
      default:
        parts.push(bytes.subarray(section.start, section.end))
    }
  }
  insertMissingBefore(Infinity)
  return concatBytes(parts)
}

/** The code section's payload: the bodies with their grow sites patched, then the probe. */
const codePayload = (
  bytes: Uint8Array,
  section: Section,
  bodies: ReadonlyArray<Body>,
  call: Uint8Array,
  failedGlobal: number
): Array<Uint8Array> => {
  const out: Array<Uint8Array> = [encodeUleb(BigInt(section.count + 1))]
  let cursor = section.entries
  for (const body of bodies) {
    const sites = body.sites.filter((site) => site.memory === 0)
    if (sites.length === 0) continue
    out.push(bytes.subarray(cursor, body.sizeStart))
    const patched: Array<Uint8Array> = []
    let at = body.content
    for (const site of sites) {
      patched.push(bytes.subarray(at, site.start), call)
      at = site.end
    }
    patched.push(bytes.subarray(at, body.end))
    const content = concatBytes(patched)
    out.push(encodeUleb(BigInt(content.length)), content)
    cursor = body.end
  }
  out.push(bytes.subarray(cursor, section.end))
  const probe = concatBytes([
    Uint8Array.of(0x01, 0x01, 0x7f), // one i32 local
    Uint8Array.of(0x20, 0x00, 0x40, 0x00, 0x22, 0x01, 0x41, 0x7f, 0x46, 0x04, 0x40, 0x20, 0x00, 0x24),
    encodeUleb(BigInt(failedGlobal)),
    Uint8Array.of(0x0b, 0x20, 0x01, 0x0b)
  ])
  out.push(encodeUleb(BigInt(probe.length)), probe)
  return out
}

const surveyModule = (bytes: Uint8Array): Survey => {
  const sections: Array<Section> = []
  const survey: Survey = {
    sections,
    typeCount: 0,
    probeType: undefined,
    importedFuncs: 0,
    importedGlobals: 0,
    memory0: "none",
    definedFuncs: 0,
    definedGlobals: 0,
    bodies: []
  }
  const reader = new WasmReader(bytes, 8)
  let lastRank = 0
  while (!reader.done) {
    const start = reader.pos
    const id = reader.u8()
    const size = leb32(reader)
    const payloadStart = reader.pos
    reader.skip(size)
    const payload = new WasmReader(bytes, payloadStart, reader.pos)
    if (id !== 0) {
      const rank = RANK[id]
      if (rank === undefined) throw new WasmUnsupported(`section id ${id} is not supported`)
      if (rank <= lastRank) throw new WasmMalformed(`section ${id} out of order`, start)
      lastRank = rank
    }
    const count = id === 0 || id === 8 ? 0 : leb32(payload)
    sections.push({ id, start, entries: payload.pos, count, end: reader.pos })
    if (id === 1) readTypes(payload, count, survey)
    else if (id === 2) readImports(payload, count, survey)
    else if (id === 3) survey.definedFuncs = count
    else if (id === 5 && survey.memory0 === "none" && count > 0) survey.memory0 = memoryKind(payload)
    else if (id === GLOBAL) survey.definedGlobals = count
    else if (id === EXPORT) checkExports(payload, count)
    else if (id === 10) readBodies(payload, count, survey)
  }
  return survey
}

const finish = (reader: WasmReader, what: string): void => {
  if (!reader.done) reader.fail(`${what} section has trailing bytes`)
}

/** Counts types (rec groups hold several) and finds a top-level `[i32] -> [i32]`. */
const readTypes = (reader: WasmReader, count: number, survey: Survey): void => {
  let index = 0
  for (let n = count; n > 0; n--) {
    if (reader.peek() === 0x4e) { // rec group
      reader.u8()
      for (let m = leb32(reader); m > 0; m--, index++) skipSubType(reader)
      continue
    }
    if (survey.probeType === undefined && I32_TO_I32.every((b, i) => reader.bytes[reader.pos + i] === b)) survey.probeType = index
    skipSubType(reader)
    index++
  }
  finish(reader, "type")
  survey.typeCount = index
}

/** Skips limits (with a custom page size when flagged); returns the flags. */
const skipLimits = (reader: WasmReader): number => {
  const flags = reader.u8()
  if ((flags & ~0x0f) !== 0) throw new WasmUnsupported(`limits flags 0x${hex(flags)} are not supported`)
  reader.skipSleb(64)
  if ((flags & 0x01) !== 0) reader.skipSleb(64)
  if ((flags & 0x08) !== 0) leb32(reader)
  return flags
}

const memoryKind = (reader: WasmReader): "32" | "64" => (skipLimits(reader) & 0x04) !== 0 ? "64" : "32"

const readImports = (reader: WasmReader, count: number, survey: Survey): void => {
  for (let n = count; n > 0; n--) {
    reader.skipName()
    reader.skipName()
    const kind = reader.u8()
    if (kind === 0x00) {
      leb32(reader)
      survey.importedFuncs++
    } else if (kind === 0x01) {
      skipRefType(reader)
      skipLimits(reader)
    } else if (kind === 0x02) {
      const memory = memoryKind(reader)
      if (survey.memory0 === "none") survey.memory0 = memory
    } else if (kind === 0x03) {
      skipValType(reader)
      reader.u8()
      survey.importedGlobals++
    } else if (kind === 0x04) {
      reader.u8()
      leb32(reader)
    } else {
      throw new WasmUnsupported(`import kind 0x${hex(kind)} is not supported`)
    }
  }
  finish(reader, "import")
}

const checkExports = (reader: WasmReader, count: number): void => {
  for (let n = count; n > 0; n--) {
    const length = leb32(reader)
    const at = reader.pos
    reader.skip(length)
    if (length === EXPORT_NAME.length && EXPORT_NAME.every((b, i) => reader.bytes[at + i] === b)) {
      throw new WasmUnsupported(`the module already exports "${GROW_FAILED_EXPORT}" (instrumented twice?)`)
    }
    reader.u8()
    leb32(reader)
  }
  finish(reader, "export")
}

const readBodies = (reader: WasmReader, count: number, survey: Survey): void => {
  for (let n = count; n > 0; n--) {
    const sizeStart = reader.pos
    const size = leb32(reader)
    const content = reader.pos
    reader.skip(size)
    const sites = scanBody(new WasmReader(reader.bytes, content, reader.pos))
    survey.bodies.push({ sizeStart, content, end: reader.pos, sites })
  }
  finish(reader, "code")
}
