/**
 * Typed reads over a parsed YAML document, behaving like the reference's serde structs: a plain
 * scalar read as a string keeps its source text (`version: 1.0` is `"1.0"`), a YAML null means
 * "absent", a value of the wrong YAML type fails with a positioned "invalid type" error, and every
 * key a block does not claim is recorded (with the block's own keys, for `W-SEC-019`) instead of
 * failing. Readers throw `ReadFailure`; `readDocument` is the only place that catches it.
 */
import { Either } from "effect"
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, Scalar, visit } from "yaml"
import type { Document, Node, YAMLMap } from "yaml"
import { type ManifestError, yamlErrorWithoutPosition, yamlSyntaxError } from "./ManifestError.js"

/** A key no field of its block claims. */
export interface UnknownKey {
  readonly key: string
  /** Dotted path of the block holding it; empty at the top level. */
  readonly blockPath: string
  /** The keys that block does recognize, in declaration order. */
  readonly known: ReadonlyArray<string>
}

export interface ReadContext {
  readonly doc: Document
  readonly lines: LineCounter
  readonly unknown: Array<UnknownKey>
  aliasReads: number
}

export class ReadFailure {
  constructor(readonly error: ManifestError) {}
}

/** Abandons the read with `error` (caught by `readDocument`). */
export const refuse = (error: ManifestError): never => {
  throw new ReadFailure(error)
}

/** `undefined`: the key is absent. `null`: present with no value. */
export type Input = Node | null | undefined

export type Reader<A> = (ctx: ReadContext, node: Input, path: string) => A

/** Alias dereferences allowed in one document, so a handful of aliases cannot fan out forever. */
const MAX_ALIAS_READS = 10_000
const U64_MAX = 18446744073709551615
const U32_MAX = 4294967295
const U16_MAX = 65535

export const childPath = (parent: string, key: string) => (parent === "" ? key : `${parent}.${key}`)

const position = (ctx: ReadContext, node: Input) => {
  const offset = node?.range?.[0] ?? 0
  const { line, col } = ctx.lines.linePos(offset)
  return { line, col }
}

/** Abandons the read with a positioned E-MAN-002 at `node` (serde's own wording in `detail`). */
export const fail = (ctx: ReadContext, node: Input, detail: string): never => {
  const { col, line } = position(ctx, node)
  throw new ReadFailure(yamlSyntaxError(line, col, detail))
}

export const deref = (ctx: ReadContext, node: Input): Input => {
  if (!isAlias(node)) return node
  ctx.aliasReads += 1
  if (ctx.aliasReads > MAX_ALIAS_READS) throw new ReadFailure(yamlErrorWithoutPosition("repetition limit exceeded"))
  return (node.resolve(ctx.doc) as Node | undefined) ?? fail(ctx, node, `unknown anchor '${node.source}'`)
}

export const isNull = (node: Input): boolean => node === null || (isScalar(node) && node.value === null)

const INTEGER_SOURCE = /^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$/

const isPlain = (node: Scalar) => node.type === undefined || node.type === Scalar.PLAIN

/** A plain scalar serde reads as an integer (decimal, hex or octal), not a float. */
export const isIntegerScalar = (node: Scalar) =>
  typeof node.value === "number" && isPlain(node) && INTEGER_SOURCE.test(node.source ?? String(node.value))

/** How serde names the value it found, for "invalid type: …" texts. */
export const describeFound = (node: Input): string => {
  if (node === null || node === undefined) return "unit value"
  if (isMap(node)) return "map"
  if (isSeq(node)) return "sequence"
  if (!isScalar(node) || node.value === null) return "unit value"
  const value: unknown = node.value
  if (typeof value === "boolean") return `boolean \`${value}\``
  if (typeof value === "number") {
    return isIntegerScalar(node) ? `integer \`${value}\`` : `floating point \`${node.source ?? String(value)}\``
  }
  return `string ${JSON.stringify(String(value))}`
}

const typeError = (ctx: ReadContext, node: Input, path: string, expected: string): never =>
  fail(ctx, node, `${path === "" ? "" : `${path}: `}invalid type: ${describeFound(node)}, expected ${expected}`)

