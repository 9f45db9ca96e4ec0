/**
 * Preparing an agent capsule (a manifest with `inference:`): the driver and the WASM tools
 * loaded through the ComponentCache with their grants, the session workdir staged with the
 * skills and the model-visible tool list (./Staging.ts), the system prompt built, the runtime
 * variables of spec §3.4 fixed. The API key goes only to the driver: into its gateway, or (a 0.2
 * driver) its environment (./DriverAccess.ts).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import { artifactData, artifactLabel, artifactLocation, type CapsuleProject } from "../project/CapsuleProject.js"
import { ComponentCache } from "../sandbox/component/ComponentCache.js"
import { recordsExposed, sessionWorkdirs } from "../records/SessionWorkdirs.js"
import { type ContainmentDecision, containmentFor } from "../shell/containment/ContainmentDecision.js"
import { type ShellContainment, shellContainment } from "../shell/containment/ShellContainment.js"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../project/manifest/Capabilities.js"
import type { ArtifactData } from "../sandbox/GuestJob.js"
import { type GrantContext, toolGrant } from "../sandbox/grants/Grants.js"
import { effectiveLimits } from "../project/manifest/Capabilities.js"
import { effectiveLifecycle, type Lifecycle } from "../project/manifest/Lifecycle.js"
import { ProjectError } from "../project/ProjectError.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { ToolSpec } from "../sandbox/Sandbox.js"
import type { SandboxError } from "../sandbox/SandboxError.js"
import { delegateTaskDefinition } from "../delegation/DelegateTask.js"
import { driverAccess } from "./DriverAccess.js"
import { fetchPeerFileDefinition, shareFileDefinition } from "../planes/PeerTools.js"
import { systemPrompt } from "./DriverProtocol.js"
import type { ToolDefinition } from "../project/ToolDefinition.js"
import { stageAgentWorkdir } from "./Staging.js"
import { submitPlanDefinition } from "./SubmitPlan.js"
import { cgroupWarning } from "../shell/containment/CgroupProbe.js"
import { type HookEntry, loadHooks } from "../hooks/HookEntry.js"
import type { CompactionSettings } from "./Compaction.js"

export interface AgentLaunchOptions {
  readonly sessionId: string
  /** `--workdir`; default `<capsule dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** `localhost:<port>` once the door is bound (`MURMUR_CAPSULE_URL`); absent: not set. */
  readonly capsuleUrl?: string | undefined
}

export interface PreparedAgent {
  readonly project: CapsuleProject
  readonly sessionId: string
  /** The accessible workdir: guests' `.`, the shell's cwd, `task.md`, `out/`, `logs/`. */
  readonly workdir: string
  /** The session's scaffolding (`tools/`, `MURMUR.md`); `workdir` itself without `--workdir`. */
  readonly sessionWorkdir: string
  /** What the runtime records about the session (`trace.jsonl`, `blobs/`), outside every workdir (../sandbox/SessionWorkdirs.ts). */
  readonly records: string
  readonly model: string
  readonly maxTurns: number
  readonly maxTokens: number
  readonly driver: { readonly name: string; readonly spec: ToolSpec }
  /** WASM tools by name. */
  readonly tools: Readonly<Record<string, ToolSpec>>
  /** The `runtime: hook` artifacts, in declaration order (dispatch order). */
  readonly hooks: ReadonlyArray<HookEntry>
  /** Under `context.max_tokens`: when and how the history is compacted (./Compaction.ts). */
  readonly compaction: CompactionSettings | undefined
  /** Every `runtime: tool` entry (the dispatch and `invoke` allowlist). */
  readonly allowlist: ReadonlyArray<string>
  readonly artifacts: ReadonlyArray<ArtifactData>
  /** Skills by name: their `skill.md`. */
  readonly skills: Readonly<Record<string, string>>
  readonly toolList: ReadonlyArray<ToolDefinition>
  readonly system: string
  /** The manifest's resolved prompt alone, before the `[Capsule]` block (`system_prompt_sha256` hashes it). */
  readonly systemPromptText: string | undefined
  readonly systemPromptSource: "manifest" | "none"
  readonly shell: {
    readonly allow: ReadonlyArray<string>
    readonly baselineEnv: ReadonlyArray<string>
    readonly stripPatterns: ReadonlyArray<string>
    /** `capabilities.shell.max_output_bytes`, default applied: most output kept per command. */
    readonly maxOutputBytes: number
    /** What each command runs under (from `containment.host` and the manifest). */
    readonly containment: ShellContainment
  }
  /** Inference + identity variables for tools and the shell (never the API key). */
  readonly runtimeVars: Readonly<Record<string, string>>
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  readonly lifecycle: Lifecycle
  readonly deadlineSeconds: number
  /** `capabilities.spawn.allow`: the capsules `delegate-task` may start (empty: not offered). */
  readonly spawnAllow: ReadonlyArray<string>
  /** `lifecycle.delegation_deadline_secs`, or `MURMUR_DELEGATION_TIMEOUT_SECS` when set. */
  readonly delegationDeadlineSecs: number
  /** Declared and achieved containment, and the host tier the shell's commands run under. */
  readonly containment: ContainmentDecision
  readonly warnings: ReadonlyArray<string>
}

