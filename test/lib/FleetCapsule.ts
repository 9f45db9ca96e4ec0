/**
 * A capsule for fleet tests: every task streams frames spread over a few seconds, so a test can
 * kill the runner serving it mid-stream and resume elsewhere with `Last-Event-ID`.
 *
 * No fixture can wait inside its guest (the scripted driver answers at once), so the wait is a
 * shell command: the scripted driver's first turn asks for `ticks` tool calls, each
 * `sleep <tickMs>`, which run one after the other, each result streamed as one artifact frame; its
 * second turn ends the task (completed, "ticked N times"). So frames come about `tickMs` apart,
 * plus a process spawn (~25 ms here). One turn rather than one per tick: each driver call adds
 * ~150 ms and two frames, which spread the ticks unevenly.
 */
import { call, endTurn, toolTurn } from "./AgentE2E.js"
import { makeAgentCapsuleDir } from "./CapsuleDirs.js"

export interface TickingCapsuleOptions {
  /** `sleep` calls per task, one artifact frame each (default 30). */
  readonly ticks?: number
  /** What each `sleep` waits, in ms (default 100). */
  readonly tickMs?: number
  /** The capsule's name (default `ticking`): a runner serving several needs them distinct. */
  readonly name?: string
  /** Extra top-level YAML; not `lifecycle:`, `inference:` or `capabilities:`, which are written here. */
  readonly extra?: string
}

/**
 * Note: an agent session runs one task at a time whatever `--max-active` says (its tasks share a
 * workdir; src/layers/AgentSession.ts), so the many tasks a fleet test sends wait in the queue,
 * made deep here (`queue_depth`, default 1), rather than run side by side.
 */
export const makeTickingCapsuleDir = (options: TickingCapsuleOptions = {}): Promise<string> => {
  const ticks = options.ticks ?? 30
  const tickMs = options.tickMs ?? 100
  const seconds = (tickMs / 1000).toFixed(3)
  const replies = [
    toolTurn(...Array.from({ length: ticks }, (_, i) => call(`tick-${i + 1}`, "sleep", { command: seconds }))),
    endTurn(`ticked ${ticks} times`)
  ]
  return makeAgentCapsuleDir({
    name: options.name ?? "ticking",
    driverConfig: { replies },
    capabilities: "  shell:\n    allow: [sleep]\n",
    extra: "lifecycle:\n  task_acceptance: queue\n  queue_depth: 256\n" + (options.extra ?? "")
  })
}
