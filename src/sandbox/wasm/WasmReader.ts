/**
 * A bounds-checked cursor over WebAssembly binary bytes, with the LEB128 codecs the binary format
 * uses for sizes and limits. Reading past the end, or an over-long LEB128, throws `WasmMalformed`;
 * callers turn that into their own typed error at their boundary.
 */

/** Thrown by `WasmReader` on truncated or ill-formed input. */
export class WasmMalformed extends Error {
  constructor(readonly detail: string, readonly offset: number) {
    super(`${detail} at byte ${offset}`)
  }
}

/** Thrown on an encoding the walker does not know (a proposal it does not model). */
export class WasmUnsupported extends Error {}

export class WasmReader {
  pos: number

  constructor(readonly bytes: Uint8Array, start = 0, readonly end = bytes.length) {
    this.pos = start
  }

  get done(): boolean {
    return this.pos >= this.end
  }

  fail(detail: string, offset = this.pos): never {
    throw new WasmMalformed(detail, offset)
  }

  u8(): number {
    if (this.pos >= this.end) this.fail("unexpected end of input")
    return this.bytes[this.pos++]!
  }

  peek(): number {
    if (this.pos >= this.end) this.fail("unexpected end of input")
    return this.bytes[this.pos]!
  }

  skip(n: number): void {
    if (n < 0 || this.pos + n > this.end) this.fail("unexpected end of input")
    this.pos += n
  }

  /** The 7-bit groups of a LEB128 of at most `bits` bits, unsigned; the cursor ends after its last byte. */
  private groups(bits: 32 | 64): bigint {
    const start = this.pos
    const maxBytes = Math.ceil(bits / 7)
    let result = 0n
    for (let i = 0; i < maxBytes; i++) {
      const byte = this.u8()
      result |= BigInt(byte & 0x7f) << BigInt(7 * i)
      if ((byte & 0x80) === 0) return result
    }
    return this.fail(`LEB128 longer than ${maxBytes} bytes`, start)
  }

  /** Unsigned LEB128 of at most `bits` bits. */
  uleb(bits: 32 | 64): bigint {
    const start = this.pos
    const result = this.groups(bits)
    if (result >> BigInt(bits) !== 0n) this.fail(`integer too large for u${bits}`, start)
    return result
  }

  u32(): number {
    return Number(this.uleb(32))
  }

  /** Signed LEB128 of at most `bits` bits (the value of an `i32.const` / `i64.const`). */
  sleb(bits: 32 | 64): bigint {
    const start = this.pos
    const result = this.groups(bits)
    const negative = (this.bytes[this.pos - 1]! & 0x40) !== 0
    return negative ? result - (1n << BigInt(7 * (this.pos - start))) : result
  }

  /** Skips a signed LEB128 of at most `bits` bits (immediates we never need to interpret). */
  skipSleb(bits: 33 | 32 | 64): void {
    const start = this.pos
    const maxBytes = Math.ceil(bits / 7)
    for (let i = 0; i < maxBytes; i++) {
      if ((this.u8() & 0x80) === 0) return
    }
    this.fail(`LEB128 longer than ${maxBytes} bytes`, start)
  }

  /** A length-prefixed UTF-8 name. */
  name(): string {
    const length = this.u32()
    const start = this.pos
    this.skip(length)
    return new TextDecoder().decode(this.bytes.subarray(start, this.pos))
  }

  /** Skips a length-prefixed name or byte vector. */
  skipName(): void {
    this.skip(this.u32())
  }
}

/** Where one section's payload sits in a module's or component's bytes. */
export interface Section {
  readonly id: number
  /** First payload byte. */
  readonly start: number
  /** First byte after the payload. */
  readonly end: number
}

/** The sections after the 8-byte preamble of a core module or component, in order. */
export const readSections = (bytes: Uint8Array): Array<Section> => {
  const reader = new WasmReader(bytes, 8)
  const sections: Array<Section> = []
  while (!reader.done) {
    const id = reader.u8()
    const size = reader.u32()
    sections.push({ id, start: reader.pos, end: reader.pos + size })
    reader.skip(size)
  }
  return sections
}

/** Minimal unsigned LEB128 encoding. */
export const encodeUleb = (value: bigint): Uint8Array => {
  if (value < 0n) throw new RangeError("encodeUleb: negative value")
  const out: Array<number> = []
  let rest = value
  do {
    const byte = Number(rest & 0x7fn)
    rest >>= 7n
    out.push(rest === 0n ? byte : byte | 0x80)
  } while (rest !== 0n)
  return Uint8Array.from(out)
}

/** Minimal signed LEB128 encoding. */
export const encodeSleb = (value: bigint): Uint8Array => {
  const out: Array<number> = []
  let rest = value
  for (;;) {
    const byte = Number(rest & 0x7fn)
    rest >>= 7n
    const signBit = (byte & 0x40) !== 0
    if ((rest === 0n && !signBit) || (rest === -1n && signBit)) {
      out.push(byte)
      return Uint8Array.from(out)
    }
    out.push(byte | 0x80)
  }
}

export const concatBytes = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/** Two-digit lowercase hex, for naming bytes in messages. */
export const hex = (n: number): string => n.toString(16).padStart(2, "0")
