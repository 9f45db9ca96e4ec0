/**
 * `murmur.yaml` as written (snake_case keys, values before any default or rule), for the JSON
 * Schema editors read (schema/murmur.schema.json, made by ./ManifestSchema.ts). The readers in
 * ../Manifest.ts stay the authority: this schema describes what they accept, and
 * test/cli/ManifestSchema.test.ts holds its key tree to ./ManifestKeys.ts, which is held to the
 * readers. Keys that are always refused are `Schema.Never`, so an editor flags them with their help.
 */
import { Schema } from "effect"
import { CapabilitiesDocument } from "./CapabilitiesDocument.js"
import { DEFAULT_LIFECYCLE } from "./Lifecycle.js"
import {
  anyValue,
  BYTE_SIZE,
  countOrSuffixed,
  DURATION,
  flag,
  fraction,
  oneOf,
  opt,
  section,
  strings,
  text,
  u16,
  u32,
  u64
} from "./DocumentFields.js"
import { DEFAULT_COMPACTION_THRESHOLD, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS } from "./Inference.js"
import { DEFAULT_EXPORT_MAX_BYTES } from "./Retention.js"
import { DEFAULT_RECORD_MAX_BYTES, DEFAULT_RECORD_MAX_TURNS, DEFAULT_SEED_BUDGET, DEFAULT_SEED_OVERFLOW_MARGIN } from "./SessionBlocks.js"

const never = (description: string) => Schema.optionalWith(Schema.Never.annotations({ description }), { exact: true })

const capabilities = (description: string) => opt(CapabilitiesDocument, { description })

const ArtifactEntryDocument = Schema.Struct({
  name: text({ description: "The artifact's name: the tool name the model sees, or the name inference.driver.artifact refers to. Required (E-MAN-003); runtime-owned tool names are E-CAP-013." }),
  version: text({ description: "The version to resolve; required unless `source:` is set (then it is `local`, and a version is ignored with a warning)." }),
  runtime: oneOf(["tool", "driver", "hook", "skill"], {
    description: "The artifact's role. Hooks run at the agent loop's lifecycle points (a script capsule warns W-RUN-001); `wasm` and `native` are refused (E-MAN-003).",
    default: "tool"
  }),
  source: text({ description: "A directory, relative to this manifest, holding the artifact (its murmur.yaml and .wasm); needs `local_source: true`." }),
  local_source: flag({ description: "The artifact comes from `source:`, not a registry. Default: true for skills, else false." }),
  prompt_payload: flag({ description: "The artifact carries a prompt (usable as inference.system_prompt_artifact). Default: true for skills, else false." }),
  capabilities: capabilities("This artifact's own grant, narrowed from the capsule-wide ceiling. Grants that apply capsule-wide only are inert here (W-SEC-008)."),
  on_overflow: oneOf(["drop", "block"], { description: "An async hook's job queue when full; hook entries only (E-MAN-003 elsewhere).", default: "drop" }),
  config: anyValue({ description: "Any YAML value, given to the artifact as JSON in MURMUR_ARTIFACT_CONFIG (E-CAP-010 if it cannot be). Not on skills." })
})

const driver = (description: string) =>
  section({
    artifact: text({ description: "The name of a declared `runtime: driver` entry in artifacts:." }),
    config: anyValue({ description: "Any YAML value, given to the driver as JSON in MURMUR_INFERENCE_DRIVER_CONFIG." })
  }, { description })

const InferenceDocument = Schema.Struct({
  transport: oneOf(["http", "process"], {
    description: "`http`: a driver artifact talks to the endpoint. `process` (a CLI) is validated but cannot run here (W-RUN-001).",
    default: "http"
  }),
  endpoint: text({ description: "The model's base URL (http); the driver reaches it through the gateway, so list it in capabilities.network.allow (validate warns W-VAL-001)." }),
  model: text({ description: "The model name sent to the endpoint; required under http." }),
  api_key: text({ description: "The provider key: a literal or `${VAR}` read from the host environment (E-MAN-003 when unset). Never shown to guests." }),
  command: text({ description: "The CLI to spawn; process transport only (E-MAN-003 under http)." }),
  system_prompt: text({ description: "The system prompt. At most one of system_prompt, system_prompt_file, system_prompt_artifact." }),
  system_prompt_file: text({ description: "A file, relative to this manifest, holding the system prompt; read at launch." }),
  system_prompt_artifact: text({ description: "A declared entry with prompt_payload whose payload is the system prompt." }),
  driver: driver("The driver artifact that turns the conversation into model requests (required under http)."),
  provider: driver("The older name of `driver`; read the same way."),
  compaction: section({
    threshold: fraction({ description: "Fraction of the context window at which compaction would fire, in (0, 1].", default: DEFAULT_COMPACTION_THRESHOLD }),
    model: text({ description: "Model for summaries." }),
    system_prompt: text({ description: "Prompt for summaries." }),
    system_prompt_file: text({ description: "File holding the prompt for summaries." }),
    dump_summaries: flag({ description: "Keep the summaries on disk.", default: false })
  }, { description: "Conversation compaction under context.max_tokens: an on-compaction hook, else the capsule's own model, shortens the history before a request past the threshold." }),
  max_turns: u32({ description: "Most driver turns per task before it fails (0 is refused).", default: DEFAULT_MAX_TURNS }),
  max_task_reopens: never("Moved to lifecycle.max_task_reopens in 0.3; refused here (E-MAN-003)."),
  max_tokens: u32({ description: "The per-turn output cap sent with each driver request.", default: DEFAULT_MAX_TOKENS }),
  max_session_tokens: u64({ description: "A session-wide token ceiling, checked before each provider call: past it the task ends spend_ceiling_reached." })
})

