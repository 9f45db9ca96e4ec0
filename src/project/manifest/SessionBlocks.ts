/**
 * The small session blocks of spec §1.5: `network` (the door's port), `context` (the token budget
 * and the 0.3 conversation-record keys), `trace` (capture mode, with the retired
 * `include_tool_output` alias, and retention) and `observability` (OTLP endpoint, eval scorers).
 * Each keeps the reference's defaults and refusal texts.
 */
import { Schema } from "effect"
import type { Node } from "yaml"
import { invalidInference, invalidRecordStore, invalidTrace, isPathSegment, type ManifestWarning } from "./ManifestError.js"
import { ContextRetain, lowerRetain, positiveCount, TraceRetain } from "./Retention.js"
import {
  anyNode,
  block,
  blockItem,
  type Decoded,
  fail,
  list,
  optBool,
  optF32,
  optString,
  optUint,
  type ReadContext,
  type Reader,
  refuse,
  string
} from "./YamlReader.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const NetworkConfig = Schema.Struct({
  /** The A2A listener's port; absent lets the host choose. */
  internalPort: exact(Schema.Number)
})
export type NetworkConfig = typeof NetworkConfig.Type

export const networkSpec = { internal_port: optUint("u16") }

export const lowerNetwork = (raw: Decoded<typeof networkSpec>): NetworkConfig =>
  raw.internal_port === undefined ? {} : { internalPort: raw.internal_port }

/** A threaded capsule's record caps (`context.record_max_bytes`, `context.record_max_turns`) when not declared. */
export const DEFAULT_RECORD_MAX_BYTES = 8 * 1024 * 1024
export const DEFAULT_RECORD_MAX_TURNS = 1000

export const DEFAULT_SEED_BUDGET = 0.1
export const DEFAULT_SEED_OVERFLOW_MARGIN = 0.1

export const ContextConfig = Schema.Struct({
  /** The session's token budget; absent turns compaction off. */
  maxTokens: exact(Schema.Number),
  record: Schema.Boolean,
  recordStore: exact(Schema.String),
  /** Caps on a thread's durable record; absent: the defaults above. */
  recordMaxBytes: exact(Schema.Number),
  recordMaxTurns: exact(Schema.Number),
  seedBudget: Schema.Number,
  seedOverflowMargin: Schema.Number,
  retain: exact(ContextRetain)
})
export type ContextConfig = typeof ContextConfig.Type

export const contextSpec = {
  max_tokens: optUint("u32"),
  record: optString,
  record_store: optString,
  record_max_bytes: anyNode,
  record_max_turns: optUint("u32"),
  seed_budget: optF32,
  seed_overflow_margin: optF32,
  retain: anyNode
}

/** An f32 fraction in `0.0..=1.0` (compared at single precision, like the reference). */
const fraction = (field: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const single = Math.fround(value)
  return single >= 0 && single <= 1 ? value : refuse(invalidInference(field, "must be between 0.0 and 1.0"))
}

export const lowerContext = (ctx: ReadContext, raw: Decoded<typeof contextSpec>): ContextConfig => {
  if (raw.max_tokens === 0) refuse(invalidInference("context.max_tokens", "must be greater than 0"))
  const recordMode = raw.record?.trim()
  if (recordMode !== undefined && recordMode !== "on" && recordMode !== "off") {
    refuse(invalidInference("context.record", `unknown value '${recordMode}'; expected: on, off`))
  }
  const seedBudget = fraction("context.seed_budget", raw.seed_budget, DEFAULT_SEED_BUDGET)
  const seedOverflowMargin = fraction("context.seed_overflow_margin", raw.seed_overflow_margin, DEFAULT_SEED_OVERFLOW_MARGIN)
  const retain = raw.retain === undefined ? undefined : lowerRetain(ctx, raw.retain, "context.retain", invalidInference)
  const recordStore = raw.record_store?.trim()
  if (recordStore !== undefined && !isPathSegment(recordStore)) refuse(invalidRecordStore(recordStore, false))
  const recordMaxBytes = raw.record_max_bytes === undefined
    ? undefined
    : positiveCount(ctx, raw.record_max_bytes, "context.record_max_bytes", "bytes", invalidInference)
  if (raw.record_max_turns === 0) refuse(invalidInference("context.record_max_turns", "must be at least 1"))
  return {
    ...(raw.max_tokens === undefined ? {} : { maxTokens: raw.max_tokens }),
    record: recordMode !== "off",
    ...(recordStore === undefined ? {} : { recordStore }),
    ...(recordMaxBytes === undefined ? {} : { recordMaxBytes }),
    ...(raw.record_max_turns === undefined ? {} : { recordMaxTurns: raw.record_max_turns }),
    seedBudget,
    seedOverflowMargin,
    ...(retain === undefined
      ? {}
      : {
        retain: {
          ...(retain.count === undefined ? {} : { maxMessages: retain.count }),
          ...(retain.maxAgeSecs === undefined ? {} : { maxAgeSecs: retain.maxAgeSecs })
        }
      })
  }
}

export const TraceCapture = Schema.Literal("none", "meta", "content")
export type TraceCapture = typeof TraceCapture.Type

