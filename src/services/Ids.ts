/**
 * Runtime-minted identifiers: a prefix plus a UUIDv7 in "simple" form (32 lowercase hex digits),
 * as the reference mints them, so ids sort in creation order.
 */
import { randomFillSync } from "node:crypto"

export type IdPrefix = "ses" | "tsk" | "ctx" | "msg" | "wrk" | "dlg" | "req" | "art" | "evt"

// Random bytes are drawn in blocks, and hex comes from a table: ids are minted per request.
const pool = new Uint8Array(4096)
let offset = pool.length
const hex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

const randomBytes = (n: number): Uint8Array => {
  if (offset + n > pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const bytes = pool.subarray(offset, offset + n)
  offset += n
  return bytes
}

/** A UUIDv7 without dashes: 48-bit unix ms, version 7, 74 random bits with the RFC 4122 variant. */
export const uuidv7Simple = (now: number = Date.now()): string => {
  const random = randomBytes(10)
  const time = now.toString(16).padStart(12, "0").slice(-12)
  let tail = ""
  for (let i = 0; i < 10; i++) tail += hex[random[i]!]
  const variant = ((parseInt(tail.slice(3, 4), 16) & 0x3) | 0x8).toString(16)
  return `${time}7${tail.slice(0, 3)}${variant}${tail.slice(4, 19)}`
}

export const mintId = (prefix: IdPrefix): string => `${prefix}_${uuidv7Simple()}`
