/**
 * Live delegations to child capsules (`dlg_` ids). Cancel and session stop name them in their
 * residue; the children keep running and report through completion messages. The launcher
 * (src/agent/DelegationLauncher.ts) records a child once its door listens and removes it when
 * the child ends; its id is minted before the launch, since the child is told it.
 */
import { Context, Effect, Layer } from "effect"
import { mintId } from "./Ids.js"

export interface Delegation {
  readonly delegation_id: string
  readonly capsule: string
  readonly version: string
  readonly child_session_id: string
  /** Relative to the parent's accessible workdir. */
  readonly child_workdir: string
}

export class DelegationTracker extends Context.Tag("capsule-runtime/services/DelegationTracker")<DelegationTracker, {
  /** Records a live delegation; a `delegation_id` is minted unless the caller already did. */
  readonly record: (delegation: Omit<Delegation, "delegation_id"> & { readonly delegation_id?: string }) => Effect.Effect<Delegation>
  /** Every live delegation, sorted by `delegation_id`. */
  readonly list: () => Effect.Effect<ReadonlyArray<Delegation>>
  readonly remove: (delegationId: string) => Effect.Effect<boolean>
}>() {
  static readonly layer = Layer.sync(DelegationTracker, () => {
    const items = new Map<string, Delegation>()
    return DelegationTracker.of({
      record: (delegation) =>
        Effect.sync(() => {
          const item: Delegation = { ...delegation, delegation_id: delegation.delegation_id ?? mintId("dlg") }
          items.set(item.delegation_id, item)
          return item
        }),
      list: () => Effect.sync(() => [...items.values()].sort((a, b) => a.delegation_id < b.delegation_id ? -1 : 1)),
      remove: (delegationId) => Effect.sync(() => items.delete(delegationId))
    })
  })
}