const retain = (countKey: "max_sessions" | "max_messages", countHelp: string, description: string) =>
  section({
    [countKey]: u32({ description: countHelp }),
    max_age: countOrSuffixed(DURATION, { description: "Oldest to keep: seconds, or a number with s, m, h or d (`14d`)." })
  } as { readonly max_age: ReturnType<typeof u32> } & Record<typeof countKey, ReturnType<typeof u32>>, { description })

const ContextDocument = Schema.Struct({
  max_tokens: u32({ description: "The model's context window: a request that would pass compaction.threshold of it is compacted first." }),
  record: oneOf(["on", "off"], { description: "Keep a threaded capsule's conversation.jsonl.", default: "on" }),
  record_store: text({ description: "The directory, under the murmur home, where conversation records are kept: one path segment (E-CAP-011); default the capsule's name." }),
  record_max_bytes: countOrSuffixed(BYTE_SIZE, { description: "Largest a thread's conversation.jsonl grows: bytes, or a number with Ki, Mi or Gi. Past it the oldest turns are dropped (a conversation_trimmed trace line).", default: DEFAULT_RECORD_MAX_BYTES }),
  record_max_turns: u32({ description: "Most records (turns) a thread's conversation.jsonl keeps; past it the oldest are dropped.", default: DEFAULT_RECORD_MAX_TURNS }),
  seed_budget: fraction({ description: "Share of max_tokens that on-task-start hooks may seed; what passes it (and the margin) is cut.", default: DEFAULT_SEED_BUDGET }),
  seed_overflow_margin: fraction({ description: "Slack over the seed budget before seeded messages are cut.", default: DEFAULT_SEED_OVERFLOW_MARGIN }),
  retain: retain("max_messages", "Most messages of the reloaded history (at least 1).", "Trims a threaded conversation's reloaded history (at least one key; others are refused).")
})

const ScorerDocument = Schema.Struct({
  type: Schema.String.annotations({ description: "exit_ok, max_turns, max_tokens, tool_sequence or llm_judge (others are skipped with W-EVAL-SCORER)." }),
  name: text({ description: "The scorer's name; defaults to its type." }),
  max: u64({ description: "The bound for max_turns (10) and max_tokens (100000)." }),
  expected: strings({ description: "The tool names tool_sequence expects, in order." })
})