/** The text of a scalar as serde's string visitor sees it. */
export const scalarText = (node: Scalar): string =>
  typeof node.value === "string" ? node.value : node.source ?? String(node.value)

export const optString: Reader<string | undefined> = (ctx, input, path) => {
  const node = deref(ctx, input)
  if (node === undefined || isNull(node)) return undefined
  return isScalar(node) ? scalarText(node) : typeError(ctx, node, path, "a string")
}

/** A string inside a list, where null is not "absent" but a value of the wrong type. */
export const string: Reader<string> = (ctx, input, path) => {
  const node = deref(ctx, input)
  return isScalar(node) && node.value !== null ? scalarText(node) : typeError(ctx, node, path, "a string")
}

export const optBool: Reader<boolean | undefined> = (ctx, input, path) => {
  const node = deref(ctx, input)
  if (node === undefined || isNull(node)) return undefined
  return isScalar(node) && typeof node.value === "boolean" ? node.value : typeError(ctx, node, path, "a boolean")
}

export const optUint = (expected: "u64" | "usize" | "u32" | "u16"): Reader<number | undefined> => (ctx, input, path) => {
  const node = deref(ctx, input)
  if (node === undefined || isNull(node)) return undefined
  if (!isScalar(node) || !isIntegerScalar(node)) return typeError(ctx, node, path, expected)
  const value = node.value as number
  if (value < 0 || value > (expected === "u16" ? U16_MAX : expected === "u32" ? U32_MAX : U64_MAX)) {
    return fail(ctx, node, `${path === "" ? "" : `${path}: `}invalid value: ${describeFound(node)}, expected ${expected}`)
  }
  return value
}

/**
 * An `f32` as serde reads one: any plain integer or float scalar. The value is kept in double
 * precision; callers compare it through `Math.fround` where the reference's f32 rounding matters.
 */
export const optF32: Reader<number | undefined> = (ctx, input, path) => {
  const node = deref(ctx, input)
  if (node === undefined || isNull(node)) return undefined
  return isScalar(node) && typeof node.value === "number" && isPlain(node) ? node.value : typeError(ctx, node, path, "f32")
}

/** serde's "expected …" for a set of unit variants. */
const expectedVariants = (variants: ReadonlyArray<string>) =>
  variants.length === 1
    ? `\`${variants[0]}\``
    : variants.length === 2
    ? `\`${variants[0]}\` or \`${variants[1]}\``
    : `one of ${variants.map((v) => `\`${v}\``).join(", ")}`

/** A snake_case unit enum (serde's `rename_all`): the scalar's text must name a variant. */
export const optVariant = <const V extends string>(variants: ReadonlyArray<V>): Reader<V | undefined> => (ctx, input, path) => {
  const node = deref(ctx, input)
  if (node === undefined || isNull(node)) return undefined
  if (!isScalar(node)) return typeError(ctx, node, path, "a string")
  const text = scalarText(node)
  if ((variants as ReadonlyArray<string>).includes(text)) return text as V
  return fail(ctx, node, `${path === "" ? "" : `${path}: `}unknown variant \`${text}\`, expected ${expectedVariants(variants)}`)
}

export const list = <A>(item: Reader<A>): Reader<ReadonlyArray<A> | undefined> =>
  withShape((ctx, input, path) => {
    const node = deref(ctx, input)
    if (node === undefined || isNull(node)) return undefined
    if (!isSeq(node)) return typeError(ctx, node, path, "a sequence")
    return node.items.map((entry, index) => item(ctx, entry as Input, `${path}[${index}]`))
  }, { item })

/** The key of a mapping entry as a string (serde compares keys by their text). */
export const keyText = (ctx: ReadContext, key: unknown): string => {
  const node = deref(ctx, key as Input)
  if (isScalar(node)) return node.value === null ? "~" : scalarText(node)
  return String(node)
}

/** A mapping's entries by key text, in document order. A key's missing value reads as null. */
export const entries = (ctx: ReadContext, map: YAMLMap): ReadonlyArray<readonly [string, Node | null]> =>
  map.items.filter(isPair).map((pair) => [keyText(ctx, pair.key), (pair.value as Node | null) ?? null] as const)

export type Spec = { readonly [key: string]: Reader<unknown> }
export type Decoded<S extends Spec> = { readonly [K in keyof S]: ReturnType<S[K]> }