const readText = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : undefined)

type Inference = NonNullable<CapsuleProject["manifest"]["inference"]>

/** The components' caps, from `capabilities.limits`. */
const cappedBy = (project: CapsuleProject) => {
  const limits = effectiveLimits(project.manifest.capabilities)
  return { memoryBytes: limits.memoryBytes, tableElements: limits.tableElements }
}

/** The driver: its component, and its grant with the inference gateway's access. */
const loadDriver = (project: CapsuleProject, inference: Inference, context: GrantContext, deadlineSeconds: number, warnings: Array<string>) =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    const driverArtifact = project.artifacts.find((artifact) => artifact.entry.name === inference.driver!.artifact)
    if (driverArtifact?.wasm === undefined) {
      return yield* new ProjectError({ code: "E-RUN-006", message: `driver artifact '${inference.driver!.artifact}' is not installed` })
    }
    const access = driverAccess(driverArtifact.entry.name, inference.endpoint, inference.apiKey, driverArtifact.own?.inferenceAuth)
    if (access.warning !== undefined) warnings.push(access.warning)
    const driverGrant = yield* toolGrant({ ...context, runtimeVars: { ...context.runtimeVars, ...access.vars } }, driverArtifact.entry)
    warnings.push(...driverGrant.warnings)
    return {
      name: driverArtifact.entry.name,
      spec: {
        component: yield* cache.load(driverArtifact.wasm, cappedBy(project), artifactLabel(driverArtifact)),
        grant: { ...driverGrant.grant, gateway: access.gateway },
        deadlineSeconds
      }
    }
  })

/** The WASM tools (`runtime: tool`), each with its own grant. */
const loadTools = (project: CapsuleProject, context: GrantContext, deadlineSeconds: number, warnings: Array<string>) =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    const tools: Record<string, ToolSpec> = {}
    for (const artifact of project.artifacts) {
      const { entry } = artifact
      if (entry.runtime !== "tool" || artifact.wasm === undefined) continue
      const granted = yield* toolGrant(context, entry)
      warnings.push(...granted.warnings)
      tools[entry.name] = { component: yield* cache.load(artifact.wasm, cappedBy(project), artifactLabel(artifact)), grant: granted.grant, deadlineSeconds }
    }
    return tools
  })

/** `context.max_tokens` with `inference.compaction`, its prompt file read now. */
const compactionOf = (project: CapsuleProject, inference: Inference) =>
  Effect.gen(function*() {
    const window = project.manifest.context?.maxTokens
    if (window === undefined) return undefined
    const config = inference.compaction
    let systemPrompt = config?.systemPrompt
    if (config?.systemPromptFile !== undefined) {
      const path = resolve(project.directory, config.systemPromptFile)
      systemPrompt = readText(path) ?? (yield* new ProjectError({ code: "E-RUN-009", message: `cannot read inference.compaction.system_prompt_file ${path}` }))
    }
    return { window, config, systemPrompt } satisfies CompactionSettings
  })

/** The manifest's system prompt: inline, from `system_prompt_file`, or a skill's `skill.md`. */
const resolvePrompt = (project: CapsuleProject, inference: Inference, skills: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    let prompt: string | undefined = inference.systemPrompt
    if (inference.systemPromptFile !== undefined) {
      const path = resolve(project.directory, inference.systemPromptFile)
      prompt = readText(path) ?? (yield* new ProjectError({ code: "E-RUN-009", message: `cannot read inference.system_prompt_file ${path}` }))
    }
    if (inference.systemPromptArtifact !== undefined) {
      const entry = project.manifest.artifacts.find((candidate) => candidate.name === inference.systemPromptArtifact)!
      prompt = skills[entry.name] ?? readText(join(artifactLocation(project.directory, entry), "skill.md"))
    }
    return prompt
  })

