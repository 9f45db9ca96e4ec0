/**
 * Background work that outlives the task that started it (the reference's detached shell
 * commands, `wrk_` ids). Cancel and session stop name it in their residue; they do not stop it.
 */
import { Context, Effect, Layer, type Stream } from "effect"
import { mintId } from "./Ids.js"
import { type DetachedWork, makeLiveSet } from "./Residue.js"

export class DetachedRegistry extends Context.Tag("capsule-runtime/services/DetachedRegistry")<DetachedRegistry, {
  readonly record: (work: { readonly binary: string; readonly command: string }) => Effect.Effect<DetachedWork>
  /** Everything still running, sorted by `work_id`. */
  readonly list: () => Effect.Effect<ReadonlyArray<DetachedWork>>
  readonly remove: (workId: string) => Effect.Effect<boolean>
  /** What is running now, then after every change. */
  readonly changes: Stream.Stream<ReadonlyMap<string, DetachedWork>>
}>() {
  static readonly layer = Layer.effect(
    DetachedRegistry,
    Effect.map(makeLiveSet<DetachedWork>(), (items) =>
      DetachedRegistry.of({
        record: (work) =>
          Effect.suspend(() => {
            const item = { work_id: mintId("wrk"), binary: work.binary, command: work.command, started_at_ms: Date.now() }
            return items.add(item.work_id, item)
          }),
        list: items.list,
        remove: items.remove,
        changes: items.changes
      }))
  )
}
