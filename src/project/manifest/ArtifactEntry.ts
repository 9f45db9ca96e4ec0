/**
 * One entry of a capsule manifest's `artifacts:` list (§1.5): its role, where it resolves from,
 * its operator-only grant and config. Every refusal is the reference's
 * "invalid artifact declaration at index N: …" text, checked in the reference's order.
 */
import { Schema } from "effect"
import type { Node } from "yaml"
import { lowerArtifactConfig } from "./ArtifactConfig.js"
import { Capabilities, capabilitiesSpec, checkGrantShapes, lowerCapabilities } from "./Capabilities.js"
import { invalidArtifact, type ManifestWarning } from "./ManifestError.js"
import { block, type Decoded, optBool, optString, present, type ReadContext, refuse } from "./YamlReader.js"

export const ArtifactRole = Schema.Literal("tool", "driver", "hook", "skill")
export type ArtifactRole = typeof ArtifactRole.Type

export const OnOverflow = Schema.Literal("drop", "block")
export type OnOverflow = typeof OnOverflow.Type

export const ArtifactEntry = Schema.Struct({
  name: Schema.String,
  /** `"local"` for an entry resolved from `source:`. */
  version: Schema.String,
  runtime: ArtifactRole,
  source: Schema.optionalWith(Schema.String, { exact: true }),
  localSource: Schema.Boolean,
  promptPayload: Schema.Boolean,
  /** The operator's per-artifact grant; absent means the role's baseline (§3.6). */
  capabilities: Schema.optionalWith(Capabilities, { exact: true }),
  onOverflow: OnOverflow,
  /** The `config:` block as compact JSON in declaration order: the `MURMUR_ARTIFACT_CONFIG` value. */
  configJson: Schema.optionalWith(Schema.String, { exact: true })
})
export type ArtifactEntry = typeof ArtifactEntry.Type

export const artifactSpec = {
  name: optString,
  version: optString,
  runtime: optString,
  source: optString,
  local_source: optBool,
  prompt_payload: optBool,
  capabilities: block(capabilitiesSpec),
  on_overflow: optString,
  config: present
}
export type RawArtifact = Decoded<typeof artifactSpec>

const nonBlank = (value: string | undefined) => (value !== undefined && value.trim() !== "" ? value : undefined)

const roleOf = (index: number, runtime: string | undefined): ArtifactRole => {
  switch (runtime) {
    case undefined:
    case "tool":
      return "tool"
    case "driver":
    case "hook":
    case "skill":
      return runtime
    case "wasm":
    case "native":
      return refuse(invalidArtifact(index, `use 'runtime: tool'; implementation is declared in the artifact's own manifest (got '${runtime}')`))
    default:
      return refuse(invalidArtifact(index, `unknown runtime '${runtime}'; expected one of: tool, driver, hook, skill`))
  }
}

/** The parse-time rules for entry `index` (the reference's order). */
export const lowerArtifact = (
  index: number,
  raw: RawArtifact,
  warnings: Array<ManifestWarning>
): { readonly entry: ArtifactEntry; readonly config: Node | null | undefined } => {
  const refuseHere = (message: string) => refuse(invalidArtifact(index, message))
  const name = nonBlank(raw.name) ?? refuseHere("missing required field 'name'")
  const source = nonBlank(raw.source)
  const runtime = roleOf(index, raw.runtime)
  const localSource = raw.local_source ?? runtime === "skill"
  const promptPayload = raw.prompt_payload ?? runtime === "skill"
  if (source !== undefined && !localSource) {
    refuseHere(`artifact '${name}' declares 'source:' but does not declare 'local_source: true' (runtime: ${runtime})`)
  }
  let version: string
  if (source !== undefined) {
    const explicit = nonBlank(raw.version)
    if (explicit !== undefined) {
      warnings.push({
        code: "W-LOCAL-SOURCE",
        message: `warning: artifact '${name}' declares both 'source:' and 'version: ${explicit}'; version is ignored for local-source skills (using 'local')`,
        path: `artifacts[${index}].version`
      })
    }
    version = "local"
  } else {
    version = nonBlank(raw.version) ?? refuseHere("missing required field 'version'")
  }
  let capabilities: Capabilities | undefined
  if (raw.capabilities !== undefined) {
    if (runtime === "skill") {
      refuseHere(`artifact '${name}' declares per-artifact 'capabilities:' but has 'runtime: ${runtime}'; per-artifact capabilities are only recognized on 'runtime: hook', 'runtime: tool', and 'runtime: driver' entries — use the capsule-wide top-level 'capabilities:' block instead`)
    }
    if (raw.capabilities.task_io !== undefined && runtime !== "hook") {
      refuseHere(`artifact '${name}' declares 'capabilities.task_io:' but has 'runtime: ${runtime}'; the key grants the murmur:task-io/read host import and is only recognized on 'runtime: hook' entries`)
    }
    if (raw.capabilities.conversation !== undefined && runtime !== "hook") {
      refuseHere(`artifact '${name}' declares 'capabilities.conversation:' but has 'runtime: ${runtime}'; the key grants the murmur:conversation/read host import and is only recognized on 'runtime: hook' entries`)
    }
    capabilities = lowerCapabilities(raw.capabilities)
  }
  let onOverflow: OnOverflow = "drop"
  if (raw.on_overflow !== undefined) {
    if (runtime !== "hook") {
      refuseHere(`artifact '${name}' declares 'on_overflow:' but has 'runtime: ${runtime}'; the key governs an async hook's job queue and is only recognized on 'runtime: hook' entries`)
    }
    if (raw.on_overflow !== "drop" && raw.on_overflow !== "block") {
      refuseHere(`artifact '${name}' declares unknown on_overflow '${raw.on_overflow}'; expected: drop, block`)
    }
    onOverflow = raw.on_overflow as OnOverflow
  }
  if (raw.config !== undefined && runtime === "skill") {
    refuseHere(`artifact '${name}' declares 'config:' but has 'runtime: ${runtime}'; the key is recognized only on 'runtime: hook', 'runtime: tool', and 'runtime: driver' entries`)
  }
  const entry: ArtifactEntry = {
    name,
    version,
    runtime,
    ...(source === undefined ? {} : { source }),
    localSource,
    promptPayload,
    ...(capabilities === undefined ? {} : { capabilities }),
    onOverflow
  }
  return { entry, config: raw.config?.node }
}

/** The launch-time checks on a parsed entry: its grant's shapes, then its `config:` (E-CAP-010). */
export const checkArtifact = (ctx: ReadContext, entry: ArtifactEntry, config: Node | null | undefined): ArtifactEntry => {
  if (entry.capabilities !== undefined) checkGrantShapes(entry.capabilities)
  return config === undefined ? entry : { ...entry, configJson: lowerArtifactConfig(ctx, entry.name, config) }
}
