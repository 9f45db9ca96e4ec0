/**
 * Whether a trap was the memory cap, and the reference's words for it. Core modules are
 * instrumented (GrowProbe) so a refused `memory.grow` is recorded exactly; for a module that
 * could not be instrumented the evidence is the guest's own report of a failed allocation, or a
 * memory already at the cap.
 */
export interface MemoryState {
  /** The largest linear memory, in bytes, when the guest failed. */
  readonly used: number
  /** The size a refused `memory.grow` asked for, when one was recorded. */
  readonly refusedGrowthTo: number | undefined
}

const allocationFailure = /memory allocation of (\d+) bytes failed|out of memory|allocation failed/i

const atCap = (used: number, cap: number) => used > 0 && used + 65_536 > cap

export const isMemoryLimit = (state: MemoryState, cap: number, stderr = ""): boolean =>
  (state.refusedGrowthTo !== undefined && state.refusedGrowthTo > cap) || atCap(state.used, cap) ||
  (state.used > 0 && allocationFailure.test(stderr))

export const capMessage = (state: MemoryState, cap: number, stderr = ""): string => {
  const requested = allocationFailure.exec(stderr)?.[1]
  const target = state.refusedGrowthTo ?? (requested === undefined ? undefined : state.used + Number(requested))
  return target === undefined
    ? `linear memory growth beyond ${state.used} bytes exceeds capabilities.limits.memory_bytes (${cap})`
    : `linear memory growth to ${target} bytes exceeds capabilities.limits.memory_bytes (${cap})`
}
