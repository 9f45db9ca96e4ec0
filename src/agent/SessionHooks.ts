/**
 * The session-wide hook calls of an agent session (spec §4.1, §4.7): `on-stage` (its
 * `write-manifests` answer writes `tools/<binary>/murmur.yaml`), `on-session-start` when the
 * session opens, and, when it closes, `on-session-end` with the session's sums, then the async
 * queues drained (at most 15 s). A manifest a hook writes must be one path segment's name and
 * parse as an artifact manifest; anything else is a fault, never a write.
 */
import { join, relative } from "node:path"
import { Effect, Either, type Scope } from "effect"
import { parseArtifactManifest } from "../project/manifest/ArtifactManifest.js"
import { MANIFEST_FILENAME } from "../project/manifest/ManifestError.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { HookServices, Hooks } from "../hooks/Hooks.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import type { SessionTotals } from "./AgentLoop.js"

const isSegment = (name: string) => name.length > 0 && name !== "." && name !== ".." && !/[/\\\0]/.test(name)

/** The capsule-wide grants a session has, by name (`session-context.capabilities`). */
const grantedCapabilities = (prepared: PreparedAgent): ReadonlyArray<string> => {
  const caps = prepared.project.manifest.capabilities
  return [
    ...((caps.network?.allow.length ?? 0) > 0 ? ["network"] : []),
    "filesystem",
    ...(prepared.shell.allow.length > 0 ? ["shell"] : []),
    ...(prepared.spawnAllow.length > 0 ? ["spawn"] : [])
  ]
}

const writeManifests = (hooks: Hooks, prepared: PreparedAgent, hook: string, manifests: unknown) =>
  Effect.forEach(Array.isArray(manifests) ? manifests as ReadonlyArray<{ binaryName?: unknown; content?: unknown }> : [], (manifest) => {
    const name = typeof manifest.binaryName === "string" ? manifest.binaryName : ""
    const content = typeof manifest.content === "string" ? manifest.content : ""
    const problem = !isSegment(name)
      ? `'${name}' is not one path segment`
      : Either.isLeft(parseArtifactManifest(content))
      ? `the manifest for '${name}' does not parse`
      : undefined
    if (problem !== undefined) return hooks.fault(hook, "on-stage", "write-manifests", `${problem}; not written`)
    const here = relative(prepared.workdir, prepared.sessionWorkdir)
    return Effect.try(() => WorkdirFs.write(prepared.workdir, join(here, "tools", name, MANIFEST_FILENAME), content)).pipe(
      Effect.catchAll((error) => hooks.fault(hook, "on-stage", "write-manifests", `tools/${name}/${MANIFEST_FILENAME} not written: ${String(error)}`))
    )
  }, { discard: true })

export const sessionHooks = (
  hooks: Hooks,
  prepared: PreparedAgent,
  services: HookServices,
  session: { readonly started: number; readonly totals: SessionTotals }
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { manifest } = prepared.project
    const context = { services }
    if (hooks.at("on-stage")) {
      const staged = yield* hooks.fire("on-stage", { shellAllow: [...prepared.shell.allow] }, context)
      for (const commit of staged.commits) yield* writeManifests(hooks, prepared, commit.hook, commit.val)
    }
    if (hooks.at("on-session-start")) {
      yield* hooks.fire("on-session-start", {
        capsuleName: manifest.name,
        capsuleVersion: manifest.version,
        sessionId: prepared.sessionId,
        model: prepared.model,
        capabilities: grantedCapabilities(prepared)
      }, context)
    }
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const { totals } = session
        if (hooks.at("on-session-end")) {
          yield* hooks.fire("on-session-end", {
            totalTurns: totals.turns,
            totalInputTokens: totals.inputTokens,
            totalOutputTokens: totals.outputTokens,
            totalToolCalls: totals.toolCalls,
            totalShellCalls: totals.shellCalls,
            durationMs: Date.now() - session.started,
            exitStatus: totals.lastExit
          }, context)
        }
        yield* hooks.drain
      })
    )
  })
