/**
 * Live delegations to child capsules (`dlg_` ids). Cancel and session stop name them in their
 * residue; the children keep running and report through completion messages. The launcher
 * (src/delegation/DelegationLauncher.ts) records a child once its door listens and removes it when
 * the child ends; its id is minted before the launch, since the child is told it.
 *
 * It also holds what a completion must prove. At launch the launcher mints a secret per
 * delegation (`expect`); the door takes a `completion` only for a delegation this session
 * started that has not completed yet, carrying its secret (`claim`), and the claim settles
 * (`settle`) as completed when the completion became a task, or back to open when it did not
 * (a full queue), so the one retry can still land. One delegation gives at most one completion
 * task, whoever sends it (the child, or the launcher for a child that crashed or outlived its
 * deadline).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Context, Effect, Layer, Schema, type Stream } from "effect"
import { mintId } from "./Ids.js"
import { type Delegation, makeLiveSet } from "./Residue.js"

/** Delegations whose completion state a session remembers (open ones are never forgotten). */
export const MAX_REMEMBERED = 4096

/** Why a `completion` was refused; the message is what its sender reads (JSON-RPC -32004). */
export class CompletionRefused extends Schema.TaggedError<CompletionRefused>()("CompletionRefused", {
  delegationId: Schema.optional(Schema.String),
  reason: Schema.Literal("Unnamed", "Unknown", "Completed", "InFlight", "BadSecret")
}) {
  override get message() {
    const id = this.delegationId ?? "<none>"
    switch (this.reason) {
      case "Unnamed":
        return "a completion must name its delegation (x-murmur-delegation-id) and carry its secret (x-murmur-completion-secret)"
      case "Unknown":
        return `completion for ${id} refused: this session started no such delegation`
      case "Completed":
        return `completion for ${id} refused: that delegation has already completed`
      case "InFlight":
        return `completion for ${id} refused: another completion of that delegation is being taken`
      case "BadSecret":
        return `completion for ${id} refused: it does not carry that delegation's secret`
    }
  }
}

/** Where a delegation's completion stands. */
export type CompletionState =
  | { readonly _tag: "Open" }
  | { readonly _tag: "InFlight" }
  | { readonly _tag: "Completed"; readonly taskId: string | undefined }

export class DelegationTracker extends Context.Tag("capsule-runtime/services/DelegationTracker")<DelegationTracker, {
  /** Records a live delegation; a `delegation_id` is minted unless the caller already did. */
  readonly record: (delegation: Omit<Delegation, "delegation_id"> & { readonly delegation_id?: string }) => Effect.Effect<Delegation>
  /** Every live delegation, sorted by `delegation_id`. */
  readonly list: () => Effect.Effect<ReadonlyArray<Delegation>>
  readonly remove: (delegationId: string) => Effect.Effect<boolean>
  /** The live delegations now, then after every change (the run waits on it for its children). */
  readonly changes: Stream.Stream<ReadonlyMap<string, Delegation>>
  /** A completion for `delegationId` will carry `secret`. */
  readonly expect: (delegationId: string, secret: string) => Effect.Effect<void>
  /** Takes the one completion of a delegation (until `settle`); refused unless open and proven. */
  readonly claim: (delegationId: string | undefined, secret: string | undefined) => Effect.Effect<void, CompletionRefused>
  /** Ends a claim: `completed` with the completion's task id, else the delegation is open again. */
  readonly settle: (delegationId: string, completed: boolean, taskId?: string) => Effect.Effect<void>
  readonly completion: (delegationId: string) => Effect.Effect<CompletionState | undefined>
  /** The delegation is over (its child ended and was dealt with): no completion is taken for it any more. */
  readonly finish: (delegationId: string) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(DelegationTracker, Effect.gen(function*() {
    const items = yield* makeLiveSet<Delegation>()
    // Digests, so comparing is constant-time whatever length a forger sends.
    const expected = new Map<string, { readonly digest: Buffer; state: CompletionState }>()
    const digest = (secret: string) => createHash("sha256").update(secret).digest()
    // A long session's finished delegations are forgotten oldest first past this many: a replay
    // of one of those is then refused as unknown rather than as completed.
    const forget = () => {
      if (expected.size <= MAX_REMEMBERED) return
      for (const [id, entry] of expected) {
        if (entry.state._tag === "Completed") {
          expected.delete(id)
          return
        }
      }
    }
    return DelegationTracker.of({
      record: (delegation) =>
        Effect.suspend(() => {
          const item: Delegation = { ...delegation, delegation_id: delegation.delegation_id ?? mintId("dlg") }
          return items.add(item.delegation_id, item)
        }),
      list: items.list,
      remove: items.remove,
      changes: items.changes,
      expect: (delegationId, secret) =>
        Effect.sync(() => {
          expected.set(delegationId, { digest: digest(secret), state: { _tag: "Open" } })
          forget()
        }),
      claim: (delegationId, secret) =>
        Effect.suspend(() => {
          if (delegationId === undefined || secret === undefined) return Effect.fail(new CompletionRefused({ ...(delegationId === undefined ? {} : { delegationId }), reason: "Unnamed" }))
          const entry = expected.get(delegationId)
          if (entry === undefined) return Effect.fail(new CompletionRefused({ delegationId, reason: "Unknown" }))
          if (!timingSafeEqual(entry.digest, digest(secret))) return Effect.fail(new CompletionRefused({ delegationId, reason: "BadSecret" }))
          if (entry.state._tag !== "Open") return Effect.fail(new CompletionRefused({ delegationId, reason: entry.state._tag }))
          entry.state = { _tag: "InFlight" }
          return Effect.void
        }),
      settle: (delegationId, completed, taskId) =>
        Effect.sync(() => {
          const entry = expected.get(delegationId)
          if (entry !== undefined && entry.state._tag === "InFlight") entry.state = completed ? { _tag: "Completed", taskId } : { _tag: "Open" }
        }),
      completion: (delegationId) => Effect.sync(() => expected.get(delegationId)?.state),
      finish: (delegationId) =>
        Effect.sync(() => {
          const entry = expected.get(delegationId)
          if (entry !== undefined && entry.state._tag !== "Completed") entry.state = { _tag: "Completed", taskId: undefined }
        })
    })
  }))
}
