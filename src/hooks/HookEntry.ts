/**
 * A capsule's hooks (spec §4.7): each `runtime: hook` artifact with its contract, read from its
 * own manifest (`binding`, `execution_mode`, `commit_policy`) and checked the reference's way at
 * launch, its component loaded and its grant built from its entry (../sandbox/grants/Grants.ts
 * `hookGrant`). Declaration order is dispatch order.
 */
import { Effect, Either } from "effect"
import { artifactLabel, type CapsuleProject } from "../project/CapsuleProject.js"
import { effectiveLimits } from "../project/manifest/Capabilities.js"
import type { ArtifactManifest } from "../project/manifest/ArtifactManifest.js"
import { ProjectError } from "../project/ProjectError.js"
import { ComponentCache } from "../sandbox/component/ComponentCache.js"
import { HOOK_BINDINGS, type HookBinding } from "../sandbox/GuestJob.js"
import { type GrantContext, hookGrant } from "../sandbox/grants/Grants.js"
import type { ToolSpec } from "../sandbox/Sandbox.js"

export const COMMIT_POLICIES = ["none", "replace-context", "write-manifests", "reopen-task", "seed-context", "deny"] as const
export type CommitPolicy = typeof COMMIT_POLICIES[number]

/** The policy each binding can honour besides `none` (deny: at the decision point). */
const HONOURED: Readonly<Partial<Record<HookBinding, CommitPolicy>>> = {
  "on-stage": "write-manifests",
  "on-task-start": "seed-context",
  "on-compaction": "replace-context",
  "on-task-end": "reopen-task",
  "on-shell": "deny",
  "on-tool-call": "deny"
}

export interface HookContract {
  /** The bindings it is called at: its one declared binding, else every one but `on-stage`. */
  readonly bindings: ReadonlyArray<HookBinding>
  readonly mode: "blocking" | "async"
  readonly policy: CommitPolicy
}

export interface HookEntry extends HookContract {
  readonly name: string
  readonly spec: ToolSpec
  /** `on_overflow` of an async hook's queue. */
  readonly overflow: "drop" | "block"
  readonly taskIo: boolean
  readonly conversation: boolean
}

const isBinding = (value: string): value is HookBinding => (HOOK_BINDINGS as ReadonlyArray<string>).includes(value)
const isPolicy = (value: string): value is CommitPolicy => (COMMIT_POLICIES as ReadonlyArray<string>).includes(value)

/** The contract of hook `name` from its own manifest; Left: why it cannot be staged. */
export const hookContract = (name: string, own: ArtifactManifest | undefined): Either.Either<HookContract, string> => {
  const binding = own?.binding
  const mode = own?.executionMode ?? "blocking"
  const policy = own?.commitPolicy ?? "none"
  if (binding !== undefined && !isBinding(binding)) return Either.left(`hook '${name}': unknown binding '${binding}'; expected one of: ${HOOK_BINDINGS.join(", ")}`)
  if (mode !== "blocking" && mode !== "async") return Either.left(`hook '${name}': unknown execution_mode '${mode}'; expected one of: blocking, async`)
  if (!isPolicy(policy)) return Either.left(`hook '${name}': unknown commit_policy '${policy}'; expected one of: ${COMMIT_POLICIES.join(", ")}`)
  if (mode === "async" && policy !== "none") return Either.left(`async-with-commit not supported: hook '${name}' is execution_mode: async with commit_policy '${policy}'; an async hook's output is never committed`)
  if (binding === "on-stage" && mode === "async") return Either.left(`on-stage hooks must be blocking; hook '${name}' is execution_mode: async`)
  if (policy === "deny" && binding === undefined) return Either.left(`hook '${name}': commit_policy 'deny' needs an explicit binding (on-shell or on-tool-call)`)
  if (policy !== "none") {
    const honoured = binding === undefined ? undefined : HONOURED[binding]
    if (honoured !== policy) {
      const at = binding ?? "all events"
      return Either.left(`hook '${name}': commit_policy '${policy}' is not valid for binding '${at}'; binding '${at}' honors commit_policy '${honoured ?? "none"}'`)
    }
  }
  return Either.right({ bindings: binding === undefined ? HOOK_BINDINGS.filter((b) => b !== "on-stage") : [binding], mode, policy })
}

/** Every hook artifact of the project, loaded, in declaration order. */
export const loadHooks = (project: CapsuleProject, context: GrantContext, warnings: Array<string>) =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    const limits = effectiveLimits(project.manifest.capabilities)
    const hooks: Array<HookEntry> = []
    for (const artifact of project.artifacts) {
      const { entry } = artifact
      if (entry.runtime !== "hook") continue
      if (artifact.wasm === undefined) return yield* new ProjectError({ code: "E-RUN-006", message: `hook artifact '${entry.name}' has no WebAssembly component` })
      const contract = hookContract(entry.name, artifact.own)
      if (Either.isLeft(contract)) return yield* new ProjectError({ code: "E-RUN-002", message: contract.left })
      const granted = yield* hookGrant(context, entry)
      warnings.push(...granted.warnings)
      const component = yield* cache.load(artifact.wasm, { memoryBytes: limits.memoryBytes, tableElements: limits.tableElements }, artifactLabel(artifact))
      hooks.push({
        name: entry.name,
        ...contract.right,
        spec: { component, grant: granted.grant, deadlineSeconds: limits.hookDeadlineSeconds },
        overflow: entry.onOverflow,
        taskIo: entry.capabilities?.taskIo?.read === true,
        conversation: entry.capabilities?.conversation?.read === true
      })
    }
    return hooks
  })
