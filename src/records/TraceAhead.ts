/**
 * Trace lines written ahead (../agent/AgentLoop.ts): a line the next step does not need (a task's
 * `task_start` before its first driver call, an `inference` line before its tool calls, the last
 * one before the task's final writes) is written while that step runs. Lines stay in order: each
 * waits for the one before it, and so does whatever waits for `settled` (every line written
 * in place, and the task's end), where a failed write still fails.
 */
import { Effect, Fiber } from "effect"

export interface TraceAhead<E> {
  /** Starts writing `line` once the line before it is written; returns at once with its result, to await. */
  readonly ahead: <A>(line: Effect.Effect<A, E>) => Effect.Effect<Effect.Effect<A, E>>
  /** Waits for every line started so far; fails as the first failed one did. */
  readonly settled: Effect.Effect<void, E>
}

/** One per task: the lines it starts ahead run as fibers of the fiber that starts them. */
export const traceAhead = <E>(): TraceAhead<E> => {
  let inFlight: Fiber.Fiber<unknown, E> | undefined
  const after = (fiber: typeof inFlight) => (fiber === undefined ? Effect.void : Effect.asVoid(Fiber.join(fiber)))
  return {
    ahead: (line) =>
      Effect.suspend(() => {
        // The line before is the one in flight now, not when the fork runs (by then it is this one).
        const before = after(inFlight)
        return Effect.map(Effect.fork(Effect.zipRight(before, line)), (fiber) => {
          inFlight = fiber
          return Fiber.join(fiber)
        })
      }),
    settled: Effect.suspend(() => after(inFlight))
  }
}
