/**
 * The manifest values the reference reads untyped and judges itself (spec §1.5): the two
 * `retain:` blocks (`trace.retain`, `context.retain`) and the `exports:` block, with their
 * duration (`90`, `30s`, `15m`, `1h`, `14d`) and byte-size (`4096`, `1Ki`, `10Mi`, `2Gi`)
 * spellings. Every refusal is the reference's text; this runtime does not act on any of these yet.
 */
import { Either, Schema } from "effect"
import { isMap, isScalar, isSeq } from "yaml"
import type { Node } from "yaml"
import { invalidExports, type ManifestError } from "./ManifestError.js"
import { anyNode, block, type Decoded, deref, isIntegerScalar, isNull, keyText, optString, type ReadContext, refuse } from "./YamlReader.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const DURATION_ACCEPTED_FORM = "must be a duration: an integer, optionally suffixed s/m/h/d"
export const BYTE_SIZE_ACCEPTED_FORM = "must be a byte count, optionally suffixed Ki/Mi/Gi"
const EXPORT_ROOT_ACCEPTED_FORM = "must be a relative path inside the workdir"
const RETAIN_EMPTY_BLOCK = "must declare at least one key — omit the block entirely to keep everything, which is what no policy means"
const U64_MAX = 18446744073709551615n
const U32_MAX = 4294967295

/** Digits with one optional suffix, as a whole count; a space inside the value is refused. */
const suffixed = (input: string, suffixes: ReadonlyArray<readonly [string, bigint]>, form: string, unit: string) => {
  const trimmed = input.trim()
  const [suffix, multiplier] = suffixes.find(([s]) => trimmed.endsWith(s)) ?? ["", 1n]
  const digits = trimmed.slice(0, trimmed.length - suffix.length)
  if (!/^[0-9]+$/.test(digits)) return Either.left(`'${input}' ${form}`)
  const value = BigInt(digits) * multiplier
  return value > U64_MAX ? Either.left(`'${input}' overflows a 64-bit ${unit} count`) : Either.right(Number(value))
}

export const parseDurationSecs = (input: string): Either.Either<number, string> =>
  suffixed(input, [["s", 1n], ["m", 60n], ["h", 3600n], ["d", 86400n]], DURATION_ACCEPTED_FORM, "second")

export const parseByteSize = (input: string): Either.Either<number, string> =>
  suffixed(input, [["Ki", 1024n], ["Mi", 1048576n], ["Gi", 1073741824n]], BYTE_SIZE_ACCEPTED_FORM, "byte")

/** How the reference's `{value:?}` prints a YAML value (serde_yaml's `Debug`). */
const debugValue = (ctx: ReadContext, input: Node | null | undefined): string => {
  const node = deref(ctx, input)
  if (node === undefined || node === null || isNull(node)) return "Null"
  if (isSeq(node)) return `Sequence [${node.items.map((item) => debugValue(ctx, item as Node)).join(", ")}]`
  if (isMap(node)) {
    return `Mapping {${node.items.map((pair) => `${debugValue(ctx, pair.key as Node)}: ${debugValue(ctx, pair.value as Node)}`).join(", ")}}`
  }
  if (!isScalar(node)) return "Null"
  if (typeof node.value === "boolean") return `Bool(${node.value})`
  if (typeof node.value === "number") return `Number(${scalarNumber(node.value, node.source)})`
  return `String(${JSON.stringify(String(node.value))})`
}

const scalarNumber = (value: number, source: string | undefined) => (Number.isInteger(value) ? String(value) : source ?? String(value))

/** A string or number scalar's text (the reference's `scalar_text`); `undefined` for anything else. */
const scalarTextOf = (ctx: ReadContext, input: Node | null): string | undefined => {
  const node = deref(ctx, input)
  if (!isScalar(node)) return undefined
  if (typeof node.value === "string") return node.value
  return typeof node.value === "number" ? scalarNumber(node.value, node.source) : undefined
}

type Invalid = (field: string, message: string) => ManifestError

/** A duration or byte count given as an untyped scalar: parsed, and never zero. */
export const positiveCount = (ctx: ReadContext, node: Node | null, field: string, kind: "duration" | "bytes", invalid: Invalid): number => {
  const form = kind === "duration" ? DURATION_ACCEPTED_FORM : BYTE_SIZE_ACCEPTED_FORM
  const text = scalarTextOf(ctx, node) ?? refuse(invalid(field, `'${debugValue(ctx, node)}' ${form}`))
  const parsed = (kind === "duration" ? parseDurationSecs : parseByteSize)(text)
  if (Either.isLeft(parsed)) return refuse(invalid(field, parsed.left))
  if (parsed.right === 0) refuse(invalid(field, `must be greater than zero; ${form}`))
  return parsed.right
}

export const TraceRetain = Schema.Struct({ maxSessions: exact(Schema.Number), maxAgeSecs: exact(Schema.Number) })
export type TraceRetain = typeof TraceRetain.Type
export const ContextRetain = Schema.Struct({ maxMessages: exact(Schema.Number), maxAgeSecs: exact(Schema.Number) })
export type ContextRetain = typeof ContextRetain.Type

/**
 * One `retain:` block (present, possibly null): at least one of its two keys, the count a whole
 * number of at least 1, the age a non-zero duration; any other key is refused, not warned about.
 */
