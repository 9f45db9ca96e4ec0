/**
 * How a `murmur.yaml` is refused, and how it is warned about. Every message is the reference's
 * text byte for byte where the reference has one (spec §1.5): the `code` is what the CLI prints
 * beside it. Warnings never refuse a manifest.
 */
import { Schema } from "effect"

export const MANIFEST_FILENAME = "murmur.yaml"

export const ManifestErrorCode = Schema.Literal(
  /** missing required top-level field */
  "E-MAN-001",
  /** YAML syntax error, or a value of the wrong YAML type */
  "E-MAN-002",
  /** a semantically invalid artifact entry or capability value */
  "E-MAN-003",
  /** a `network.allow` entry that can never become a rule */
  "E-CAP-001",
  /** a `filesystem.scope` that is absolute or escapes the workdir */
  "E-CAP-002",
  /** a declared containment floor that cannot hold (an executable workdir caps every capsule at advisory) */
  "E-CAP-003",
  /** `shell.staged_runtime` without the sealed floor it needs */
  "E-CAP-004",
  /** an artifact `config:` block that cannot be delivered as MURMUR_ARTIFACT_CONFIG */
  "E-CAP-010",
  /** a `context.record_store` (or the capsule name standing for it) that is not one path segment */
  "E-CAP-011",
  /** an artifact named like a runtime-owned tool (`delegate-task`, `share-file`, …) */
  "E-CAP-013"
)
export type ManifestErrorCode = typeof ManifestErrorCode.Type

export class ManifestError extends Schema.TaggedError<ManifestError>()("ManifestError", {
  code: ManifestErrorCode,
  message: Schema.String,
  /** The manifest file the text came from, when the caller said. Never part of `message`. */
  path: Schema.optionalWith(Schema.String, { exact: true })
}) {}

export const ManifestWarningCode = Schema.Literal(
  /** a key this build does not recognize (reported, never refused) */
  "W-SEC-019",
  /** a capsule-wide grant declared on an artifact entry, where it is inert */
  "W-SEC-008",
  /** an artifact declares both `source:` and `version:` (the reference prints this uncoded) */
  "W-LOCAL-SOURCE",
  /** a retired key still honoured through its replacement (`trace.include_tool_output`; uncoded upstream) */
  "W-RETIRED-KEY",
  /** an `observability.eval` scorer of a type nobody knows, skipped (uncoded upstream) */
  "W-EVAL-SCORER",
  /** a recognized key this runtime validates but does not act on yet (this runtime's own code) */
  "W-RUN-001",
  /** lifecycle keys of which one undoes another (threaded under single, sleep without queue; this runtime's own code) */
  "W-LIFECYCLE"
)
export type ManifestWarningCode = typeof ManifestWarningCode.Type

export const ManifestWarning = Schema.Struct({
  code: ManifestWarningCode,
  message: Schema.String,
  /** Dotted path of the key the warning is about (`capabilities.shell.alow`). */
  path: Schema.String
})
export type ManifestWarning = typeof ManifestWarning.Type

const make = (code: ManifestErrorCode, message: string) => new ManifestError({ code, message })

/** A YAML parse failure, or a value of the wrong YAML type, at a 1-based position. */
export const yamlSyntaxError = (line: number, column: number, detail: string) =>
  make(
    "E-MAN-002",
    `${MANIFEST_FILENAME}: YAML syntax error at line ${line}, column ${column}: ${detail} at line ${line} column ${column}`
  )

/** A YAML failure with no position (resource limits hit while reading aliases). */
export const yamlErrorWithoutPosition = (detail: string) =>
  make("E-MAN-002", `${MANIFEST_FILENAME}: YAML syntax error: ${detail}`)

export const missingField = (field: "name" | "version") =>
  make("E-MAN-001", `${MANIFEST_FILENAME}: missing required field '${field}'`)

export const invalidArtifact = (index: number, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: invalid artifact declaration at index ${index}: ${message}`)

export const invalidCapability = (field: string, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: invalid capability config for '${field}': ${message}`)

export const invalidInference = (field: string, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: invalid inference config for '${field}': ${message}`)

export const invalidTrace = (field: string, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: invalid trace config for '${field}': ${message}`)

export const invalidExports = (field: string, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: invalid exports config for '${field}': ${message}`)

/** `inference.api_key: ${VAR}` naming a variable the host environment does not set. */
export const missingInferenceEnvVar = (reference: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: inference.api_key references ${reference} but the environment variable is not set`)

export const invalidNetworkAllowEntry = (entry: string, message: string) =>
  make("E-CAP-001", `invalid network capability allow entry '${entry}': ${message}`)

export const invalidFilesystemScope = (scope: string, message: string) =>
  make("E-CAP-002", `invalid filesystem capability scope '${scope}': ${message}`)

/** A containment floor no host can meet for this capsule (the host-side shortfall is a launch error). */
export const containmentFloorUnmet = (declared: string, reason: string) =>
  make("E-CAP-003", `containment floor '${declared}' cannot be met: ${reason}`)

export const stagedRuntimeNeedsSealed = (binary: string, declared: string) =>
  make("E-CAP-004", `capabilities.shell.staged_runtime for '${binary}' requires capabilities.containment: sealed (declared: ${declared}) — a staged runtime is bind-mounted into a sealed root, which no weaker class composes`)

/** The runtime-owned tools of spec §4.4 step 0: dispatched before any artifact, so no artifact may take their names. */
export const RESERVED_TOOL_NAMES: ReadonlyArray<string> = ["delegate-task", "fetch-peer-file", "share-file", "submit-plan"]

export const reservedArtifactName = (name: string) =>
  make("E-CAP-013", `artifact '${name}' uses a name reserved for the runtime tool of the same name (reserved: ${RESERVED_TOOL_NAMES.join(", ")}); rename the artifact`)

export const invalidArtifactConfig = (artifact: string, message: string) =>
  make("E-CAP-010", `invalid config for artifact '${artifact}': ${message}`)

/** A name that is one path segment: joined under a directory, it stays there. */
export const isPathSegment = (name: string): boolean =>
  name.length > 0 && name.length <= 255 && name !== "." && name !== ".." && !/[/\\\0]/.test(name)

/** The record store is a directory under `<murmur home>/conversations/`: one segment, or it would land elsewhere. */
export const invalidRecordStore = (store: string, fromName: boolean) =>
  make(
    "E-CAP-011",
    `invalid context.record_store '${store}'${fromName ? " (the capsule name, its default; set context.record_store)" : ""}: must be a single path segment (no '/', '\\', NUL, '.' or '..')`
  )

/** A state store is a directory under `<murmur home>/state/`: one segment, or it would land elsewhere. */
export const invalidStateStore = (store: string) =>
  make("E-CAP-011", `invalid capabilities.state.store '${store}': must be a single path segment (no '/', '\\', NUL, '.' or '..')`)

/** The artifact's own manifest (§1.4) words type errors differently from the capsule manifest. */
export const artifactFieldInvalidType = (field: string, expected: string, got: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: field '${field}' has invalid type (expected ${expected}, got ${got})`)

export const artifactFieldInvalidValue = (field: string, message: string) =>
  make("E-MAN-003", `${MANIFEST_FILENAME}: field '${field}' ${message}`)

export const artifactMissingField = (field: string) =>
  make("E-MAN-001", `${MANIFEST_FILENAME}: missing required field '${field}'`)
