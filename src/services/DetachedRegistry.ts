/**
 * Background work that outlives the task that started it (the reference's detached shell
 * commands, `wrk_` ids). Cancel and session stop name it in their residue; they do not stop it.
 */
import { Context, Effect, Layer } from "effect"
import { mintId } from "./Ids.js"

export interface DetachedWork {
  readonly work_id: string
  /** The resolved program name. */
  readonly binary: string
  /** The command text without the binary. */
  readonly command: string
  readonly started_at_ms: number
}

export class DetachedRegistry extends Context.Tag("capsule-runtime/services/DetachedRegistry")<DetachedRegistry, {
  readonly record: (work: { readonly binary: string; readonly command: string }) => Effect.Effect<DetachedWork>
  /** Everything still running, sorted by `work_id`. */
  readonly list: () => Effect.Effect<ReadonlyArray<DetachedWork>>
  readonly remove: (workId: string) => Effect.Effect<boolean>
}>() {
  static readonly layer = Layer.sync(DetachedRegistry, () => {
    const items = new Map<string, DetachedWork>()
    return DetachedRegistry.of({
      record: (work) =>
        Effect.sync(() => {
          const item = { work_id: mintId("wrk"), binary: work.binary, command: work.command, started_at_ms: Date.now() }
          items.set(item.work_id, item)
          return item
        }),
      list: () => Effect.sync(() => [...items.values()].sort((a, b) => a.work_id < b.work_id ? -1 : 1)),
      remove: (workId) => Effect.sync(() => items.delete(workId))
    })
  })
}