export const TraceConfig = Schema.Struct({ capture: TraceCapture, retain: exact(TraceRetain) })
export type TraceConfig = typeof TraceConfig.Type

export const traceSpec = { capture: optString, include_tool_output: optBool, retain: anyNode }

/** `trace.capture`, or the retired boolean it replaced (`true` → content, `false` → meta), never both. */
const resolveCapture = (capture: string | undefined, includeToolOutput: boolean | undefined, warnings: Array<ManifestWarning>): TraceCapture => {
  if (capture !== undefined && includeToolOutput !== undefined) {
    return refuse(invalidTrace("trace.include_tool_output", "'trace.capture' and 'trace.include_tool_output' are both set; 'trace.include_tool_output' is retired — remove it and keep 'trace.capture'"))
  }
  if (capture !== undefined) {
    const mode = capture.trim()
    return mode === "none" || mode === "meta" || mode === "content"
      ? mode
      : refuse(invalidTrace("trace.capture", `must be one of: none, meta, content; got '${mode}'`))
  }
  if (includeToolOutput === undefined) return "meta"
  const replacement = includeToolOutput ? "content" : "meta"
  warnings.push({
    code: "W-RETIRED-KEY",
    message: `warning: 'trace.include_tool_output: ${includeToolOutput}' is retired; use 'trace.capture: ${replacement}' instead`,
    path: "trace.include_tool_output"
  })
  return replacement
}

export const lowerTrace = (ctx: ReadContext, raw: Decoded<typeof traceSpec>, warnings: Array<ManifestWarning>): TraceConfig => {
  const capture = resolveCapture(raw.capture, raw.include_tool_output, warnings)
  const retain = raw.retain === undefined ? undefined : lowerRetain(ctx, raw.retain, "trace.retain", invalidTrace)
  return {
    capture,
    ...(retain === undefined
      ? {}
      : {
        retain: {
          ...(retain.count === undefined ? {} : { maxSessions: retain.count }),
          ...(retain.maxAgeSecs === undefined ? {} : { maxAgeSecs: retain.maxAgeSecs })
        }
      })
  }
}

/** The capture mode a session traces with: `meta` unless the manifest says otherwise. */
export const effectiveTraceCapture = (manifest: { readonly trace?: TraceConfig }): TraceCapture => manifest.trace?.capture ?? "meta"

export const Scorer = Schema.Struct({
  type: Schema.Literal("exit_ok", "max_turns", "max_tokens", "tool_sequence", "llm_judge"),
  name: Schema.String,
  max: exact(Schema.Number),
  expected: exact(Schema.Array(Schema.String))
})
export type Scorer = typeof Scorer.Type

export const ObservabilityConfig = Schema.Struct({
  /** Where OTLP spans go; an empty value reads as absent. */
  otelEndpoint: exact(Schema.String),
  eval: exact(Schema.Struct({ datasetId: exact(Schema.String), scorers: Schema.Array(Scorer) }))
})
export type ObservabilityConfig = typeof ObservabilityConfig.Type

const scorerSpec = { type: optString, name: optString, max: optUint("u64"), expected: list(string) }

/** A scorer entry: `type` is the one field serde requires. */
const scorerItem: Reader<Decoded<typeof scorerSpec> & { readonly type: string }> = (ctx, input, path) => {
  const raw = blockItem(scorerSpec)(ctx, input, path)
  return raw.type === undefined ? fail(ctx, input as Node | undefined, `${path}: missing field \`type\``) : { ...raw, type: raw.type }
}

export const observabilitySpec = {
  otel_endpoint: optString,
  eval: block({ dataset_id: optString, scorers: list(scorerItem) })
}

const lowerScorer = (raw: ReturnType<typeof scorerItem>, index: number, warnings: Array<ManifestWarning>): Scorer | undefined => {
  const name = raw.name ?? raw.type
  switch (raw.type) {
    case "exit_ok":
      return { type: raw.type, name }
    case "llm_judge":
      // The capsule's own model grades each task (../../agent/EvalScores.ts).
      return { type: raw.type, name }
    case "max_turns":
      return { type: raw.type, name, max: (raw.max ?? 10) % 4294967296 }
    case "max_tokens":
      return { type: raw.type, name, max: raw.max ?? 100_000 }
    case "tool_sequence":
      return { type: raw.type, name, expected: raw.expected ?? [] }
    default:
      warnings.push({
        code: "W-EVAL-SCORER",
        message: `unknown scorer type '${raw.type}' — skipping`,
        path: `observability.eval.scorers[${index}].type`
      })
      return undefined
  }
}

export const lowerObservability = (raw: Decoded<typeof observabilitySpec>, warnings: Array<ManifestWarning>): ObservabilityConfig => {
  const otelEndpoint = raw.otel_endpoint?.trim()
  const evalBlock = raw.eval
  return {
    ...(otelEndpoint === undefined || otelEndpoint === "" ? {} : { otelEndpoint }),
    ...(evalBlock === undefined
      ? {}
      : {
        eval: {
          ...(evalBlock.dataset_id === undefined ? {} : { datasetId: evalBlock.dataset_id }),
          scorers: (evalBlock.scorers ?? []).flatMap((scorer, index) => lowerScorer(scorer, index, warnings) ?? [])
        }
      })
  }
}
