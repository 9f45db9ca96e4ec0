/**
 * The top-level blocks this runtime accepts but does not act on yet (`inference`, `context`,
 * `observability`, `trace`, `network`, `lifecycle`, `exports`): kept as plain data for the parser
 * that will own them, with their recognized keys listed here (spec §1.5, reference 0.3) so that a
 * key none of them knows is still reported as `W-SEC-019`.
 */
import type { RawShape } from "./YamlReader.js"

export const INFERENCE_SHAPE: RawShape = {
  transport: "leaf",
  endpoint: "leaf",
  model: "leaf",
  api_key: "leaf",
  command: "leaf",
  system_prompt: "leaf",
  system_prompt_file: "leaf",
  system_prompt_artifact: "leaf",
  driver: { artifact: "leaf", config: "leaf" },
  provider: { artifact: "leaf", config: "leaf" },
  compaction: { threshold: "leaf", model: "leaf", system_prompt: "leaf", system_prompt_file: "leaf", dump_summaries: "leaf" },
  max_turns: "leaf",
  max_task_reopens: "leaf",
  max_tokens: "leaf",
  max_session_tokens: "leaf"
}

export const CONTEXT_SHAPE: RawShape = {
  max_tokens: "leaf",
  record: "leaf",
  record_store: "leaf",
  seed_budget: "leaf",
  seed_overflow_margin: "leaf",
  retain: "leaf"
}

export const OBSERVABILITY_SHAPE: RawShape = {
  otel_endpoint: "leaf",
  eval: {
    dataset_id: "leaf",
    scorers: [{ type: "leaf", name: "leaf", max: "leaf", expected: "leaf" }]
  }
}

export const TRACE_SHAPE: RawShape = { capture: "leaf", include_tool_output: "leaf", retain: "leaf" }

export const NETWORK_SHAPE: RawShape = { internal_port: "leaf" }

export const LIFECYCLE_SHAPE: RawShape = {
  task_acceptance: "leaf",
  after_task: "leaf",
  queue_depth: "leaf",
  input_timeout_secs: "leaf",
  conversation: "leaf",
  max_task_reopens: "leaf",
  shell_grace_secs: "leaf",
  delegation_deadline_secs: "leaf"
}

export const EXPORTS_SHAPE: RawShape = {
  files: { root: "leaf", mode: "leaf", max_bytes: "leaf" },
  peer_files: { root: "leaf", max_ttl: "leaf", max_bytes: "leaf" }
}
