/**
 * Which principal each context belongs to: the one whose message created it (./DoorScopes.ts).
 * Another principal's message naming that `contextId` is refused, and its tasks are hidden from
 * other principals' `tasks/get`, `tasks/cancel`, `tasks/resubscribe` and `stream/watch`, unless
 * the caller holds `admin`. Held in memory for the session, bounded by count: past the bound the
 * context used longest ago is forgotten (and the next principal to name it claims it), so a
 * client minting contexts cannot grow the door without bound.
 */
import { isAdmin, type Principal } from "./DoorScopes.js"

/** Most contexts whose owner the door remembers. */
export const maxOwnedContexts = 65_536

export interface ContextOwners {
  readonly ownerOf: (contextId: string) => string | undefined
  /** Claims an unowned context for `principal` (refreshing its place); false when another principal holds it and `principal` is no admin. */
  readonly claim: (contextId: string, principal: Principal) => boolean
  /** Whether `principal` may see the tasks of `contextId`. */
  readonly sees: (principal: Principal, contextId: string) => boolean
  readonly size: () => number
}

export const makeContextOwners = (limit = maxOwnedContexts): ContextOwners => {
  const owners = new Map<string, string>()
  const sees = (principal: Principal, contextId: string) => isAdmin(principal) || owners.get(contextId) === principal.name
  return {
    ownerOf: (contextId) => owners.get(contextId),
    claim: (contextId, principal) => {
      const owner = owners.get(contextId)
      if (owner !== undefined && owner !== principal.name) return isAdmin(principal)
      // Re-inserted: a Map iterates in insertion order, so the first key is the longest unused.
      owners.delete(contextId)
      owners.set(contextId, owner ?? principal.name)
      while (owners.size > limit) owners.delete(owners.keys().next().value as string)
      return true
    },
    sees,
    size: () => owners.size
  }
}
