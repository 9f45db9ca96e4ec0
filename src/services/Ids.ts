/**
 * Runtime-minted identifiers: a prefix plus a UUIDv7 in "simple" form (32 lowercase hex digits),
 * as the reference mints them, so ids sort in creation order.
 */
import { randomFillSync } from "node:crypto"

export type IdPrefix = "ses" | "tsk" | "ctx" | "msg" | "wrk" | "dlg" | "req" | "art" | "evt"

const random = new Uint8Array(10)

/** A UUIDv7 without dashes: 48-bit unix ms, version 7, 74 random bits with the RFC 4122 variant. */
export const uuidv7Simple = (now: number = Date.now()): string => {
  randomFillSync(random)
  const time = now.toString(16).padStart(12, "0").slice(-12)
  const hex = Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")
  const variant = ((parseInt(hex.slice(3, 4), 16) & 0x3) | 0x8).toString(16)
  return `${time}7${hex.slice(0, 3)}${variant}${hex.slice(4, 19)}`
}

export const mintId = (prefix: IdPrefix): string => `${prefix}_${uuidv7Simple()}`
