/**
 * The `lifecycle:` block (spec §1.5, door spec §5.5): how many tasks a session accepts and what
 * it does after one. Read as the reference's serde struct — snake_case unit enums, unsigned
 * integers — with no further rule: every value that reads is accepted, and an absent key takes
 * its default, whatever the other keys say. An absent block reads as every default
 * (`effectiveLifecycle`). One default is this runtime's own: `task_acceptance` is `queue` (the
 * reference's is `single`), so declaring any other key never changes how tasks are accepted.
 * Combinations where one key undoes another are warned (`lifecycleWarnings`).
 */
import { Schema } from "effect"
import type { ManifestWarning } from "./ManifestError.js"
import { type Decoded, optUint, optVariant } from "./YamlReader.js"

export const TaskAcceptance = Schema.Literal("none", "single", "queue")
export type TaskAcceptance = typeof TaskAcceptance.Type

export const AfterTask = Schema.Literal("exit", "sleep")
export type AfterTask = typeof AfterTask.Type

export const ConversationMode = Schema.Literal("stateless", "threaded")
export type ConversationMode = typeof ConversationMode.Type

export const Lifecycle = Schema.Struct({
  taskAcceptance: TaskAcceptance,
  afterTask: AfterTask,
  /** Pending (not started) tasks under `queue`; also the task channel's capacity. */
  queueDepth: Schema.Number,
  /** request-input wait before the task fails with `input-timeout`; absent waits forever. */
  inputTimeoutSecs: Schema.optionalWith(Schema.Number, { exact: true }),
  conversation: ConversationMode,
  /** How often an `on-task-end` hook may reopen one task; `0` disables reopening. */
  maxTaskReopens: Schema.Number,
  /** Foreground window before a shell command detaches (`0`: every command detaches). */
  shellGraceSecs: Schema.Number,
  /** The bound on a delegation (`MURMUR_DELEGATION_TIMEOUT_SECS` overrides it at launch). */
  delegationDeadlineSecs: Schema.Number,
  /** How deep a chain of delegations may grow below the first capsule (its children are depth 1). */
  delegationMaxDepth: Schema.Number,
  /** Children of one session running at once. */
  delegationMaxChildren: Schema.Number
})
export type Lifecycle = typeof Lifecycle.Type

export const DEFAULT_LIFECYCLE: Lifecycle = {
  // Not the reference's `single`: a served capsule keeps taking tasks, block or no block.
  taskAcceptance: "queue",
  afterTask: "exit",
  queueDepth: 1,
  conversation: "stateless",
  maxTaskReopens: 1,
  shellGraceSecs: 10,
  delegationDeadlineSecs: 600,
  delegationMaxDepth: 3,
  delegationMaxChildren: 4
}

export const lifecycleSpec = {
  task_acceptance: optVariant(["none", "single", "queue"]),
  after_task: optVariant(["exit", "sleep"]),
  queue_depth: optUint("usize"),
  input_timeout_secs: optUint("u64"),
  conversation: optVariant(["stateless", "threaded"]),
  max_task_reopens: optUint("u32"),
  shell_grace_secs: optUint("u64"),
  delegation_deadline_secs: optUint("u64"),
  delegation_max_depth: optUint("u32"),
  delegation_max_children: optUint("u32")
}
export type RawLifecycle = Decoded<typeof lifecycleSpec>

export const lowerLifecycle = (raw: RawLifecycle): Lifecycle => ({
  taskAcceptance: raw.task_acceptance ?? DEFAULT_LIFECYCLE.taskAcceptance,
  afterTask: raw.after_task ?? DEFAULT_LIFECYCLE.afterTask,
  queueDepth: raw.queue_depth ?? DEFAULT_LIFECYCLE.queueDepth,
  ...(raw.input_timeout_secs === undefined ? {} : { inputTimeoutSecs: raw.input_timeout_secs }),
  conversation: raw.conversation ?? DEFAULT_LIFECYCLE.conversation,
  maxTaskReopens: raw.max_task_reopens ?? DEFAULT_LIFECYCLE.maxTaskReopens,
  shellGraceSecs: raw.shell_grace_secs ?? DEFAULT_LIFECYCLE.shellGraceSecs,
  delegationDeadlineSecs: raw.delegation_deadline_secs ?? DEFAULT_LIFECYCLE.delegationDeadlineSecs,
  delegationMaxDepth: raw.delegation_max_depth ?? DEFAULT_LIFECYCLE.delegationMaxDepth,
  delegationMaxChildren: raw.delegation_max_children ?? DEFAULT_LIFECYCLE.delegationMaxChildren
})

/** The lifecycle a session runs under: the declared block, or every default. */
export const effectiveLifecycle = (manifest: { readonly lifecycle?: Lifecycle }): Lifecycle =>
  manifest.lifecycle ?? DEFAULT_LIFECYCLE

/**
 * Whether work arriving after the first task ends (a detached shell command's completion, a
 * delegation's outcome) can still be received: only `queue` + `sleep`.
 */
export const receivesBackgroundTasks = (lifecycle: Lifecycle): boolean =>
  lifecycle.taskAcceptance === "queue" && lifecycle.afterTask === "sleep"

/**
 * The combinations in which one lifecycle key undoes another: `W-LIFECYCLE`, which `validate
 * --strict` fails on and `serve` and `run` print. Under `single` a threaded conversation never
 * gets its second turn (every later task is refused "capsule is busy"), and `after_task: sleep`
 * keeps a session only under `queue`.
 */
export const lifecycleWarnings = (lifecycle: Lifecycle): ReadonlyArray<ManifestWarning> => {
  const warnings: Array<ManifestWarning> = []
  const acceptance = lifecycle.taskAcceptance
  if (lifecycle.conversation === "threaded" && acceptance === "single") {
    warnings.push({
      code: "W-LIFECYCLE",
      message: "lifecycle.conversation: threaded under task_acceptance: single: the session takes one task, so a conversation's " +
        "second turn is refused ('capsule is busy'); declare task_acceptance: queue (the default) to continue conversations",
      path: "lifecycle.task_acceptance"
    })
  }
  if (lifecycle.afterTask === "sleep" && acceptance !== "queue") {
    warnings.push({
      code: "W-LIFECYCLE",
      message: `lifecycle.after_task: sleep has no effect under task_acceptance: ${acceptance}: run ends after its task, as under exit; ` +
        "sleep keeps a session taking tasks only under task_acceptance: queue (the default)",
      path: "lifecycle.after_task"
    })
  }
  return warnings
}
