/**
 * The JSON Schema of `murmur.yaml` (schema/murmur.schema.json), generated from the written-form
 * Effect Schema in ./ManifestDocument.ts, and the walk over its keys that docs/manifest.md's table
 * and the drift tests share. scripts/manifest-schema.mjs writes the file; a test regenerates it.
 */
import { JSONSchema } from "effect"
import { ManifestDocument } from "./ManifestDocument.js"

export const SCHEMA_PATH = "schema/murmur.schema.json"

export type JsonSchemaNode = { readonly [key: string]: unknown }

// Effect names its `unknown` and `never` nodes with `$id`s ("/schemas/unknown"); inside a document
// they would only shift the base URI editors resolve against, so they are left out.
const withoutBuiltinIds = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutBuiltinIds)
  if (node === null || typeof node !== "object") return node
  const builtin = typeof (node as JsonSchemaNode)["$id"] === "string" && ((node as JsonSchemaNode)["$id"] as string).startsWith("/schemas/")
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key]) => !(builtin && (key === "$id" || key === "title")))
      .map(([key, value]) => [key, withoutBuiltinIds(value)])
  )
}

export const manifestJsonSchema = (): JsonSchemaNode => {
  const { $schema, ...rest } = withoutBuiltinIds(JSONSchema.make(ManifestDocument)) as JsonSchemaNode
  return {
    $schema,
    $comment: "Generated from src/project/manifest/ManifestDocument.ts by scripts/manifest-schema.mjs; do not edit. Reference: docs/manifest.md.",
    ...rest
  }
}

/** The file's exact text, so a stale checked-in copy differs byte for byte. */
export const manifestSchemaText = (): string => `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`

export interface SchemaKey {
  /** Dotted, with `[]` for a list's items: `capabilities.shell.interpreter_runtime[].binary`. */
  readonly path: string
  readonly node: JsonSchemaNode
}

const childNodes = (node: JsonSchemaNode): ReadonlyArray<JsonSchemaNode> =>
  [node, ...((node["anyOf"] as ReadonlyArray<JsonSchemaNode> | undefined) ?? [])]

/**
 * Every key the schema describes, depth first in declaration order. A key holding a list is named
 * with `[]` (as ./ManifestKeys.ts names them), and its items' keys continue from there.
 */
export const schemaKeys = (root: JsonSchemaNode = manifestJsonSchema()): ReadonlyArray<SchemaKey> => {
  const out: Array<SchemaKey> = []
  const visit = (node: JsonSchemaNode, prefix: string) => {
    for (const variant of childNodes(node)) {
      const properties = variant["properties"] as Readonly<Record<string, JsonSchemaNode>> | undefined
      for (const [key, child] of Object.entries(properties ?? {})) {
        const items = child["items"] as JsonSchemaNode | undefined
        const path = `${prefix === "" ? "" : `${prefix}.`}${key}${items === undefined ? "" : "[]"}`
        out.push({ path, node: child })
        visit(items ?? child, path)
      }
    }
  }
  visit(root, "")
  return out
}
