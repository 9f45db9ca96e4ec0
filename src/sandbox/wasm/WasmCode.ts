/**
 * A decoder for function bodies (code section entries): it walks every instruction with its
 * immediates, so a byte that merely looks like an opcode (0x40 is also the empty block type and
 * turns up inside LEB128 and float immediates) is never mistaken for one. It knows the MVP,
 * sign extension, saturating truncation, bulk memory, reference types, multi-value, tail calls,
 * typed function references (call_ref, br_on_null), exception handling (legacy try/catch/delegate
 * and try_table), SIMD and relaxed SIMD, threads (0xFE atomics) and multi-memory/memory64
 * memargs. Anything else (GC's 0xFB prefix, unassigned opcodes) throws `WasmUnsupported` instead
 * of being guessed past. Integers are read as plain numbers: this runs once per immediate.
 */
import { hex, type WasmReader, WasmUnsupported } from "./WasmReader.js"
import { skipValType } from "./WasmTypes.js"

/** One `memory.grow`: the byte range of the opcode plus its memory index, and that index. */
export interface GrowSite {
  readonly start: number
  readonly end: number
  readonly memory: number
}

/** Unsigned LEB128 u32, as a number. */
export const leb32 = (reader: WasmReader): number => {
  const start = reader.pos
  let result = 0
  for (let shift = 0; shift < 35; shift += 7) {
    const byte = reader.u8()
    result += (byte & 0x7f) * 2 ** shift
    if ((byte & 0x80) === 0) {
      if (result > 0xffff_ffff) reader.fail("integer too large for u32", start)
      return result
    }
  }
  return reader.fail("LEB128 longer than 5 bytes", start)
}

/** SIMD sub-opcodes below 0x100 that are unassigned. */
const SIMD_GAPS = new Set([0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb, 0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee])

const unsupported = (what: string, offset: number): never => {
  throw new WasmUnsupported(`${what} at byte ${offset} is not supported`)
}

/** `align` (bit 6 set: a memory index follows), then the offset (u64 under memory64). */
const skipMemarg = (reader: WasmReader): void => {
  const align = leb32(reader)
  if ((align & 0x40) !== 0) leb32(reader)
  reader.skipSleb(64)
}

/** Empty (0x40), one value type, or a type index as a non-negative s33. */
const skipBlockType = (reader: WasmReader): void => {
  const byte = reader.peek()
  if (byte === 0x40) reader.u8()
  else if (byte >= 0x40 && byte < 0x80) skipValType(reader)
  else reader.skipSleb(33)
}

/**
 * Decodes one function body (`reader` spans exactly the body: locals, then the expression) and
 * returns its `memory.grow` sites. Fails unless the body's outermost `end` is its last byte.
 */
export const scanBody = (reader: WasmReader): Array<GrowSite> => {
  for (let groups = leb32(reader); groups > 0; groups--) {
    leb32(reader)
    skipValType(reader)
  }
  const sites: Array<GrowSite> = []
  let depth = 1
  while (depth > 0) {
    const start = reader.pos
    const op = reader.u8()
    if (op >= 0x45 && op <= 0xc4) continue // numeric, conversions, sign extension
    if (op >= 0x28 && op <= 0x3e) skipMemarg(reader) // loads and stores
    else if (op === 0x40) sites.push({ start, memory: leb32(reader), end: reader.pos }) // memory.grow
    else depth += skipInstruction(reader, op, start)
  }
  if (!reader.done) reader.fail("function body continues past its final end")
  return sites
}

/** Skips a control instruction's immediates; returns how it changes the block depth (others: skipImmediates). */
const skipInstruction = (reader: WasmReader, op: number, start: number): number => {
  switch (op) {
    case 0x02: // block
    case 0x03: // loop
    case 0x04: // if
    case 0x06: // try
      skipBlockType(reader)
      return 1
    case 0x1f: // try_table
      skipBlockType(reader)
      for (let n = leb32(reader); n > 0; n--) {
        const kind = reader.u8()
        if (kind > 3) unsupported(`try_table catch kind 0x${hex(kind)}`, reader.pos - 1)
        if (kind < 2) leb32(reader) // tag
        leb32(reader) // label
      }
      return 1
    case 0x0b: // end
      return -1
    case 0x18: // delegate: ends its try
      leb32(reader)
      return -1
    default:
      skipImmediates(reader, op, start)
      return 0
  }
}