const recordUnknown = (ctx: ReadContext, keys: ReadonlyArray<string>, known: ReadonlyArray<string>, path: string) => {
  const unknown = keys.filter((key) => !known.includes(key)).sort()
  for (const key of unknown) ctx.unknown.push({ key, blockPath: path, known })
}

const decodeFields = <S extends Spec>(
  ctx: ReadContext,
  spec: S,
  fields: ReadonlyArray<readonly [string, Node | null]>,
  path: string
): Decoded<S> => {
  const known = Object.keys(spec)
  recordUnknown(ctx, fields.map(([key]) => key), known, path)
  const out: Record<string, unknown> = {}
  for (const key of known) {
    const field = fields.find(([name]) => name === key)
    out[key] = spec[key]!(ctx, field === undefined ? undefined : field[1], childPath(path, key))
  }
  return out as Decoded<S>
}

/**
 * What a reader reads beneath itself, so the whole key tree can be walked without a document
 * (every key must be acted on or warned: ./ManifestKeys.ts).
 */
export interface Shape {
  readonly fields?: Spec
  readonly item?: Reader<unknown>
}

export const shapeOf = (reader: Reader<unknown>): Shape => reader as Shape

const withShape = <R extends Reader<any>>(reader: R, shape: Shape): R => Object.assign(reader, shape)

/** A mapping read field by field; absent or null reads as `undefined`. */
export const block = <S extends Spec>(spec: S): Reader<Decoded<S> | undefined> =>
  withShape((ctx, input, path) => {
    const node = deref(ctx, input)
    if (node === undefined || isNull(node)) return undefined
    if (!isMap(node)) return typeError(ctx, node, path, "a mapping")
    return decodeFields(ctx, spec, entries(ctx, node), path)
  }, { fields: spec })

/** A mapping inside a list: a null entry reads as a mapping with every field absent. */
export const blockItem = <S extends Spec>(spec: S): Reader<Decoded<S>> =>
  withShape((ctx, input, path) => block(spec)(ctx, input, path) ?? decodeFields(ctx, spec, [], path), { fields: spec })

/** A key whose mere presence matters (`config:` with nothing under it is still declared). */
export const present: Reader<{ readonly node: Node | null } | undefined> = (_ctx, input) =>
  input === undefined ? undefined : { node: input }

/** A key's node as written, for the blocks the reference reads untyped (`retain:`, `max_bytes:`). */
export const anyNode: Reader<Node | null | undefined> = (ctx, input) => (input === undefined ? undefined : deref(ctx, input) ?? null)

/** Plain JS for a node (aliases resolved, bounded by the library's alias-count guard). */
export const toPlain = (ctx: ReadContext, node: Node | null): unknown =>
  node === null ? null : node.toJS(ctx.doc, { maxAliasCount: 100 })

/**
 * Parses `text` and hands the root node to `read`. YAML syntax errors, unknown or self-nesting
 * aliases, and `ReadFailure`s all come back as the `ManifestError` they describe.
 */
export const readDocument = <A>(
  text: string,
  read: (ctx: ReadContext, root: Node | null) => A
): Either.Either<A, ManifestError> => {
  try {
    const lines = new LineCounter()
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })
    const ctx: ReadContext = { doc, lines, unknown: [], aliasReads: 0 }
    const [first] = doc.errors
    if (first !== undefined) {
      const { col, line } = lines.linePos(first.pos[0])
      return Either.left(yamlSyntaxError(line, col, first.message))
    }
    visit(doc, {
      Alias(_key, alias, path) {
        const target = alias.resolve(doc)
        if (target === undefined) fail(ctx, alias, `unknown anchor '${alias.source}'`)
        if (path.includes(target as never)) fail(ctx, alias, "recursion limit exceeded")
      }
    })
    return Either.right(read(ctx, (doc.contents as Node | null) ?? null))
  } catch (cause) {
    if (cause instanceof ReadFailure) return Either.left(cause.error)
    // The parser's own limits (deep nesting, alias fan-out) surface as exceptions.
    const detail = cause instanceof Error ? cause.message : String(cause)
    return Either.left(yamlErrorWithoutPosition(detail))
  }
}
