/**
 * The residue snapshot of spec §7.3: what keeps running after a cancel or a stop. Detached work
 * first (by `work_id`), then delegations (by `delegation_id`); keys in alphabetical order, as the
 * reference serialises them.
 */
import type { Delegation } from "./DelegationTracker.js"
import type { DetachedWork } from "./DetachedRegistry.js"

export type ResidueItem = Readonly<Record<string, string | number>>

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
