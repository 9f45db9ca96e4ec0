/**
 * The capsule manifest (`murmur.yaml`, spec §1.5): identity, `artifacts[]` and `capabilities`,
 * parsed in two passes like the reference — first every value is read with its YAML type checked
 * (E-MAN-002, positioned) and every unrecognized key recorded, then the reference's rules run in
 * its order (E-MAN-001, E-MAN-003), then the launch-time grant checks this runtime makes up front
 * (E-CAP-001, E-CAP-002, E-CAP-010). Every block of §1.5 is typed; the keys this runtime does not
 * act on yet are validated all the same and named in a `W-RUN-001` warning. Pure: the caller reads
 * the file and passes the host environment (for `inference.api_key: ${VAR}`); nothing here throws.
 */
import { Either, Schema } from "effect"
import type { Node } from "yaml"
import { ArtifactEntry, artifactSpec, checkArtifact, lowerArtifact } from "./manifest/ArtifactEntry.js"
import { Capabilities, capabilitiesSpec, checkGrantShapes, lowerCapabilities } from "./manifest/Capabilities.js"
import { checkInferenceArtifacts, InferenceConfig, inferenceSpec, lowerInference } from "./manifest/Inference.js"
import { Lifecycle, lifecycleSpec, lifecycleWarnings, lowerLifecycle } from "./manifest/Lifecycle.js"
import {
  invalidCapability,
  invalidRecordStore,
  isPathSegment,
  ManifestError,
  type ManifestWarning,
  missingField,
  RESERVED_TOOL_NAMES,
  reservedArtifactName
} from "./manifest/ManifestError.js"
import { notActedOnWarnings } from "./manifest/NotActedOn.js"
import { Exports, exportsSpec, lowerExports } from "./manifest/Retention.js"
import {
  ContextConfig,
  contextSpec,
  lowerContext,
  lowerNetwork,
  lowerObservability,
  lowerTrace,
  NetworkConfig,
  networkSpec,
  ObservabilityConfig,
  observabilitySpec,
  TraceConfig,
  traceSpec
} from "./manifest/SessionBlocks.js"
import { unknownKeyWarnings } from "./manifest/UnknownKeys.js"
import { block, blockItem, list, optString, present, type ReadContext, readDocument, refuse } from "./manifest/YamlReader.js"

export { DEFAULT_LIFECYCLE, effectiveLifecycle, type Lifecycle } from "./manifest/Lifecycle.js"
export { effectiveTraceCapture, type TraceCapture } from "./manifest/SessionBlocks.js"
export type { InferenceConfig } from "./manifest/Inference.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const CapsuleManifest = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  murVersion: exact(Schema.String),
  artifacts: Schema.Array(ArtifactEntry),
  /** The capsule-wide ceiling; an absent block reads as an empty one. */
  capabilities: Capabilities,
  /** Present (non-null) means an agent capsule (§1.1). */
  inference: exact(InferenceConfig),
  context: exact(ContextConfig),
  observability: exact(ObservabilityConfig),
  /** Absent: capture `meta` (`effectiveTraceCapture`). */
  trace: exact(TraceConfig),
  network: exact(NetworkConfig),
  /** Absent: every default (`effectiveLifecycle`). */
  lifecycle: exact(Lifecycle),
  exports: exact(Exports)
})
export type CapsuleManifest = typeof CapsuleManifest.Type

export interface ParsedManifest {
  readonly manifest: CapsuleManifest
  readonly warnings: ReadonlyArray<ManifestWarning>
}

export interface ParseManifestOptions {
  /** Where the text came from; recorded on the error, never in its message. */
  readonly path?: string
  /** This runtime's version, for the `mur_version` line of W-SEC-019. */
  readonly runningVersion?: string
  /**
   * The host environment `inference.api_key: ${VAR}` is resolved from. Absent reads as an empty
   * environment, so a referenced variable is reported as not set.
   */
  readonly env?: Readonly<Record<string, string | undefined>>
}

/** A script capsule runs `capsule.wasm`; an agent capsule (with `inference:`) runs the agent loop. */
export const isAgentCapsule = (manifest: CapsuleManifest): boolean => manifest.inference !== undefined

