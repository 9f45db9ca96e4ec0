/**
 * Runtime-minted identifiers: a prefix plus a UUIDv7 in "simple" form (32 lowercase hex digits),
 * as the reference mints them, so ids sort in creation order.
 */
import { randomFillSync } from "node:crypto"

export type IdPrefix = "ses" | "tsk" | "ctx" | "msg" | "wrk" | "dlg" | "req" | "art" | "evt" | "pnc" | "pln"

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

const variants = ["8", "9", "a", "b"]
// The time part changes once a millisecond; ids minted within one reuse its hex.
let lastMs = -1
let lastTime = ""

/** A UUIDv7 without dashes: 48-bit unix ms, version 7, 74 random bits with the RFC 4122 variant. */
export const uuidv7Simple = (now: number = Date.now()): string => {
  const r = randomBytes(10)
  if (now !== lastMs) {
    lastMs = now
    lastTime = now.toString(16).padStart(12, "0").slice(-12)
  }
  const second = hex[r[1]!]!
  // 3 random hex digits after the version, the variant (from the low bits of the 4th), then 15 more.
  return lastTime + "7" + hex[r[0]!]! + second[0] + variants[r[1]! & 0x3] + hex[r[2]!] + hex[r[3]!] + hex[r[4]!] + hex[r[5]!] + hex[r[6]!] +
    hex[r[7]!] + hex[r[8]!] + hex[r[9]!]![0]
}

export const mintId = (prefix: IdPrefix): string => `${prefix}_${uuidv7Simple()}`
