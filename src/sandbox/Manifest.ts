/**
 * The capsule manifest (`murmur.yaml`, spec §1.5): identity, `artifacts[]` and `capabilities`,
 * parsed in two passes like the reference — first every value is read with its YAML type checked
 * (E-MAN-002, positioned) and every unrecognized key recorded, then the reference's rules run in
 * its order (E-MAN-001, E-MAN-003), then the launch-time grant checks this runtime makes up front
 * (E-CAP-001, E-CAP-002, E-CAP-010). Blocks acted on by later issues are kept raw. Pure: the
 * caller reads the file; nothing here throws.
 */
import { Either, Schema } from "effect"
import type { Node } from "yaml"
import { ArtifactEntry, artifactSpec, checkArtifact, lowerArtifact } from "./manifest/ArtifactEntry.js"
import { Capabilities, capabilitiesSpec, checkGrantShapes, lowerCapabilities } from "./manifest/Capabilities.js"
import {
  CONTEXT_SHAPE,
  EXPORTS_SHAPE,
  INFERENCE_SHAPE,
  LIFECYCLE_SHAPE,
  NETWORK_SHAPE,
  OBSERVABILITY_SHAPE,
  TRACE_SHAPE
} from "./manifest/DeferredBlocks.js"
import { invalidCapability, ManifestError, type ManifestWarning, missingField } from "./manifest/ManifestError.js"
import { unknownKeyWarnings } from "./manifest/UnknownKeys.js"
import {
  block,
  blockItem,
  list,
  optString,
  present,
  rawBlock,
  type ReadContext,
  readDocument,
  refuse
} from "./manifest/YamlReader.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const CapsuleManifest = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  murVersion: exact(Schema.String),
  artifacts: Schema.Array(ArtifactEntry),
  /** The capsule-wide ceiling; an absent block reads as an empty one. */
  capabilities: Capabilities,
  /** Present (non-null) means an agent capsule (§1.1). Kept raw until its parser lands. */
  inference: exact(Schema.Unknown),
  context: exact(Schema.Unknown),
  observability: exact(Schema.Unknown),
  trace: exact(Schema.Unknown),
  network: exact(Schema.Unknown),
  lifecycle: exact(Schema.Unknown),
  exports: exact(Schema.Unknown)
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
}

/** A script capsule runs `capsule.wasm`; an agent capsule (with `inference:`) runs the agent loop. */
export const isAgentCapsule = (manifest: CapsuleManifest): boolean => manifest.inference !== undefined

const topLevelSpec = {
  name: optString,
  version: optString,
  artifacts: list(blockItem(artifactSpec)),
  capabilities: block(capabilitiesSpec),
  inference: rawBlock(INFERENCE_SHAPE),
  context: rawBlock(CONTEXT_SHAPE),
  observability: rawBlock(OBSERVABILITY_SHAPE),
  trace: rawBlock(TRACE_SHAPE),
  network: rawBlock(NETWORK_SHAPE),
  lifecycle: rawBlock(LIFECYCLE_SHAPE),
  exports: rawBlock(EXPORTS_SHAPE),
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
  if (raw.capabilities?.task_io !== undefined) {
    refuse(invalidCapability("capabilities.task_io", "is recognized only on 'runtime: hook' artifact entries, not in the capsule-wide capabilities block — the grant is per-hook"))
  }
  if (raw.config !== undefined) {
    refuse(invalidCapability("config", "is declared per artifact, on the 'runtime: hook', 'runtime: tool' or 'runtime: driver' entry that reads it — there is no capsule-wide config block"))
  }
  const capabilities = raw.capabilities === undefined ? {} : lowerCapabilities(raw.capabilities)
  checkGrantShapes(capabilities)
  const artifacts = lowered.map(({ config, entry }) => checkArtifact(ctx, entry, config))
  const murVersion = nonBlank(raw.mur_version)
  const deferred = {
    inference: raw.inference,
    context: raw.context,
    observability: raw.observability,
    trace: raw.trace,
    network: raw.network,
    lifecycle: raw.lifecycle,
    exports: raw.exports
  }
  const manifest: CapsuleManifest = {
    name,
    version,
    ...(murVersion === undefined ? {} : { murVersion }),
    artifacts,
    capabilities,
    ...Object.fromEntries(Object.entries(deferred).filter(([, value]) => value !== undefined))
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
