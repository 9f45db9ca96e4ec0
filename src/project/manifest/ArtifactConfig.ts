/**
 * An artifact entry's `config:` block (§1.5, #79), lowered to the compact JSON delivered to that
 * artifact alone as `MURMUR_ARTIFACT_CONFIG`. Shape only: a mapping with string keys whose JSON
 * is at most 65536 bytes, else `E-CAP-010`. The JSON is written from the YAML nodes so the
 * declaration's key order survives (a JS object would move integer-like keys to the front).
 */
import { isMap, isScalar, isSeq } from "yaml"
import type { Node } from "yaml"
import { invalidArtifactConfig } from "./ManifestError.js"
import { deref, type ReadContext, refuse, scalarText } from "./YamlReader.js"

export const ARTIFACT_CONFIG_ENV = "MURMUR_ARTIFACT_CONFIG"
export const MAX_ARTIFACT_CONFIG_BYTES = 65_536

/** What kind of YAML node this is, in the words a manifest author writes in. */
const describeShape = (node: Node | null | undefined): string => {
  if (node === null || node === undefined) return "an empty block"
  if (isMap(node)) return "a mapping"
  if (isSeq(node)) return "a sequence"
  if (!isScalar(node) || node.value === null) return "an empty block"
  switch (typeof node.value) {
    case "boolean":
      return "a boolean"
    case "number":
    case "bigint":
      return "a number"
    default:
      return "a string"
  }
}

const renderScalar = (node: Node | null | undefined): string => {
  if (isScalar(node) && node.value !== null) return typeof node.value === "string" ? `'${node.value}'` : scalarText(node)
  return "null"
}

class NotJson {
  constructor(readonly reason: string) {}
}

const jsonNumber = (value: number) => (Number.isFinite(value) ? JSON.stringify(value) : "null")

const toJson = (ctx: ReadContext, input: Node | null | undefined): string => {
  const node = deref(ctx, input)
  if (node === undefined || node === null) return "null"
  if (isMap(node)) {
    const fields = node.items.map((pair) => {
      const key = deref(ctx, pair.key as Node | null)
      if (!isScalar(key) || key.value === null || (typeof key.value === "number" && !Number.isInteger(key.value))) {
        throw new NotJson("key must be a string")
      }
      return `${JSON.stringify(scalarText(key))}:${toJson(ctx, pair.value as Node | null)}`
    })
    return `{${fields.join(",")}}`
  }
  if (isSeq(node)) return `[${node.items.map((item) => toJson(ctx, item as Node | null)).join(",")}]`
  if (!isScalar(node)) return "null"
  const value: unknown = node.value
  if (value === null) return "null"
  if (typeof value === "number") return jsonNumber(value)
  if (typeof value === "bigint") return value.toString()
  if (typeof value === "boolean") return String(value)
  return JSON.stringify(String(value))
}

/**
 * The compact JSON for `artifact`'s `config:` node, or an `E-CAP-010` refusal naming the artifact.
 * The four rules in the reference's order: a mapping, string keys, serializable, within the cap.
 */
export const lowerArtifactConfig = (ctx: ReadContext, artifact: string, input: Node | null): string => {
  const node = deref(ctx, input) ?? null
  if (!isMap(node)) {
    return refuse(invalidArtifactConfig(artifact, `'config:' must be a mapping of keys to values, but this entry declares ${describeShape(node)}`))
  }
  for (const pair of node.items) {
    const key = deref(ctx, pair.key as Node | null) ?? null
    if (!isScalar(key) || typeof key.value !== "string") {
      refuse(invalidArtifactConfig(artifact, `every key in 'config:' must be a string, but this entry declares ${describeShape(key)} key ${renderScalar(key)}`))
    }
  }
  let json: string
  try {
    json = toJson(ctx, node)
  } catch (cause) {
    if (!(cause instanceof NotJson)) throw cause
    return refuse(invalidArtifactConfig(artifact, `'config:' does not serialize to JSON: ${cause.reason}`))
  }
  const bytes = Buffer.byteLength(json, "utf8")
  if (bytes > MAX_ARTIFACT_CONFIG_BYTES) {
    refuse(invalidArtifactConfig(artifact, `'config:' serializes to ${bytes} bytes of JSON, over the ${MAX_ARTIFACT_CONFIG_BYTES}-byte limit for ${ARTIFACT_CONFIG_ENV}`))
  }
  return json
}
