/**
 * An artifact's own `murmur.yaml`, shipped inside its `.mur.zip` (spec §1.4): identity, role,
 * packaging, the files it needs, its tool-inventory metadata and, for drivers, how the provider
 * takes its key. Read as plain YAML values like the reference's `Manifest::from_yaml_str`, so
 * `version: 1.0` is a number and refused, unlike in the capsule manifest. The legacy
 * `runtime: wasm` is accepted here. Grants are never read from this file.
 */
import { Either, Schema } from "effect"
import type { Node } from "yaml"
import {
  artifactFieldInvalidType,
  artifactFieldInvalidValue,
  artifactMissingField,
  type ManifestError
} from "./ManifestError.js"
import { type ReadContext, readDocument, refuse, toPlain } from "./YamlReader.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const Packaging = Schema.Literal("wasm", "native", "static")
export type Packaging = typeof Packaging.Type

export const InferenceAuth = Schema.Struct({
  /** The header the provider reads the key from (compared case-insensitively on the wire). */
  header: Schema.String,
  /** The header value template; holds `{key}` exactly once. */
  value: Schema.String
})
export type InferenceAuth = typeof InferenceAuth.Type

export const ArtifactManifest = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  /** The role as written (`tool`, `driver`, `hook`, `skill`, or the legacy `wasm`). */
  runtime: Schema.String,
  /** `native` only when written so; anything else (or nothing) is `wasm`. */
  implementation: Schema.Literal("wasm", "native"),
  /** The declared `execution:`, lowercased. */
  execution: exact(Packaging),
  /** How it packages: `execution:` when declared, else derived from runtime and implementation. */
  packaging: Packaging,
  requiresFiles: Schema.Array(Schema.String),
  description: exact(Schema.String),
  tags: Schema.Array(Schema.String),
  inputSchema: exact(Schema.Unknown),
  outputSchema: exact(Schema.Unknown),
  binding: exact(Schema.String),
  executionMode: exact(Schema.String),
  commitPolicy: exact(Schema.String),
  inferenceAuth: exact(InferenceAuth)
})
export type ArtifactManifest = typeof ArtifactManifest.Type

type Mapping = { readonly [key: string]: unknown }

const typeName = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (Array.isArray(value)) return "sequence"
  switch (typeof value) {
    case "boolean":
      return "boolean"
    case "number":
    case "bigint":
      return "number"
    case "string":
      return "string"
    default:
      return "mapping"
  }
}

const isMapping = (value: unknown): value is Mapping =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const has = (map: Mapping, key: string) => Object.prototype.hasOwnProperty.call(map, key)

const requiredString = (map: Mapping, field: string, prefix = ""): string => {
  if (!has(map, field)) return refuse(artifactMissingField(`${prefix}${field}`))
  const value = map[field]
  return typeof value === "string" ? value : refuse(artifactFieldInvalidType(`${prefix}${field}`, "string", typeName(value)))
}

const optionalString = (map: Mapping, field: string): string | undefined => {
  const value = map[field]
  return typeof value === "string" ? value : undefined
}

const stringSequence = (map: Mapping, field: string): ReadonlyArray<string> | undefined => {
  if (!has(map, field)) return undefined
  const value = map[field]
  if (!Array.isArray(value)) return refuse(artifactFieldInvalidType(field, "sequence of strings", typeName(value)))
  return value.map((entry) =>
    typeof entry === "string" ? entry : refuse(artifactFieldInvalidType(field, "sequence of strings", typeName(entry)))
  )
}

const execution = (map: Mapping): Packaging | undefined => {
  if (!has(map, "execution")) return undefined
  const value = map["execution"]
  if (typeof value !== "string") return refuse(artifactFieldInvalidType("execution", "string", typeName(value)))
  const lowered = value.trim().toLowerCase()
  return lowered === "wasm" || lowered === "native" || lowered === "static"
    ? lowered
    : refuse(artifactFieldInvalidType("execution", "one of: wasm, native, static", value))
}

/** A JSON Schema given as a YAML mapping, or as a string of JSON; anything else is ignored. */
const schemaValue = (value: unknown): unknown => {
  if (isMapping(value)) return value
  if (typeof value !== "string") return undefined
  try {
    const parsed: unknown = JSON.parse(value)
    return isMapping(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
export const KEY_PLACEHOLDER = "{key}"

const inferenceAuth = (map: Mapping): InferenceAuth | undefined => {
  if (!has(map, "inference_auth")) return undefined
  const block = map["inference_auth"]
  if (!isMapping(block)) return refuse(artifactFieldInvalidType("inference_auth", "mapping", typeName(block)))
  const header = requiredString(block, "header", "inference_auth.")
  const value = requiredString(block, "value", "inference_auth.")
  if (!HEADER_NAME.test(header)) {
    refuse(artifactFieldInvalidValue("inference_auth.header", `'${header}' is not a valid HTTP header name`))
  }
  const placeholders = value.split(KEY_PLACEHOLDER).length - 1
  if (placeholders !== 1) {
    refuse(artifactFieldInvalidValue("inference_auth.value", `must contain ${KEY_PLACEHOLDER} exactly once (found ${placeholders})`))
  }
  return { header, value }
}

const packagingOf = (runtime: string, implementation: "wasm" | "native", declared: Packaging | undefined): Packaging =>
  declared ?? (runtime === "skill" ? "static" : runtime === "tool" && implementation === "native" ? "native" : "wasm")

const read = (ctx: ReadContext, root: Node | null): ArtifactManifest => {
  const value = toPlain(ctx, root)
  if (!isMapping(value)) return refuse(artifactFieldInvalidType("<root>", "mapping", typeName(value)))
  const name = requiredString(value, "name")
  const version = requiredString(value, "version")
  const runtime = requiredString(value, "runtime")
  const implementation = optionalString(value, "implementation") === "native" ? "native" : "wasm"
  const declared = execution(value)
  const requiresFiles = stringSequence(value, "requires_files") ?? (runtime === "skill" ? ["skill.md"] : [])
  const optional = {
    description: optionalString(value, "description"),
    inputSchema: schemaValue(has(value, "input_schema") ? value["input_schema"] : value["input"]),
    outputSchema: schemaValue(value["output_schema"]),
    binding: optionalString(value, "binding"),
    executionMode: optionalString(value, "execution_mode"),
    commitPolicy: optionalString(value, "commit_policy"),
    inferenceAuth: inferenceAuth(value)
  }
  const tags = value["tags"]
  return {
    name,
    version,
    runtime,
    implementation,
    ...(declared === undefined ? {} : { execution: declared }),
    packaging: packagingOf(runtime, implementation, declared),
    requiresFiles,
    tags: Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === "string") : [],
    ...Object.fromEntries(Object.entries(optional).filter(([, field]) => field !== undefined))
  }
}

/** Parses an artifact's own `murmur.yaml`. Left: the reference's code and exact text. */
export const parseArtifactManifest = (text: string): Either.Either<ArtifactManifest, ManifestError> =>
  readDocument(text, read)
