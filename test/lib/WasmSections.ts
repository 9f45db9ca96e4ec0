/**
 * Reading a core module's sections in tests: ids and payloads, to check that a rewrite leaves
 * alone what it must not touch.
 */
export const sections = (bytes: Uint8Array): Array<{ id: number; body: Uint8Array }> => {
  const out: Array<{ id: number; body: Uint8Array }> = []
  let pos = 8
  while (pos < bytes.length) {
    const id = bytes[pos++]!
    let size = 0
    for (let shift = 0;; shift += 7) {
      const byte = bytes[pos++]!
      size |= (byte & 0x7f) << shift
      if ((byte & 0x80) === 0) break
    }
    out.push({ id, body: bytes.subarray(pos, pos + size) })
    pos += size
  }
  return out
}
