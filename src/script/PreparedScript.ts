/** What launching a script capsule settles once (./ScriptLaunch.ts), read by its runs and its trace. */
import type { CapsuleProject } from "../project/CapsuleProject.js"
import type { CompiledComponent } from "../sandbox/component/ComponentCache.js"
import type { ArtifactData, GuestGrant } from "../sandbox/GuestJob.js"
import type { NetworkRule } from "../project/NetworkPolicy.js"
import type { ToolSpec } from "../sandbox/Sandbox.js"
import type { ContainmentDecision } from "../shell/containment/ContainmentDecision.js"

export interface PreparedScript {
  readonly project: CapsuleProject
  readonly sessionId: string
  readonly workdir: string
  /** Where `trace.jsonl` goes: `<capsule dir>/.murmur/sessions/<session id>`, outside the workdir (as an agent's). */
  readonly records: string
  readonly capsule: CompiledComponent
  readonly grant: GuestGrant
  readonly ceiling: ReadonlyArray<NetworkRule>
  readonly deadlineSeconds: number
  readonly tools: Readonly<Record<string, ToolSpec>>
  readonly allowlist: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<ArtifactData>
  readonly containment: ContainmentDecision
  readonly warnings: ReadonlyArray<string>
}
