/**
 * Grants per guest (spec §3.2–§3.6): the capsule gets the whole workdir as `.`, the
 * capsule-wide env allowlist (credentials stripped) and network ceiling; a tool gets the same,
 * narrowed by its own entry: `filesystem.scope` moves its `.` to `<workdir>/<scope>`, a
 * declared `network.allow` can only subtract, `config:` arrives as `MURMUR_ARTIFACT_CONFIG`.
 * The capsule-wide `filesystem.read_only` travels to every guest made relative to its preopen.
 */
import { realpathSync } from "node:fs"
import { isAbsolute, join, relative, resolve } from "node:path"
import { Either } from "effect"
import { guestEnv, refusedAllowEntries } from "./EnvGrant.js"
import type { GuestGrant } from "../GuestJob.js"
import type { CapsuleManifest } from "../../project/Manifest.js"
import type { ArtifactEntry } from "../../project/manifest/ArtifactEntry.js"
import { effectiveLimits } from "../../project/manifest/Capabilities.js"
import { narrow, type NetworkRule, parseAllowList } from "../../project/NetworkPolicy.js"
import { ProjectError } from "../../project/ProjectError.js"
import { stateDir } from "./StateDir.js"
import * as WorkdirFs from "../../records/WorkdirFs.js"

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

const within = (parent: string, child: string) => {
  const path = relative(parent, child)
  return path === "" || (path !== ".." && !path.startsWith("../") && !isAbsolute(path))
}

/**
 * The read-only entries (workdir-relative) as paths relative to `preopen` (`""`: all of it); an
 * entry outside the preopen, and one outside the workdir, covers nothing the guest sees.
 */
export const readOnlyWithin = (workdir: string, preopen: string, entries: ReadonlyArray<string>): ReadonlyArray<string> =>
  entries.flatMap((entry) => {
    const path = resolve(workdir, entry)
    if (!within(workdir, path)) return []
    if (within(preopen, path)) return [relative(preopen, path)]
    return within(path, preopen) ? [""] : []
  })

/** The preopen for `scope` (made beneath the workdir, never through a link), as a path without links. */
const preopenOf = (workdir: string, scope: string | undefined): Either.Either<string, ProjectError> =>
  Either.try({
    try: () => {
      // A scoped guest sees only its subtree; making it must not fail silently into a wider grant.
      if (scope !== undefined) WorkdirFs.makeDirectory(workdir, scope)
      return realpathSync(scope === undefined ? workdir : join(workdir, scope))
    },
    catch: (error) => new ProjectError({ code: "E-RUN-002", message: `cannot prepare the guest's directory: ${error instanceof Error ? error.message : String(error)}` })
  })

/** The capsule-wide `read_only` (on an artifact entry it is inert, W-SEC-008), for a guest whose `.` is `scope`. */
const readOnlyOf = (context: GrantContext, scope: string | undefined) =>
  readOnlyWithin(context.workdir, scope === undefined ? context.workdir : join(context.workdir, scope), context.manifest.capabilities.filesystem?.readOnly ?? [])

export const capsuleGrant = (context: GrantContext): Either.Either<Granted, ProjectError> =>
  Either.gen(function*() {
    const network = yield* ceilingRules(context.manifest)
    const preopen = yield* preopenOf(context.workdir, undefined)
    const { env, warnings } = envFor(context, undefined)
    const limits = effectiveLimits(context.manifest.capabilities)
    const readOnly = readOnlyOf(context, undefined)
    return { grant: { preopen, readOnly, env, network, memoryBytes: limits.memoryBytes, instances: limits.instances }, warnings }
  })

export const toolGrant = (context: GrantContext, entry: ArtifactEntry): Either.Either<Granted, ProjectError> =>
  Either.gen(function*() {
    const ceiling = yield* ceilingRules(context.manifest)
    const narrowed = yield* Either.mapLeft(
      narrow(ceiling, entry.capabilities?.network?.allow, entry.name),
      (error) => new ProjectError({ code: "E-CAP-001", message: error.message })
    )
    const scope = entry.capabilities?.filesystem?.scope
    const preopen = yield* preopenOf(context.workdir, scope)
    const { env, warnings } = envFor(context, entry)
    const limits = effectiveLimits(context.manifest.capabilities)
    const readOnly = readOnlyOf(context, scope)
    const declared = entry.capabilities?.state
    const state = declared === undefined ? undefined : yield* stateDir(context.hostEnv, declared.store ?? entry.name)
    return {
      grant: { preopen, ...(state === undefined ? {} : { state }), readOnly, env, network: narrowed.rules, memoryBytes: limits.memoryBytes, instances: limits.instances },
      warnings: [...narrowed.warnings, ...warnings]
    }
  })

/**
 * A hook's grant (spec §3.2, §3.6): no preopen unless its entry scopes one (`<workdir>/<scope>`),
 * no network unless its entry allows some (within the ceiling), an environment of its `config:`
 * alone, and its state store when declared.
 */
export const hookGrant = (context: GrantContext, entry: ArtifactEntry): Either.Either<Granted, ProjectError> =>
  Either.gen(function*() {
    const ceiling = yield* ceilingRules(context.manifest)
    const declared = entry.capabilities?.network?.allow
    const narrowed = declared === undefined
      ? { rules: [], warnings: [] }
      : yield* Either.mapLeft(narrow(ceiling, declared, entry.name), (error) => new ProjectError({ code: "E-CAP-001", message: error.message }))
    const scope = entry.capabilities?.filesystem?.scope
    const preopen = scope === undefined ? undefined : yield* preopenOf(context.workdir, scope)
    const env = guestEnv({
      hostEnv: {},
      allow: [],
      stripPatterns: [],
      ...(entry.configJson === undefined ? {} : { artifactConfig: entry.configJson }),
      runtimeVars: {}
    })
    const limits = effectiveLimits(context.manifest.capabilities)
    const state = entry.capabilities?.state === undefined ? undefined : yield* stateDir(context.hostEnv, entry.capabilities.state.store ?? entry.name)
    return {
      grant: {
        preopen,
        ...(state === undefined ? {} : { state }),
        readOnly: scope === undefined ? [] : readOnlyOf(context, scope),
        env,
        network: narrowed.rules,
        memoryBytes: limits.memoryBytes,
        instances: limits.instances
      },
      warnings: narrowed.warnings
    }
  })
