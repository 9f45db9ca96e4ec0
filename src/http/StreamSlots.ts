/**
 * The door's count of open SSE streams, bounded by `--max-watchers`: each stream costs CPU on
 * every frame delivered, so an unauthenticated client must not be able to open them without
 * limit. A slot is taken before a streaming method runs (so a refused call has no effect) and
 * given back by an idempotent release.
 */
export interface StreamSlots {
  /** A release function when a slot is free, `undefined` when all are taken. */
  readonly acquire: () => (() => void) | undefined
  readonly inUse: () => number
}

export const makeStreamSlots = (limit: number): StreamSlots => {
  let used = 0
  const acquire = () => {
    if (used >= limit) return undefined
    used++
    let held = true
    return () => {
      if (!held) return
      held = false
      used--
    }
  }
  return { acquire, inUse: () => used }
}