export const prepareAgent = (project: CapsuleProject, options: AgentLaunchOptions): Effect.Effect<PreparedAgent, ProjectError | SandboxError, ComponentCache> =>
  Effect.gen(function*() {
    const { manifest } = project
    const inference = manifest.inference
    if (inference === undefined || inference.transport !== "http" || inference.driver === undefined) {
      return yield* new ProjectError({ code: "E-RUN-005", message: `${manifest.name}: the agent loop needs an inference block with transport: http and a driver` })
    }
    const containment = yield* containmentFor(manifest.capabilities, options.hostEnv)
    const workdirs = sessionWorkdirs(project.directory, options.sessionId, options.workdir)
    const { accessible: workdir, session: sessionWorkdir, records } = workdirs
    const exposed = recordsExposed(workdirs)
    if (exposed !== undefined) return yield* new ProjectError({ code: "E-RUN-002", message: exposed })
    mkdirSync(workdir, { recursive: true })
    yield* Effect.try({
      try: () => WorkdirFs.makeDirectory(workdir, "out"),
      catch: (error) => new ProjectError({ code: "E-RUN-002", message: `cannot prepare ${workdir}: ${(error as Error).message}` })
    })
    const runtimeVars: Record<string, string> = {
      MURMUR_INFERENCE_TRANSPORT: inference.transport,
      MURMUR_INFERENCE_ENDPOINT: inference.endpoint ?? "",
      MURMUR_INFERENCE_MODEL: inference.model,
      MURMUR_INFERENCE_DRIVER: inference.driver.artifact,
      ...(inference.driver.configJson === undefined ? {} : { MURMUR_INFERENCE_DRIVER_CONFIG: inference.driver.configJson }),
      MURMUR_CAPSULE_NAME: manifest.name,
      MURMUR_CAPSULE_VERSION: manifest.version,
      MURMUR_SESSION_ID: options.sessionId,
      ...(options.capsuleUrl === undefined ? {} : { MURMUR_CAPSULE_URL: options.capsuleUrl })
    }
    const context: GrantContext = { manifest, workdir, hostEnv: options.hostEnv, runtimeVars }
    const { deadlineSeconds } = effectiveLimits(manifest.capabilities)
    const warnings = [...project.warnings.map((w) => `warning[${w.code}]: ${w.message}`), ...containment.warnings]

    const driver = yield* loadDriver(project, inference, context, deadlineSeconds, warnings)

    const staged = yield* stageAgentWorkdir(project, {
      sessionId: options.sessionId,
      workdirs: { accessible: workdir, session: sessionWorkdir },
      capsuleUrl: options.capsuleUrl
    })
    warnings.push(...staged.warnings)
    const { skills } = staged
    const tools = yield* loadTools(project, context, deadlineSeconds, warnings)
    const hooks = yield* loadHooks(project, context, warnings)
    const cgroups = cgroupWarning(Object.keys(manifest.capabilities.resources ?? {}).filter((key) => key.startsWith("cgroup_")))
    if (cgroups !== undefined) warnings.push(cgroups)
    const compaction = yield* compactionOf(project, inference)
    const prompt = yield* resolvePrompt(project, inference, skills)
    const shellCaps = manifest.capabilities.shell
    const shell = {
      allow: shellCaps?.allow ?? [],
      baselineEnv: shellCaps?.baselineEnv ?? [],
      stripPatterns: shellCaps?.stripEnv ?? [],
      maxOutputBytes: shellCaps?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      containment: shellContainment(containment.host, manifest.capabilities, options.hostEnv["PATH"])
    }
    const spawnAllow = manifest.capabilities.spawn?.allow ?? []
    const lifecycle = effectiveLifecycle(manifest)
    const deadlineEnv = options.hostEnv["MURMUR_DELEGATION_TIMEOUT_SECS"]
    const deadlineOverride = deadlineEnv === undefined || !/^\d{1,9}$/.test(deadlineEnv) ? 0 : Number(deadlineEnv)
    if (deadlineEnv !== undefined && deadlineOverride === 0) {
      warnings.push(`warning[W-RUN-030]: MURMUR_DELEGATION_TIMEOUT_SECS=${JSON.stringify(deadlineEnv)} is not a positive number of seconds; lifecycle.delegation_deadline_secs (${lifecycle.delegationDeadlineSecs}) applies`)
    }
    return {
      project,
      sessionId: options.sessionId,
      workdir,
      sessionWorkdir,
      records,
      model: inference.model,
      maxTurns: inference.maxTurns,
      maxTokens: inference.maxTokens ?? 8192,
      driver,
      tools,
      hooks,
      compaction,
      allowlist: manifest.artifacts.filter((entry) => entry.runtime === "tool").map((entry) => entry.name),
      artifacts: project.artifacts.filter((artifact) => artifact.entry.runtime === "tool").map(artifactData),
      skills,
      // The runtime-owned tools come first, as they are dispatched first (§4.4 step 0).
      toolList: [
        ...(spawnAllow.length > 0 ? [delegateTaskDefinition(spawnAllow)] : []),
        ...(manifest.exports?.peerFiles === undefined ? [] : [shareFileDefinition]),
        ...(manifest.capabilities.peerFetch === undefined ? [] : [fetchPeerFileDefinition(manifest.capabilities.peerFetch.allow)]),
        ...(manifest.capabilities.plan?.submit === true ? [submitPlanDefinition] : []),
        ...staged.toolList
      ],
      system: systemPrompt(manifest.name, manifest.version, prompt),
      systemPromptText: prompt,
      systemPromptSource: prompt === undefined ? "none" : "manifest",
      shell,
      runtimeVars,
      hostEnv: options.hostEnv,
      lifecycle,
      deadlineSeconds,
      spawnAllow,
      delegationDeadlineSecs: deadlineOverride > 0 ? deadlineOverride : lifecycle.delegationDeadlineSecs,
      containment,
      warnings
    } satisfies PreparedAgent
  })
