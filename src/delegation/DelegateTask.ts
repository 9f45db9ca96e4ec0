/**
 * The runtime-owned tool `delegate-task` (sandbox spec §4.4 step 0, door spec §8.1): offered to
 * the model only when `capabilities.spawn.allow` names capsules, dispatched before the shell,
 * skills and WASM tools. It starts the child and answers at once with the delegation id, the
 * child's session and its workdir; the child's outcome arrives later as a `completion` task.
 */
import { Effect, Either } from "effect"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import { errorResult } from "../shell/ShellGrant.js"
import type { DelegationLauncher, DelegationRequest } from "./DelegationLauncher.js"
import type { ToolDefinition } from "../project/ToolDefinition.js"

export const DELEGATE_TASK = "delegate-task"

export const delegateTaskDefinition = (allow: ReadonlyArray<string>): ToolDefinition => ({
  name: DELEGATE_TASK,
  description: "Hand a sub-task to another capsule. Returns once the child has started (its delegation id, session and workdir); " +
    "its outcome arrives later as a separate completion task naming the child's result file.",
  parameters: {
    type: "object",
    properties: {
      capsule: { type: "string", enum: [...allow], description: "The capsule to delegate to (one of capabilities.spawn.allow)" },
      task: { type: "string", description: "The child's task text" }
    },
    required: ["capsule", "task"],
    additionalProperties: false
  }
})

const readInput = (input: unknown): Either.Either<{ readonly capsule: string; readonly task: string }, string> => {
  const record = typeof input === "object" && input !== null ? input as Record<string, unknown> : {}
  const extra = Object.keys(record).filter((key) => key !== "capsule" && key !== "task")
  if (typeof record.capsule !== "string" || record.capsule.length === 0) return Either.left("delegate-task needs 'capsule', a name from capabilities.spawn.allow")
  if (typeof record.task !== "string" || record.task.trim().length === 0) return Either.left("delegate-task needs 'task', the child's task text")
  if (extra.length > 0) return Either.left(`delegate-task takes only 'capsule' and 'task' (got ${extra.join(", ")})`)
  return Either.right({ capsule: record.capsule, task: record.task })
}

/** Runs one `delegate-task` call: a refusal or a failed launch is an error result the model reads. */
export const delegateTask = (
  launcher: DelegationLauncher["Type"],
  input: unknown,
  task: Omit<DelegationRequest, "capsule" | "task">
): Effect.Effect<ToolResultData> =>
  Either.match(readInput(input), {
    onLeft: (message) => Effect.succeed(errorResult(message)),
    onRight: ({ capsule, task: text }) =>
      launcher.start({ ...task, capsule, task: text }).pipe(
        Effect.map((started): ToolResultData => ({
          status: "passed",
          summary: `delegated to ${started.capsule}@${started.version} as ${started.delegationId}; its outcome arrives as a completion task`,
          data: JSON.stringify({
            status: "started",
            delegation_id: started.delegationId,
            capsule: started.capsule,
            version: started.version,
            child_session_id: started.childSessionId,
            child_workdir: started.childWorkdir
          }),
          truncated: false,
          metadata: []
        })),
        Effect.catchTag("DelegationError", (error) => Effect.succeed(errorResult(error.message)))
      )
  })
