/**
 * The `inference:` block (spec §1.5, the reference's `parse_inference`): its presence makes a
 * capsule an agent capsule. `transport: http` (the default) needs an endpoint, a model and a
 * driver artifact; `transport: process` needs a command and refuses the http-only keys. Rules run
 * in the reference's order, each refusal worded
 * "murmur.yaml: invalid inference config for '<field>': <message>" (E-MAN-003). The cross-block
 * rules (the driver and the prompt artifact must be declared entries) run in `checkInferenceArtifacts`.
 */
import { Schema } from "effect"
import type { ArtifactEntry } from "./ArtifactEntry.js"
import { checkEndpoint, driverConfigJson, resolveApiKey } from "./InferenceValues.js"
import { invalidInference } from "./ManifestError.js"
import { anyNode, block, type Decoded, optBool, optF32, optString, optUint, type ReadContext, refuse } from "./YamlReader.js"

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const DEFAULT_MAX_TURNS = 10
/** The per-turn output cap an http capsule gets when it declares none. */
export const DEFAULT_MAX_TOKENS = 8192
export const DEFAULT_COMPACTION_THRESHOLD = 0.98

export const Compaction = Schema.Struct({
  /** Fraction of the context window at which compaction fires, in (0, 1]. */
  threshold: Schema.Number,
  model: exact(Schema.String),
  systemPrompt: exact(Schema.String),
  systemPromptFile: exact(Schema.String),
  dumpSummaries: Schema.Boolean
})
export type Compaction = typeof Compaction.Type

export const InferenceDriver = Schema.Struct({
  artifact: Schema.String,
  /** `driver.config` as compact JSON: the `MURMUR_INFERENCE_DRIVER_CONFIG` value. */
  configJson: exact(Schema.String)
})
export type InferenceDriver = typeof InferenceDriver.Type

export const InferenceConfig = Schema.Struct({
  transport: Schema.Literal("http", "process"),
  /** http only. */
  endpoint: exact(Schema.String),
  /** Required under http; may be empty under process (the CLI's own default model). */
  model: Schema.String,
  /** http only; a literal or the resolved `${VAR}`. Prints as `<redacted>`. */
  apiKey: exact(Schema.Redacted(Schema.String)),
  /** The host variable `apiKey` was read from, when it was a `${VAR}` reference. */
  apiKeyEnv: exact(Schema.String),
  /** http only. */
  driver: exact(InferenceDriver),
  /** process only: the CLI to spawn. */
  command: exact(Schema.String),
  systemPrompt: exact(Schema.String),
  /** Relative to the manifest's directory; read at launch. */
  systemPromptFile: exact(Schema.String),
  /** A declared entry with `prompt_payload`, whose payload is the system prompt. */
  systemPromptArtifact: exact(Schema.String),
  maxTurns: Schema.Number,
  /** http only: the per-turn output cap, `DEFAULT_MAX_TOKENS` unless declared. */
  maxTokens: exact(Schema.Number),
  /** http only: the session's token ceiling. */
  maxSessionTokens: exact(Schema.Number),
  compaction: exact(Compaction)
})
export type InferenceConfig = typeof InferenceConfig.Type

const driverSpec = { artifact: optString, config: anyNode }

export const inferenceSpec = {
  transport: optString,
  endpoint: optString,
  model: optString,
  api_key: optString,
  command: optString,
  system_prompt: optString,
  system_prompt_file: optString,
  system_prompt_artifact: optString,
  driver: block(driverSpec),
  provider: block(driverSpec),
  compaction: block({ threshold: optF32, model: optString, system_prompt: optString, system_prompt_file: optString, dump_summaries: optBool }),
  max_turns: optUint("u32"),
  max_task_reopens: optUint("u32"),
  max_tokens: optUint("u32"),
  max_session_tokens: optUint("u64")
}
export type RawInference = Decoded<typeof inferenceSpec>

const trimmed = (value: string | undefined): string | undefined => {
  const text = value?.trim()
  return text === undefined || text === "" ? undefined : text
}

const required = (value: string | undefined, key: string): string =>
  trimmed(value) ?? refuse(invalidInference(`inference.${key}`, "missing required field"))

/** Rust's `Display` for an f32: the shortest decimal that reads back as the same f32. */
const f32Text = (value: number): string => {
  const single = Math.fround(value)
  if (Number.isNaN(single)) return "NaN"
  if (!Number.isFinite(single)) return single > 0 ? "inf" : "-inf"
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = Number(single.toPrecision(digits))
    if (Math.fround(candidate) === single) return String(candidate)
  }
  return String(single)
}

const lowerCompaction = (raw: NonNullable<RawInference["compaction"]>): Compaction => {
  if (raw.threshold !== undefined) {
    const single = Math.fround(raw.threshold)
    if (single <= 0 || single > 1) {
      refuse(invalidInference("inference.compaction.threshold", `must be in (0.0, 1.0] but got ${f32Text(raw.threshold)}`))
    }
  }
  if (raw.system_prompt !== undefined && raw.system_prompt_file !== undefined) {
    refuse(invalidInference(
      "inference.compaction.system_prompt",
      "at most one of inference.compaction.system_prompt, inference.compaction.system_prompt_file may be set"
    ))
  }
  const systemPromptFile = trimmed(raw.system_prompt_file)
  return {
    threshold: raw.threshold ?? DEFAULT_COMPACTION_THRESHOLD,
    ...(raw.model === undefined ? {} : { model: raw.model }),
    ...(raw.system_prompt === undefined ? {} : { systemPrompt: raw.system_prompt }),
    ...(systemPromptFile === undefined ? {} : { systemPromptFile }),
    dumpSummaries: raw.dump_summaries ?? false
  }
}