export const ManifestDocument = Schema.Struct({
  name: Schema.String.annotations({ description: "The capsule's name (required, E-MAN-001); shown on the agent card and in `serving` lines." }),
  version: Schema.String.annotations({ description: "The capsule's version (required, E-MAN-001); quote numbers such as '1.0'." }),
  mur_version: text({ description: "The runtime version the capsule was written for; a mismatch adds W-SEC-019 to unknown-key warnings." }),
  config: never("There is no capsule-wide config; declare `config:` on the artifact entry that reads it (E-MAN-003)."),
  artifacts: opt(Schema.Array(ArtifactEntryDocument), { description: "The WebAssembly components this capsule uses: its driver, tools, hooks and skills.", default: [] }),
  capabilities: capabilities("The capsule-wide grant ceiling: everything any guest or the shell may touch. Absent: nothing."),
  inference: opt(InferenceDocument, { description: "Makes this an agent capsule: the model, the driver and the agent loop's limits. Absent: a script capsule." }),
  context: opt(ContextDocument, { description: "The conversation's token budget and record." }),
  observability: section({
    otel_endpoint: text({ description: "Where OTLP/HTTP spans go (empty reads as absent)." }),
    eval: section({
      dataset_id: text({ description: "The evaluation dataset, written on each eval.jsonl line." }),
      scorers: opt(Schema.Array(ScorerDocument), { description: "Scorers run over each finished task; llm_judge is not run (W-RUN-001)." })
    }, { description: "Scores each task as it ends: a line of <records>/eval.jsonl beside the trace." })
  }, { description: "Tracing and evaluation." }),
  trace: section({
    capture: oneOf(["none", "meta", "content"], { description: "What trace.jsonl records: nothing, metadata, or also tool input and output.", default: "meta" }),
    include_tool_output: flag({ description: "Retired: true means capture: content, false capture: meta (W-RETIRED-KEY); refused beside capture." }),
    retain: retain("max_sessions", "Most sessions' records kept, this one counted (at least 1).", "Deletes older sessions' records (their traces) when a session starts: past the newest max_sessions, or last written more than max_age ago. Running sessions are kept.")
  }, { description: "The session trace (trace.jsonl)." }),
  network: section({
    internal_port: u16({ description: "The door's port for serve and run when --port is absent (E-RUN-010 when taken). Absent: any free port." })
  }, { description: "The A2A door." }),
  lifecycle: section({
    task_acceptance: oneOf(["none", "single", "queue"], { description: "none: no task starts; single: one task per session (every later one is refused, capsule is busy); queue: tasks wait in lanes. Absent: queue, whatever else the block declares (the reference defaults to single). Under single, conversation: threaded and after_task: sleep are warned (W-LIFECYCLE).", default: DEFAULT_LIFECYCLE.taskAcceptance }),
    after_task: oneOf(["exit", "sleep"], { description: "What `run` does after its task: end the session, or keep taking tasks until a signal (sleep only under task_acceptance: queue, else W-LIFECYCLE).", default: DEFAULT_LIFECYCLE.afterTask }),
    queue_depth: u64({ description: "Most tasks waiting to start under queue.", default: DEFAULT_LIFECYCLE.queueDepth }),
    input_timeout_secs: u64({ description: "How long an input request waits before the task fails with input-timeout. Absent: forever." }),
    conversation: oneOf(["stateless", "threaded"], { description: "threaded: a context's earlier turns are reloaded for each task.", default: DEFAULT_LIFECYCLE.conversation }),
    max_task_reopens: u32({ description: "How often an on-task-end hook may reopen a task (within inference.max_turns across attempts); past it the task ends reopen_budget_exhausted.", default: DEFAULT_LIFECYCLE.maxTaskReopens }),
    shell_grace_secs: u64({ description: "Seconds a shell command runs in the foreground before it detaches (0: every command detaches).", default: DEFAULT_LIFECYCLE.shellGraceSecs }),
    delegation_deadline_secs: u64({ description: "Seconds a delegated child may run before it is killed and reported terminated.", default: DEFAULT_LIFECYCLE.delegationDeadlineSecs }),
    delegation_max_depth: u32({ description: "How deep a chain of delegations may grow (the first capsule's children are depth 1; 0: this capsule may not delegate). A child keeps the smaller of its own and its parent's ceiling.", default: DEFAULT_LIFECYCLE.delegationMaxDepth }),
    delegation_max_children: u32({ description: "Children of one session running at once; a delegate-task past it is refused with a tool error.", default: DEFAULT_LIFECYCLE.delegationMaxChildren })
  }, { description: "How the session takes tasks and what it does after one." }),
  exports: section({
    files: section({
      root: text({ description: "A relative directory inside the workdir (required; absolute or `..` is refused, E-MAN-003)." }),
      mode: oneOf(["read-only"], { description: "Required; read-only is the one mode (GET only)." }),
      max_bytes: countOrSuffixed(BYTE_SIZE, { description: "Largest file served: bytes, or a number with Ki, Mi or Gi.", default: DEFAULT_EXPORT_MAX_BYTES })
    }, { description: "Files served on the door's resource plane (GET /resources/files/…)." }),
    peer_files: section({
      root: text({ description: "A relative directory inside the workdir that share-file may hand out (required)." }),
      max_ttl: countOrSuffixed(DURATION, { description: "Longest life of a shared-file handle: seconds, or a number with s, m, h or d. Absent: 1h under after_task: exit; under sleep it must be declared and at most 15m (E-CAP-008)." }),
      max_bytes: countOrSuffixed(BYTE_SIZE, { description: "Largest file a peer may redeem: bytes, or a number with Ki, Mi or Gi.", default: DEFAULT_EXPORT_MAX_BYTES })
    }, { description: "Files peers may fetch through share-file handles." })
  }, { description: "What the capsule makes readable from outside." })
}).annotations({ title: "murmur.yaml", description: "A Murmur capsule manifest, as read by capsule-runtime. Reference: docs/manifest.md." })
