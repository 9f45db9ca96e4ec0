/**
 * Every way a guest run can fail, as one error with a reason (after AiError's shape). Messages
 * are worded like the reference's (spec §2.2, §2.3, §5.1); `stderr` carries what the guest wrote
 * before it failed.
 */
import { Schema } from "effect"

export const SandboxFailure = Schema.Literal(
  "Trap",
  "Deadline",
  "MemoryLimit",
  "TableLimit",
  "InstanceLimit",
  "Instantiate",
  "VersionMismatch",
  "DeniedImport",
  "MissingExport",
  "InvalidComponent",
  "WorkerCrashed"
)
export type SandboxFailure = typeof SandboxFailure.Type

export class SandboxError extends Schema.TaggedError<SandboxError>()("SandboxError", {
  reason: SandboxFailure,
  message: Schema.String,
  stderr: Schema.optional(Schema.String)
}) {}

/** Who ran: the script capsule, a named tool / driver, or a named hook (one lifecycle call). */
export type GuestRole = { readonly kind: "capsule" } | { readonly kind: "tool" | "hook"; readonly name: string }

export const subject = (role: GuestRole) => role.kind === "capsule" ? "capsule execution" : `${role.kind} '${role.name}'`

export const deadlineMessage = (role: GuestRole, seconds: number) =>
  role.kind === "capsule"
    ? `capsule execution exceeded its ${seconds}s deadline and was interrupted; raise capabilities.limits.deadline_seconds if it needs longer`
    : `${subject(role)} exceeded its ${seconds}s execution deadline (capabilities.limits.deadline_seconds) and was interrupted`

export const limitMessage = (role: GuestRole, detail: string) => `${subject(role)} exceeded its configured resource limits: ${detail}`

export const trapMessage = (role: GuestRole, trap: string) =>
  role.kind === "capsule" ? `capsule execution trapped: ${trap}` : `${subject(role)} trapped: ${trap}`

export const missingExportMessage = (role: GuestRole) =>
  role.kind === "capsule"
    ? "capsule component missing export murmur:capsule/run@0.1.0#run; rebuild the artifact against the versioned WIT"
    : `tool component '${role.name}' missing export murmur:tool/run@0.1.0#run; rebuild the artifact against the versioned WIT`