const positive = (field: string, value: number | undefined) => {
  if (value === 0) refuse(invalidInference(field, "must be greater than 0"))
}

const notWithProcess = (field: string, present: boolean) => {
  if (present) refuse(invalidInference(field, "is not valid with transport: process"))
}

/** The reference's `parse_inference`, rule for rule; `env` answers `${VAR}` in `api_key`. */
export const lowerInference = (
  ctx: ReadContext,
  raw: RawInference,
  env: Readonly<Record<string, string | undefined>>
): InferenceConfig => {
  const transport = trimmed(raw.transport) ?? "http"
  const compaction = raw.compaction === undefined ? undefined : lowerCompaction(raw.compaction)
  const systemPrompt = trimmed(raw.system_prompt)
  const systemPromptFile = trimmed(raw.system_prompt_file)
  const systemPromptArtifact = trimmed(raw.system_prompt_artifact)
  if ([systemPrompt, systemPromptFile, systemPromptArtifact].filter((source) => source !== undefined).length > 1) {
    refuse(invalidInference("inference.system_prompt", "at most one of system_prompt, system_prompt_file, system_prompt_artifact may be set"))
  }
  positive("inference.max_turns", raw.max_turns)
  if (raw.max_task_reopens !== undefined) {
    refuse(invalidInference("inference.max_task_reopens", "is not a valid inference field; set lifecycle.max_task_reopens instead"))
  }
  const shared = {
    ...(compaction === undefined ? {} : { compaction }),
    ...(systemPrompt === undefined ? {} : { systemPrompt }),
    ...(systemPromptFile === undefined ? {} : { systemPromptFile }),
    ...(systemPromptArtifact === undefined ? {} : { systemPromptArtifact }),
    maxTurns: raw.max_turns ?? DEFAULT_MAX_TURNS
  }
  switch (transport) {
    case "http": {
      const endpoint = required(raw.endpoint, "endpoint")
      checkEndpoint(endpoint)
      const model = required(raw.model, "model")
      const writtenKey = trimmed(raw.api_key)
      const key = writtenKey === undefined ? undefined : resolveApiKey(writtenKey, env)
      const driverRaw = raw.driver ?? raw.provider ?? refuse(invalidInference("inference.driver", "missing required field"))
      const artifact = trimmed(driverRaw.artifact) ?? refuse(invalidInference("inference.driver.artifact", "missing required field"))
      const configJson = driverConfigJson(ctx, driverRaw.config)
      positive("inference.max_tokens", raw.max_tokens)
      positive("inference.max_session_tokens", raw.max_session_tokens)
      return {
        transport,
        endpoint,
        model,
        ...key,
        driver: configJson === undefined ? { artifact } : { artifact, configJson },
        ...shared,
        maxTokens: raw.max_tokens ?? DEFAULT_MAX_TOKENS,
        ...(raw.max_session_tokens === undefined ? {} : { maxSessionTokens: raw.max_session_tokens })
      }
    }
    case "process": {
      notWithProcess("inference.driver.artifact", raw.driver !== undefined || raw.provider !== undefined)
      notWithProcess("inference.endpoint", trimmed(raw.endpoint) !== undefined)
      notWithProcess("inference.api_key", trimmed(raw.api_key) !== undefined)
      notWithProcess("inference.max_tokens", raw.max_tokens !== undefined)
      notWithProcess("inference.max_session_tokens", raw.max_session_tokens !== undefined)
      const command = required(raw.command, "command")
      return { transport, model: trimmed(raw.model) ?? "", command, ...shared }
    }
    default:
      return refuse(invalidInference("inference.transport", `unknown value '${transport}'`))
  }
}

/**
 * The rules that need the `artifacts:` list: the http driver must be a declared
 * `runtime: driver` entry, and `system_prompt_artifact` a declared entry with `prompt_payload`.
 */
export const checkInferenceArtifacts = (inference: InferenceConfig, artifacts: ReadonlyArray<ArtifactEntry>): void => {
  const driver = inference.driver?.artifact
  if (driver !== undefined) {
    const entry = artifacts.find((artifact) => artifact.name === driver) ??
      refuse(invalidInference("inference.driver.artifact", `artifact '${driver}' is not declared in artifacts:`))
    if (entry.runtime !== "driver") {
      refuse(invalidInference(
        "inference.driver.artifact",
        `artifact '${driver}' (runtime: ${entry.runtime}) is not a 'runtime: driver' entry, which inference.driver.artifact requires`
      ))
    }
  }
  const promptArtifact = inference.systemPromptArtifact
  if (promptArtifact !== undefined) {
    const entry = artifacts.find((artifact) => artifact.name === promptArtifact) ??
      refuse(invalidInference("inference.system_prompt_artifact", `artifact '${promptArtifact}' is not declared in artifacts:`))
    if (!entry.promptPayload) {
      refuse(invalidInference(
        "inference.system_prompt_artifact",
        `artifact '${promptArtifact}' (runtime: ${entry.runtime}) does not declare 'prompt_payload: true', which system_prompt_artifact requires`
      ))
    }
  }
}
