/**
 * Grants per guest (spec §3.2–§3.6): the capsule gets the whole workdir as `.`, the
 * capsule-wide env allowlist (credentials stripped) and network ceiling; a tool gets the same,
 * narrowed by its own entry: `filesystem.scope` moves its `.` to `<workdir>/<scope>`, a
 * declared `network.allow` can only subtract, `config:` arrives as `MURMUR_ARTIFACT_CONFIG`.
 */
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Either } from "effect"
import { guestEnv, refusedAllowEntries } from "./EnvGrant.js"
import type { GuestGrant } from "./GuestJob.js"
import type { CapsuleManifest } from "./Manifest.js"
import type { ArtifactEntry } from "./manifest/ArtifactEntry.js"
import { effectiveLimits } from "./manifest/Capabilities.js"
import { narrow, type NetworkRule, parseAllowList } from "./NetworkPolicy.js"
import { ProjectError } from "./ProjectError.js"

export interface GrantContext {
  readonly manifest: CapsuleManifest
  readonly workdir: string
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** The runtime's own variables, set last (cannot be shadowed). */
  readonly runtimeVars: Readonly<Record<string, string>>
}

export interface Granted {
  readonly grant: GuestGrant
  readonly warnings: ReadonlyArray<string>
}

export const ceilingRules = (manifest: CapsuleManifest): Either.Either<ReadonlyArray<NetworkRule>, ProjectError> =>
  Either.mapLeft(parseAllowList(manifest.capabilities.network?.allow ?? []), (error) => new ProjectError({ code: "E-CAP-001", message: error.message }))

const envFor = (context: GrantContext, entry: ArtifactEntry | undefined) => {
  const caps = context.manifest.capabilities
  const allow = caps.env?.allow ?? []
  const stripPatterns = caps.shell?.stripEnv ?? []
  const warnings = refusedAllowEntries(allow, stripPatterns).map(({ name, pattern }) =>
    `warning: capabilities.env.allow names ${name}, which matches the credential pattern '${pattern}'; it is not passed to guests`
  )
  const env = guestEnv({
    hostEnv: context.hostEnv,
    allow,
    stripPatterns,
    ...(entry?.configJson === undefined ? {} : { artifactConfig: entry.configJson }),
    runtimeVars: context.runtimeVars
  })
  return { env, warnings }
}

export const capsuleGrant = (context: GrantContext): Either.Either<Granted, ProjectError> =>
  Either.map(ceilingRules(context.manifest), (network) => {
    const { env, warnings } = envFor(context, undefined)
    const limits = effectiveLimits(context.manifest.capabilities)
    return { grant: { preopen: context.workdir, env, network, memoryBytes: limits.memoryBytes, instances: limits.instances }, warnings }
  })

export const toolGrant = (context: GrantContext, entry: ArtifactEntry): Either.Either<Granted, ProjectError> =>
  Either.gen(function*() {
    const ceiling = yield* ceilingRules(context.manifest)
    const narrowed = yield* Either.mapLeft(
      narrow(ceiling, entry.capabilities?.network?.allow, entry.name),
      (error) => new ProjectError({ code: "E-CAP-001", message: error.message })
    )
    const scope = entry.capabilities?.filesystem?.scope
    const preopen = scope === undefined ? context.workdir : join(context.workdir, scope)
    // A scoped tool sees only its subtree; creating it must not fail silently into a wider grant.
    if (scope !== undefined) mkdirSync(preopen, { recursive: true })
    const { env, warnings } = envFor(context, entry)
    const limits = effectiveLimits(context.manifest.capabilities)
    return {
      grant: { preopen, env, network: narrowed.rules, memoryBytes: limits.memoryBytes, instances: limits.instances },
      warnings: [...narrowed.warnings, ...warnings]
    }
  })
