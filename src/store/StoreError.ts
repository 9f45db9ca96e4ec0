/** Why a store could not be opened or written: the store is named, and what to do is said. */
import { Schema } from "effect"

/** The store cannot be used (locked by another process, not ours, damaged, unreachable). Nothing was written to it. */
export class StoreRefused extends Schema.TaggedError<StoreRefused>()("StoreRefused", {
  store: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `store ${this.store} refused: ${this.reason}`
  }
}

/** A read or write the store did not complete (disk full, connection lost): retried or reported, never ignored. */
export class StoreFailed extends Schema.TaggedError<StoreFailed>()("StoreFailed", {
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `store ${this.operation} failed: ${this.reason}`
  }
}

/** A store failure as `StoreFailed`, naming the operation. */
export const failedTo = (operation: string) => (cause: { readonly message: string; readonly cause?: unknown }) =>
  new StoreFailed({ operation, reason: cause.cause instanceof Error ? cause.cause.message : cause.message })
