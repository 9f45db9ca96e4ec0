/**
 * Whether a trap was the memory cap. JS cannot see a failed `memory.grow` (it returns -1 inside
 * the guest, whose allocator then aborts), so the verdict reads the evidence: the guest reported
 * an allocation failure (Rust's "memory allocation of N bytes failed", an out-of-memory text), or
 * its memory sits within one 1/16 of the cap (a failed growth by at most that much).
 */
const allocationFailure = /memory allocation of (\d+) bytes failed|out of memory|allocation failed/i

export const nearCap = (used: number, cap: number): boolean => used > 0 && used + Math.max(65_536, Math.floor(cap / 16)) > cap

export const isMemoryLimit = (used: number, cap: number, stderr = ""): boolean => nearCap(used, cap) || (used > 0 && allocationFailure.test(stderr))

/** The reference's limiter text; the requested size is known when the guest said it. */
export const capMessage = (used: number, cap: number, stderr = ""): string => {
  const requested = allocationFailure.exec(stderr)?.[1]
  return requested === undefined
    ? `linear memory growth beyond ${used} bytes exceeds capabilities.limits.memory_bytes (${cap})`
    : `linear memory growth to ${used + Number(requested)} bytes exceeds capabilities.limits.memory_bytes (${cap})`
}