/** Skips the immediates of an instruction that neither opens nor closes a block. */
const skipImmediates = (reader: WasmReader, op: number, start: number): void => {
  switch (op) {
    case 0x00: // unreachable
    case 0x01: // nop
    case 0x05: // else
    case 0x0a: // throw_ref
    case 0x0f: // return
    case 0x19: // catch_all
    case 0x1a: // drop
    case 0x1b: // select
    case 0xd1: // ref.is_null
    case 0xd3: // ref.eq
    case 0xd4: // ref.as_non_null
      return
    case 0x07: // catch tag
    case 0x08: // throw tag
    case 0x09: // rethrow label
    case 0x0c: // br
    case 0x0d: // br_if
    case 0x10: // call
    case 0x12: // return_call
    case 0x14: // call_ref
    case 0x15: // return_call_ref
    case 0x20: // local.get, local.set, local.tee, global.get, global.set
    case 0x21:
    case 0x22:
    case 0x23:
    case 0x24:
    case 0x25: // table.get, table.set
    case 0x26:
    case 0x3f: // memory.size
    case 0xd2: // ref.func
    case 0xd5: // br_on_null
    case 0xd6: // br_on_non_null
      leb32(reader)
      return
    case 0x0e: // br_table: labels, default
      for (let n = leb32(reader); n >= 0; n--) leb32(reader)
      return
    case 0x11: // call_indirect, return_call_indirect: type, table
    case 0x13:
      leb32(reader)
      leb32(reader)
      return
    case 0x1c: // select t*
      for (let n = leb32(reader); n > 0; n--) skipValType(reader)
      return
    case 0x41: // i32.const
      reader.skipSleb(32)
      return
    case 0x42: // i64.const
      reader.skipSleb(64)
      return
    case 0x43: // f32.const
      reader.skip(4)
      return
    case 0x44: // f64.const
      reader.skip(8)
      return
    case 0xd0: // ref.null heaptype
      if (reader.peek() === 0x65) unsupported("shared heap type", reader.pos)
      reader.skipSleb(33)
      return
    case 0xfc:
      return skipFc(reader, start)
    case 0xfd:
      return skipSimd(reader, start)
    case 0xfe:
      return skipAtomic(reader, start)
    default:
      unsupported(`opcode 0x${hex(op)}`, start)
  }
}

const skipFc = (reader: WasmReader, start: number): void => {
  const sub = leb32(reader)
  if (sub <= 7) return // saturating truncation
  switch (sub) {
    case 8: // memory.init data, memory
    case 10: // memory.copy memory, memory
    case 12: // table.init elem, table
    case 14: // table.copy table, table
      leb32(reader)
      leb32(reader)
      return
    case 9: // data.drop
    case 11: // memory.fill
    case 13: // elem.drop
    case 15: // table.grow
    case 16: // table.size
    case 17: // table.fill
      leb32(reader)
      return
    default:
      unsupported(`instruction 0xfc ${sub}`, start)
  }
}

const skipSimd = (reader: WasmReader, start: number): void => {
  const sub = leb32(reader)
  if (sub <= 0x0b || sub === 0x5c || sub === 0x5d) skipMemarg(reader) // loads, store, load_zero
  else if (sub === 0x0c || sub === 0x0d) reader.skip(16) // v128.const, i8x16.shuffle
  else if (sub >= 0x15 && sub <= 0x22) reader.u8() // extract/replace lane
  else if (sub >= 0x54 && sub <= 0x5b) { // load/store lane
    skipMemarg(reader)
    reader.u8()
  } else if (sub > 0x113 || SIMD_GAPS.has(sub)) unsupported(`SIMD instruction 0xfd ${sub}`, start)
}

const skipAtomic = (reader: WasmReader, start: number): void => {
  const sub = leb32(reader)
  if (sub === 0x03) { // atomic.fence
    if (reader.u8() !== 0x00) reader.fail("atomic.fence: expected reserved byte 0x00")
  } else if (sub <= 0x02 || (sub >= 0x10 && sub <= 0x4e)) skipMemarg(reader)
  else unsupported(`atomic instruction 0xfe ${sub}`, start)
}