export const lowerRetain = (
  ctx: ReadContext,
  input: Node | null,
  blockPath: "trace.retain" | "context.retain",
  invalid: Invalid
): { readonly count?: number; readonly maxAgeSecs?: number } => {
  const countKey = blockPath === "trace.retain" ? "max_sessions" : "max_messages"
  const accepted = `${countKey}, max_age`
  const node = deref(ctx, input) ?? null
  if (node === null || isNull(node)) return refuse(invalid(blockPath, RETAIN_EMPTY_BLOCK))
  if (!isMap(node)) return refuse(invalid(blockPath, `must be a block of keys (${accepted}), got '${debugValue(ctx, node)}'`))
  if (node.items.length === 0) return refuse(invalid(blockPath, RETAIN_EMPTY_BLOCK))
  let count: number | undefined
  let maxAgeSecs: number | undefined
  for (const pair of node.items) {
    const keyNode = deref(ctx, pair.key as Node | null)
    const key = isScalar(keyNode) && typeof keyNode.value === "string" ? keyText(ctx, keyNode) : ""
    const field = `${blockPath}.${key}`
    const value = deref(ctx, pair.value as Node | null) ?? null
    if (key === countKey) {
      const whole = isScalar(value) && isIntegerScalar(value) && (value.value as number) >= 0 && (value.value as number) <= U32_MAX
        ? value.value as number
        : refuse(invalid(field, "must be a whole number of at least 1"))
      if (whole === 0) {
        refuse(invalid(field, "must be at least 1 — a limit of zero would delete what retention exists to keep; remove the key to leave it unbounded"))
      }
      count = whole
    } else if (key === "max_age") {
      maxAgeSecs = positiveCount(ctx, value, field, "duration", invalid)
    } else {
      refuse(invalid(blockPath, `unknown key '${key}'; expected: ${accepted}`))
    }
  }
  return { ...(count === undefined ? {} : { count }), ...(maxAgeSecs === undefined ? {} : { maxAgeSecs }) }
}

export const DEFAULT_EXPORT_MAX_BYTES = 10 * 1024 * 1024

export const FileExport = Schema.Struct({ root: Schema.String, mode: Schema.Literal("read-only"), maxBytes: Schema.Number })
export const PeerFilesExport = Schema.Struct({ root: Schema.String, maxTtlSecs: exact(Schema.Number), maxBytes: Schema.Number })
export const Exports = Schema.Struct({ files: exact(FileExport), peerFiles: exact(PeerFilesExport) })
export type Exports = typeof Exports.Type

export const exportsSpec = {
  files: block({ root: optString, mode: optString, max_bytes: anyNode }),
  peer_files: block({ root: optString, max_ttl: anyNode, max_bytes: anyNode })
}
export type RawExports = Decoded<typeof exportsSpec>

const exportRoot = (field: string, declared: string | undefined): string => {
  const root = declared?.trim() ?? ""
  if (root === "") refuse(invalidExports(field, `is required and ${EXPORT_ROOT_ACCEPTED_FORM}`))
  if (root.startsWith("/")) refuse(invalidExports(field, `'${root}' is absolute; ${EXPORT_ROOT_ACCEPTED_FORM}`))
  if (root.split("/").includes("..")) refuse(invalidExports(field, `'${root}' contains a '..' component; ${EXPORT_ROOT_ACCEPTED_FORM}`))
  return root
}

/** An untyped scalar where YAML null means absent (a plain `Option<Value>` upstream). */
const declared = (node: Node | null | undefined): Node | undefined => (node === undefined || node === null || isNull(node) ? undefined : node)

export const lowerExports = (ctx: ReadContext, raw: RawExports): Exports => {
  const out: { -readonly [K in keyof Exports]: Exports[K] } = {}
  if (raw.files !== undefined) {
    const root = exportRoot("exports.files.root", raw.files.root)
    const mode = raw.files.mode?.trim() ?? ""
    if (mode === "") refuse(invalidExports("exports.files.mode", "is required and must be 'read-only'"))
    if (mode !== "read-only") refuse(invalidExports("exports.files.mode", `'${mode}' must be 'read-only'`))
    const maxBytes = declared(raw.files.max_bytes)
    out.files = {
      root,
      mode: "read-only",
      maxBytes: maxBytes === undefined ? DEFAULT_EXPORT_MAX_BYTES : positiveCount(ctx, maxBytes, "exports.files.max_bytes", "bytes", invalidExports)
    }
  }
  if (raw.peer_files !== undefined) {
    const root = exportRoot("exports.peer_files.root", raw.peer_files.root)
    const maxTtl = declared(raw.peer_files.max_ttl)
    const maxBytes = declared(raw.peer_files.max_bytes)
    out.peerFiles = {
      root,
      ...(maxTtl === undefined ? {} : { maxTtlSecs: positiveCount(ctx, maxTtl, "exports.peer_files.max_ttl", "duration", invalidExports) }),
      maxBytes: maxBytes === undefined
        ? DEFAULT_EXPORT_MAX_BYTES
        : positiveCount(ctx, maxBytes, "exports.peer_files.max_bytes", "bytes", invalidExports)
    }
  }
  return out
}
