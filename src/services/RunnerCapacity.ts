/**
 * The most tasks one process runs at once across all its sessions (a fleet runner's
 * `--runner-capacity`). A session's own `max_active` still holds; this bounds what many sessions
 * placed on one runner add up to, so a runner's processes, workers and memory stay bounded
 * however many sessions the cluster gives it, and more runners mean more tasks at once. A task
 * takes its slot when it starts and gives it back when it ends, waiting for input included.
 * Absent, a session's tasks are bounded by its own `max_active` only.
 */
import { Context, Effect, Layer } from "effect"

export class RunnerCapacity extends Context.Tag("capsule-runtime/services/RunnerCapacity")<RunnerCapacity, {
  readonly slots: number
  /** Waits for a free slot and takes it. */
  readonly take: Effect.Effect<void>
  readonly give: Effect.Effect<void>
}>() {
  static readonly layer = (slots: number) =>
    Layer.effect(RunnerCapacity, Effect.map(Effect.makeSemaphore(slots), (semaphore) => RunnerCapacity.of({ slots, take: semaphore.take(1), give: semaphore.release(1) })))
}
