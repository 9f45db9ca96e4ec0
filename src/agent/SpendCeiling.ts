/**
 * The spend ceilings, checked before every provider call: the session's own
 * (`inference.max_session_tokens`) and the machine's daily budget (`spend.machine_tokens_per_day`,
 * a ledger every session on the machine adds to: ../records/SpendLedger.ts). A call costs what the
 * provider reported (`usage.input_tokens + usage.output_tokens`), else what the runtime counted
 * (the request's and the response's cl100k tokens). A call already made is never cut short: the
 * ceiling stops the next one, so a session ends at most one call past its ceiling.
 */
import { Effect } from "effect"
import type { SpendLedgerShape } from "../records/SpendLedger.js"

export interface CeilingReached {
  /** The key that set the ceiling. */
  readonly key: "inference.max_session_tokens" | "spend.machine_tokens_per_day"
  readonly spent: number
  readonly limit: number
}

export interface SpendGuard {
  /** The ceiling this session has reached, if any, before it asks the provider again. */
  readonly reached: Effect.Effect<CeilingReached | undefined, { readonly message: string }>
  /** One provider call's cost, added to the session's and to the machine's. */
  readonly spend: (tokens: number) => Effect.Effect<void, { readonly message: string }>
}

export const makeSpendGuard = (sessionLimit: number | undefined, ledger: SpendLedgerShape): SpendGuard => {
  let session = 0
  return {
    reached: Effect.gen(function*() {
      if (sessionLimit !== undefined && session >= sessionLimit) return { key: "inference.max_session_tokens", spent: session, limit: sessionLimit } as const
      if (ledger.perDay === undefined) return undefined
      const today = yield* ledger.spentToday
      return today >= ledger.perDay ? { key: "spend.machine_tokens_per_day", spent: today, limit: ledger.perDay } as const : undefined
    }),
    spend: (tokens) => Effect.suspend(() => {
      session += tokens
      return ledger.add(tokens)
    })
  }
}

/** What the task's `out/result.txt` and its failure say. */
export const ceilingText = (reached: CeilingReached) =>
  reached.key === "inference.max_session_tokens"
    ? `error: spend ceiling reached: this session has used ${reached.spent} tokens of its ${reached.limit} (inference.max_session_tokens)`
    : `error: spend ceiling reached: this machine has used ${reached.spent} tokens of its ${reached.limit} for today, UTC (spend.machine_tokens_per_day in $MURMUR_HOME/config.yaml)`
