/**
 * What keeps running after a cancel or a stop: detached work (`DetachedRegistry`) and delegations
 * to child capsules (`DelegationTracker`). Both keep their live items in one `LiveSet`, a
 * `SubscriptionRef` of a map by id, so the session's lifecycle can wait on `changes` instead of
 * asking again and again. `residueItems` is the residue snapshot of spec §7.3.
 */
import { Effect, Stream, SubscriptionRef } from "effect"

export interface DetachedWork {
  readonly work_id: string
  /** The resolved program name. */
  readonly binary: string
  /** The command text without the binary. */
  readonly command: string
  readonly started_at_ms: number
}

export interface Delegation {
  readonly delegation_id: string
  readonly capsule: string
  readonly version: string
  readonly child_session_id: string
  /** Relative to the parent's accessible workdir. */
  readonly child_workdir: string
}

/** Live items by id: what a residue source holds. */
export interface LiveSet<V> {
  readonly add: (id: string, item: V) => Effect.Effect<V>
  readonly remove: (id: string) => Effect.Effect<boolean>
  /** Every live item, sorted by id. */
  readonly list: () => Effect.Effect<ReadonlyArray<V>>
  /** The live items now, then after every change. */
  readonly changes: Stream.Stream<ReadonlyMap<string, V>>
}

const sortedValues = <V>(items: ReadonlyMap<string, V>): ReadonlyArray<V> =>
  [...items.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, item]) => item)

export const makeLiveSet = <V>(): Effect.Effect<LiveSet<V>> =>
  Effect.map(SubscriptionRef.make<ReadonlyMap<string, V>>(new Map()), (ref) => ({
    add: (id, item) => SubscriptionRef.update(ref, (items) => new Map(items).set(id, item)).pipe(Effect.as(item)),
    // Removing what is not there changes nothing, so it tells nobody.
    remove: (id) =>
      Effect.flatMap(SubscriptionRef.get(ref), (now) => !now.has(id) ? Effect.succeed(false) : SubscriptionRef.modify(ref, (items) => {
        if (!items.has(id)) return [false, items]
        const rest = new Map(items)
        rest.delete(id)
        return [true, rest]
      })),
    list: () => Effect.map(SubscriptionRef.get(ref), sortedValues),
    changes: ref.changes
  }))

export type ResidueItem = Readonly<Record<string, string | number>>

/** Detached work first (by `work_id`), then delegations (by `delegation_id`); keys in alphabetical order, as the reference serialises them. */
export const residueItems = (
  detached: ReadonlyArray<DetachedWork>,
  delegations: ReadonlyArray<Delegation>
): ReadonlyArray<ResidueItem> => [
  ...detached.map((work) => ({
    binary: work.binary,
    command: work.command,
    kind: "detached_shell",
    started_at_ms: work.started_at_ms,
    work_id: work.work_id
  })),
  ...delegations.map((delegation) => ({
    capsule: delegation.capsule,
    child_session_id: delegation.child_session_id,
    child_workdir: delegation.child_workdir,
    delegation_id: delegation.delegation_id,
    kind: "delegation",
    version: delegation.version
  }))
]