/** Every top-level key, read as the reference reads it. */
export const topLevelSpec = {
  name: optString,
  version: optString,
  artifacts: list(blockItem(artifactSpec)),
  capabilities: block(capabilitiesSpec),
  inference: block(inferenceSpec),
  context: block(contextSpec),
  observability: block(observabilitySpec),
  trace: block(traceSpec),
  network: block(networkSpec),
  lifecycle: block(lifecycleSpec),
  exports: block(exportsSpec),
  mur_version: optString,
  config: present
}

const nonBlank = (value: string | undefined) => (value !== undefined && value.trim() !== "" ? value : undefined)

const read = (options: ParseManifestOptions) => (ctx: ReadContext, root: Node | null): ParsedManifest => {
  const raw = blockItem(topLevelSpec)(ctx, root, "")
  const warnings: Array<ManifestWarning> = [...unknownKeyWarnings(ctx.unknown, nonBlank(raw.mur_version), options.runningVersion)]
  const name = nonBlank(raw.name) ?? refuse(missingField("name"))
  const version = nonBlank(raw.version) ?? refuse(missingField("version"))
  const lowered = (raw.artifacts ?? []).map((artifact, index) => lowerArtifact(index, artifact, warnings))
  const reserved = lowered.find(({ entry }) => RESERVED_TOOL_NAMES.includes(entry.name))
  if (reserved !== undefined) refuse(reservedArtifactName(reserved.entry.name))
  if (raw.capabilities?.task_io !== undefined) {
    refuse(invalidCapability("capabilities.task_io", "is recognized only on 'runtime: hook' artifact entries, not in the capsule-wide capabilities block — the grant is per-hook"))
  }
  if (raw.config !== undefined) {
    refuse(invalidCapability("config", "is declared per artifact, on the 'runtime: hook', 'runtime: tool' or 'runtime: driver' entry that reads it — there is no capsule-wide config block"))
  }
  const capabilities = raw.capabilities === undefined ? {} : lowerCapabilities(raw.capabilities)
  const inference = raw.inference === undefined ? undefined : lowerInference(ctx, raw.inference, options.env ?? {})
  if (inference !== undefined) checkInferenceArtifacts(inference, lowered.map(({ entry }) => entry))
  const blocks = {
    inference,
    context: raw.context === undefined ? undefined : lowerContext(ctx, raw.context),
    observability: raw.observability === undefined ? undefined : lowerObservability(raw.observability, warnings),
    trace: raw.trace === undefined ? undefined : lowerTrace(ctx, raw.trace, warnings),
    network: raw.network === undefined ? undefined : lowerNetwork(raw.network),
    lifecycle: raw.lifecycle === undefined ? undefined : lowerLifecycle(raw.lifecycle),
    exports: raw.exports === undefined ? undefined : lowerExports(ctx, raw.exports)
  }
  // A threaded, recorded capsule without a record_store keeps its thread under its own name.
  if (blocks.lifecycle?.conversation === "threaded" && blocks.context?.record !== false && blocks.context?.recordStore === undefined && !isPathSegment(name)) {
    refuse(invalidRecordStore(name, true))
  }
  checkGrantShapes(capabilities)
  const artifacts = lowered.map(({ config, entry }) => checkArtifact(ctx, entry, config))
  warnings.push(...notActedOnWarnings(raw, inference?.transport))
  // How an agent capsule takes tasks (a script capsule takes them as the door's flags say).
  if (inference !== undefined && blocks.lifecycle !== undefined) warnings.push(...lifecycleWarnings(blocks.lifecycle))
  const murVersion = nonBlank(raw.mur_version)
  const manifest: CapsuleManifest = {
    name,
    version,
    ...(murVersion === undefined ? {} : { murVersion }),
    artifacts,
    capabilities,
    ...Object.fromEntries(Object.entries(blocks).filter(([, value]) => value !== undefined))
  }
  return { manifest, warnings }
}

/**
 * Parses a capsule's `murmur.yaml`. Right: the manifest and its warnings (W-SEC-019 for each
 * unrecognized key). Left: the first refusal, with the reference's code and exact text.
 */
export const parseManifest = (
  text: string,
  options: ParseManifestOptions = {}
): Either.Either<ParsedManifest, ManifestError> =>
  readDocument(text, read(options)).pipe(
    Either.mapLeft((error) =>
      options.path === undefined ? error : new ManifestError({ code: error.code, message: error.message, path: options.path })
    )
  )
