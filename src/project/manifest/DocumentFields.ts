/**
 * Field constructors for the written form of `murmur.yaml` (./ManifestDocument.ts): each field
 * carries the description and default an editor shows, and the integer widths mirror the
 * readers' serde types (u16, u32, u64) so the generated JSON Schema refuses what they refuse.
 */
import { Schema } from "effect"

export interface FieldHelp {
  readonly description: string
  /** The value an absent key reads as, when there is one. */
  readonly default?: unknown
}

const annotate = <S extends Schema.Schema.Any>(schema: S, help: FieldHelp) =>
  schema.annotations(help.default === undefined ? { description: help.description } : { description: help.description, default: help.default })

/** An optional key (every key of the manifest is optional to YAML; required ones are refused later). */
export const opt = <S extends Schema.Schema.Any>(schema: S, help: FieldHelp) => Schema.optionalWith(annotate(schema, help), { exact: true })

export const text = (help: FieldHelp) => opt(Schema.String, help)
export const flag = (help: FieldHelp) => opt(Schema.Boolean, help)
export const oneOf = <const L extends ReadonlyArray<string>>(literals: L, help: FieldHelp) =>
  opt(Schema.Literal(...(literals as unknown as [string, ...Array<string>])), help)
export const strings = (help: FieldHelp) => opt(Schema.Array(Schema.String), help)

// The title names the reader's type, which is what its "invalid value … expected u16" texts say.
const unsigned = (title: string, max?: number) =>
  (max === undefined ? Schema.Number.pipe(Schema.int(), Schema.nonNegative()) : Schema.Number.pipe(Schema.int(), Schema.between(0, max)))
    .annotations({ title })

export const u16 = (help: FieldHelp) => opt(unsigned("u16", 65535), help)
export const u32 = (help: FieldHelp) => opt(unsigned("u32", 4294967295), help)
export const u64 = (help: FieldHelp) => opt(unsigned("u64"), help)

/** A fraction read as an f32: any YAML number; the range is the lowering rule's. */
export const fraction = (help: FieldHelp) => opt(Schema.Number.pipe(Schema.between(0, 1)).annotations({ title: "f32" }), help)

/** A duration (`90`, `30s`, `15m`, `1h`, `14d`) or byte size (`4096`, `10Mi`): a count or a suffixed string. */
export const countOrSuffixed = (pattern: string, help: FieldHelp) =>
  opt(Schema.Union(unsigned("u64"), Schema.String.pipe(Schema.pattern(new RegExp(pattern)))), help)

export const DURATION = "^[0-9]+[smhd]?$"
export const BYTE_SIZE = "^[0-9]+(Ki|Mi|Gi)?$"

/** A block of keys; the help is the block's own. */
export const section = <F extends Schema.Struct.Fields>(fields: F, help: FieldHelp) => opt(Schema.Struct(fields), help)

/** Any YAML value, passed on as JSON (`config:` blocks). */
export const anyValue = (help: FieldHelp) => opt(Schema.Unknown, help)
