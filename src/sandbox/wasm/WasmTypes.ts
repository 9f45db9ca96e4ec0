/**
 * Skipping over the parts of a core module's type and constant-expression encodings that sit
 * between the limits `MemoryCap` rewrites: value and reference types (including the GC and
 * function-references forms), table initializers and type section entries (for GrowProbe).
 * Anything unrecognized throws `WasmUnsupported` rather than being guessed past.
 */
import { hex, type WasmReader, WasmUnsupported } from "./WasmReader.js"

/** Value types: numbers, v128, or a reference type. */
export const skipValType = (reader: WasmReader): void => {
  const byte = reader.peek()
  if (byte >= 0x7b && byte <= 0x7f) {
    reader.u8()
    return
  }
  skipRefType(reader)
}

/** Reference types: a one-byte abbreviation, or `(ref null? heaptype)`. */
export const skipRefType = (reader: WasmReader): void => {
  const byte = reader.u8()
  if (byte === 0x63 || byte === 0x64) {
    skipHeapType(reader)
    return
  }
  if (byte >= 0x68 && byte <= 0x75) return
  throw new WasmUnsupported(`reference type 0x${hex(byte)} is not supported`)
}

const skipHeapType = (reader: WasmReader): void => {
  if (reader.peek() === 0x65) throw new WasmUnsupported("shared heap types are not supported")
  reader.skipSleb(33)
}

/** Walks a constant expression up to and including its `end`. */
export const skipConstExpr = (reader: WasmReader): void => {
  for (let op = reader.u8(); op !== 0x0b; op = reader.u8()) skipConstOp(reader, op)
}

/** Skips the immediates of one constant-expression instruction `op` (already read), other than `end`. */
export const skipConstOp = (reader: WasmReader, op: number): void => {
  switch (op) {
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
    case 0xd0: // ref.null
      skipHeapType(reader)
      return
    case 0xd2: // ref.func
    case 0x23: // global.get
      reader.u32()
      return
    case 0x6a: // i32.add, sub, mul; i64.add, sub, mul (extended-const)
    case 0x6b:
    case 0x6c:
    case 0x7c:
    case 0x7d:
    case 0x7e:
      return
    case 0xfd: // v128.const
      if (reader.u32() !== 12) throw new WasmUnsupported("unsupported SIMD instruction in constant expression")
      reader.skip(16)
      return
    case 0xfb:
      skipGcConst(reader)
      return
    default:
      throw new WasmUnsupported(`opcode 0x${hex(op)} in a constant expression is not supported`)
  }
}

const skipGcConst = (reader: WasmReader): void => {
  const sub = reader.u32()
  switch (sub) {
    case 0: // struct.new
    case 1: // struct.new_default
    case 6: // array.new
    case 7: // array.new_default
      reader.u32()
      return
    case 8: // array.new_fixed
      reader.u32()
      reader.u32()
      return
    case 26: // any.convert_extern
    case 27: // extern.convert_any
    case 28: // ref.i31
      return
    default:
      throw new WasmUnsupported(`GC instruction 0xfb ${sub} in a constant expression is not supported`)
  }
}

/** A type section entry outside a rec group: `sub`/`sub final` with supertypes, or a bare func, struct or array type. */
export const skipSubType = (reader: WasmReader): void => {
  const form = reader.peek()
  if (form === 0x50 || form === 0x4f) { // sub, sub final: supertypes, then the composite type
    reader.u8()
    for (let n = reader.u32(); n > 0; n--) reader.u32()
  }
  const kind = reader.u8()
  if (kind === 0x60) { // func: params, results
    for (let n = reader.u32(); n > 0; n--) skipValType(reader)
    for (let n = reader.u32(); n > 0; n--) skipValType(reader)
  } else if (kind === 0x5f) { // struct
    for (let n = reader.u32(); n > 0; n--) skipFieldType(reader)
  } else if (kind === 0x5e) { // array
    skipFieldType(reader)
  } else {
    throw new WasmUnsupported(`type form 0x${hex(kind)} is not supported`)
  }
}

const skipFieldType = (reader: WasmReader): void => {
  const byte = reader.peek()
  if (byte === 0x77 || byte === 0x78) reader.u8() // packed i16, i8
  else skipValType(reader)
  reader.u8() // mutability
}
