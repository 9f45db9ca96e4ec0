/**
 * The agent half of the capsule manifest (spec §1.5): `inference`, `lifecycle`, `context`,
 * `trace`, `observability`, `network`, `exports`. Accepted manifests with every default, the api
 * key's redaction, the W-RUN-001 / retired-key warnings, and a table of refusals whose texts are
 * asserted byte for byte.
 */
import { assert, describe, it } from "@effect/vitest"
import { Either, Redacted, Schema } from "effect"
import * as fc from "fast-check"
import { inspect } from "node:util"
import { stringify } from "yaml"
import {
  CapsuleManifest,
  DEFAULT_LIFECYCLE,
  effectiveLifecycle,
  effectiveTraceCapture,
  isAgentCapsule,
  parseManifest,
  type ParsedManifest
} from "../../src/project/Manifest.js"
import { parseByteSize, parseDurationSecs } from "../../src/project/manifest/Retention.js"

type Env = Readonly<Record<string, string | undefined>>
const ENV: Env = { OPENAI_KEY: "sk-secret-123", EMPTY_KEY: "" }
const HEAD = "name: demo\nversion: 0.1.0\n"
const ARTIFACTS = "artifacts:\n  - { name: d, version: 1.0.0, runtime: driver }\n  - { name: guide, version: 0.1.0, runtime: skill }\n"
const BASE: Record<string, string> = { endpoint: "https://api.example.com/v1", model: "m", driver: "{ artifact: d }" }

/** A capsule with the driver `d` and the skill `guide`, an inference block (BASE with `fields` over it), then `extra`. */
const agent = (fields: Record<string, string | undefined> = {}, extra = "") => {
  const lines = Object.entries({ ...BASE, ...fields }).filter(([, value]) => value !== undefined).map(([key, value]) => `  ${key}: ${value}`)
  return `${HEAD}${ARTIFACTS}inference:\n${lines.join("\n")}\n${extra}`
}
const PROCESS = { transport: "process", endpoint: undefined, driver: undefined, command: "claude" }

const isCapsuleManifest = Schema.is(CapsuleManifest)

const ok = (text: string, env: Env = ENV): ParsedManifest => {
  const result = parseManifest(text, { env })
  if (Either.isLeft(result)) assert.fail(`expected a manifest, got ${result.left.code}: ${result.left.message}`)
  assert.isTrue(isCapsuleManifest(result.right.manifest), "the parsed manifest conforms to CapsuleManifest")
  return result.right
}

const refusal = (text: string, env: Env = ENV) => {
  const result = parseManifest(text, { env })
  if (Either.isRight(result)) assert.fail(`expected a refusal, got ${JSON.stringify(result.right)}`)
  return { code: result.left.code, message: result.left.message }
}

const inf = (field: string, message: string) => ({ code: "E-MAN-003", message: `murmur.yaml: invalid inference config for '${field}': ${message}` })
const trc = (field: string, message: string) => ({ code: "E-MAN-003", message: `murmur.yaml: invalid trace config for '${field}': ${message}` })
const exp = (field: string, message: string) => ({ code: "E-MAN-003", message: `murmur.yaml: invalid exports config for '${field}': ${message}` })

/** An E-MAN-002 positioned at the first occurrence of `needle` in `text`. */
const syntaxAt = (text: string, needle: string, detail: string) => {
  const offset = text.indexOf(needle)
  if (offset < 0) throw new Error(`'${needle}' is not in the manifest`)
  const before = text.slice(0, offset).split("\n")
  const line = before.length
  const column = before[before.length - 1]!.length + 1
  return { code: "E-MAN-002", message: `murmur.yaml: YAML syntax error at line ${line}, column ${column}: ${detail} at line ${line} column ${column}` }
}

const inertPaths = (parsed: ParsedManifest) => parsed.warnings.filter((w) => w.code === "W-RUN-001").map((w) => w.path)

describe("inference: accepted", () => {
  it("a minimal http agent: every default", () => {
    const { manifest, warnings } = ok(agent())
    assert.deepStrictEqual(warnings, [])
    assert.isTrue(isAgentCapsule(manifest))
    assert.deepStrictEqual(manifest.inference, {
      transport: "http",
      endpoint: "https://api.example.com/v1",
      model: "m",
      driver: { artifact: "d" },
      maxTurns: 10,
      maxTokens: 8192
    })
    assert.deepStrictEqual(effectiveLifecycle(manifest), DEFAULT_LIFECYCLE)
    assert.deepStrictEqual(DEFAULT_LIFECYCLE, {
      taskAcceptance: "queue",
      afterTask: "exit",
      queueDepth: 1,
      conversation: "stateless",
      maxTaskReopens: 1,
      shellGraceSecs: 10,
      delegationDeadlineSecs: 600,
      delegationMaxDepth: 3,
      delegationMaxChildren: 4
    })
    assert.strictEqual(effectiveTraceCapture(manifest), "meta")
  })

  it("every http key: trimmed values, the provider alias, driver.config as compact JSON in declaration order", () => {
    const { manifest } = ok(agent({
      transport: "' http '",
      endpoint: "' https://api.example.com/v1 '",
      model: "' gpt-4o '",
      driver: undefined,
      provider: "{ artifact: ' d ', config: { z: 1, a: [1.0, 2.5, true, ~, x], '10': { nested: yes }, 7: seven } }",
      system_prompt: "'  Be brief.  '",
      max_turns: "3",
      max_tokens: "100"
    }))
    assert.deepStrictEqual(manifest.inference, {
      transport: "http",
      endpoint: "https://api.example.com/v1",
      model: "gpt-4o",
      driver: { artifact: "d", configJson: "{\"z\":1,\"a\":[1.0,2.5,true,null,\"x\"],\"10\":{\"nested\":\"yes\"},\"7\":\"seven\"}" },
      systemPrompt: "Be brief.",
      maxTurns: 3,
      maxTokens: 100
    })
  })

  it("the prompt sources: a file, or a declared artifact with prompt_payload", () => {
    assert.strictEqual(ok(agent({ system_prompt_file: " prompts/system.md " })).manifest.inference?.systemPromptFile, "prompts/system.md")
    assert.strictEqual(ok(agent({ system_prompt_artifact: "guide" })).manifest.inference?.systemPromptArtifact, "guide")
    assert.isUndefined(ok(agent({ system_prompt: "'   '", system_prompt_file: "''" })).manifest.inference?.systemPrompt)
  })

  const loopback = [
    "http://localhost:11434",
    "http://127.0.0.1:8080/v1",
    "http://127.1",
    "http://127.255.0.1",
    "'http://[::1]:8080'",
    "HTTP://LOCALHOST/v1",
    "https://10.0.0.5:8443/v1"
  ]
  for (const endpoint of loopback) {
    it(`accepts the endpoint ${endpoint}`, () => {
      assert.isDefined(ok(agent({ endpoint })).manifest.inference?.endpoint)
    })
  }

  it("api_key: a literal or ${VAR} from the host environment, redacted everywhere it could print", () => {
    const literal = ok(agent({ api_key: "' sk-literal-456 '" })).manifest.inference!
    assert.strictEqual(Redacted.value(literal.apiKey!), "sk-literal-456")
    assert.isUndefined(literal.apiKeyEnv)
    const { manifest } = ok(agent({ api_key: "${OPENAI_KEY}" }))
    const key = manifest.inference!.apiKey!
    assert.strictEqual(Redacted.value(key), "sk-secret-123")
    assert.strictEqual(manifest.inference!.apiKeyEnv, "OPENAI_KEY")
    for (const printed of [String(key), `${key}`, JSON.stringify(manifest), inspect(manifest, { depth: 10 }), String(manifest.inference)]) {
      assert.notInclude(printed, "sk-secret-123")
    }
    assert.strictEqual(String(key), "<redacted>")
    assert.notInclude(inspect(literal, { depth: 10 }), "sk-literal-456")
    assert.strictEqual(Redacted.value(ok(agent({ api_key: "${EMPTY_KEY}" })).manifest.inference!.apiKey!), "", "a set but empty variable counts as set")
    assert.strictEqual(Redacted.value(ok(agent({ api_key: "'${lower_case}'" })).manifest.inference!.apiKey!), "${lower_case}", "not a reference: a literal")
    assert.isUndefined(ok(agent({ api_key: "'  '" })).manifest.inference!.apiKey, "blank reads as absent")
  })

  it("transport: process needs a command, takes an optional model, and is not acted on here", () => {
    const parsed = ok(agent({ ...PROCESS, model: undefined, max_turns: "4" }))
    assert.deepStrictEqual(parsed.manifest.inference, { transport: "process", model: "", command: "claude", maxTurns: 4 })
    assert.deepStrictEqual(parsed.warnings, [{
      code: "W-RUN-001",
      message: "'inference.transport: process' is accepted but not acted on by capsule-runtime (TypeScript) yet: this runtime drives a model only through a 'transport: http' driver artifact, so the capsule cannot run here",
      path: "inference.transport"
    }])
    assert.strictEqual(ok(agent({ ...PROCESS, endpoint: "''", api_key: "' '" })).manifest.inference?.command, "claude")
  })

  it("a hook artifact runs in an agent capsule (no warning); a script capsule's is named as not run", () => {
    const parsed = ok(`name: demo\nversion: 0.1.0\nartifacts:\n  - { name: d, version: 1.0.0, runtime: driver }\n  - { name: h, version: 1.0.0, runtime: hook }\n` +
      "inference:\n  endpoint: http://127.0.0.1:9/v1\n  model: m\n  driver: { artifact: d }\n")
    assert.deepStrictEqual(parsed.warnings.filter((w) => w.code === "W-RUN-001"), [])
    const script = ok(`name: demo\nversion: 0.1.0\nartifacts:\n  - { name: h, version: 1.0.0, runtime: hook }\n`)
    assert.deepStrictEqual(script.warnings.filter((w) => w.code === "W-RUN-001"), [{
      code: "W-RUN-001",
      message: "'runtime: hook (artifact 'h')' is accepted but not acted on by capsule-runtime (TypeScript) yet: a script capsule has no agent loop to call hooks at, so it runs without it",
      path: "artifacts[0]"
    }])
  })

  it("compaction and max_session_tokens: defaults applied, validated, both enforced (no warning)", () => {
    const parsed = ok(agent({ compaction: "{ model: small, system_prompt_file: ' c.md ' }", max_session_tokens: "50000" }))
    assert.deepStrictEqual(parsed.manifest.inference?.compaction, { threshold: 0.98, model: "small", systemPromptFile: "c.md", dumpSummaries: false })
    assert.strictEqual(parsed.manifest.inference?.maxSessionTokens, 50000)
    assert.deepStrictEqual(parsed.warnings, [])
    assert.strictEqual(ok(agent({ compaction: "{ threshold: 1, dump_summaries: true }" })).manifest.inference?.compaction?.threshold, 1)
  })
})

describe("the session blocks: accepted", () => {
  it("lifecycle: every key, and an empty block of defaults", () => {
    const { manifest, warnings } = ok(agent({}, `lifecycle:
  task_acceptance: queue
  after_task: sleep
  queue_depth: 4
  input_timeout_secs: 30
  conversation: threaded
  max_task_reopens: 0
  shell_grace_secs: 0
  delegation_deadline_secs: 120
  delegation_max_depth: 2
  delegation_max_children: 7
`))
    assert.deepStrictEqual(warnings, [])
    assert.deepStrictEqual(manifest.lifecycle, {
      taskAcceptance: "queue",
      afterTask: "sleep",
      queueDepth: 4,
      inputTimeoutSecs: 30,
      conversation: "threaded",
      maxTaskReopens: 0,
      shellGraceSecs: 0,
      delegationDeadlineSecs: 120,
      delegationMaxDepth: 2,
      delegationMaxChildren: 7
    })
    assert.deepStrictEqual(ok(agent({}, "lifecycle: {}\n")).manifest.lifecycle, DEFAULT_LIFECYCLE)
    assert.deepStrictEqual(ok(`${HEAD}lifecycle: { task_acceptance: none }\n`).manifest.lifecycle?.taskAcceptance, "none")
  })

  it("task_acceptance is queue unless declared, whatever else the block says; a key that another undoes is W-LIFECYCLE", () => {
    const threaded = ok(agent({}, "lifecycle: { conversation: threaded }\n"))
    assert.strictEqual(threaded.manifest.lifecycle?.taskAcceptance, "queue")
    assert.deepStrictEqual(threaded.warnings, [])
    const single = ok(agent({}, "lifecycle: { conversation: threaded, task_acceptance: single, after_task: sleep }\n"))
    assert.deepStrictEqual(single.warnings.map((w) => [w.code, w.path]), [
      ["W-LIFECYCLE", "lifecycle.task_acceptance"],
      ["W-LIFECYCLE", "lifecycle.after_task"]
    ])
    assert.match(single.warnings[0]!.message, /second turn is refused \('capsule is busy'\)/)
    assert.match(single.warnings[1]!.message, /^lifecycle\.after_task: sleep has no effect under task_acceptance: single/)
    // A script capsule's tasks are taken as the door's flags say: the block's acceptance is not its own.
    assert.deepStrictEqual(ok(`${HEAD}lifecycle: { task_acceptance: single, after_task: sleep }\n`).warnings, [])
  })

  it("network.internal_port and the context keys are read and acted on (no warning)", () => {
    const port = ok(agent({}, "network: { internal_port: 65535 }\n"))
    assert.deepStrictEqual(port.manifest.network, { internalPort: 65535 })
    assert.deepStrictEqual(inertPaths(port), [])
    const budget = ok(agent({}, "context: { max_tokens: 120000 }\n"))
    assert.deepStrictEqual(budget.manifest.context, { maxTokens: 120000, record: true, seedBudget: 0.1, seedOverflowMargin: 0.1 })
    assert.deepStrictEqual(inertPaths(budget), [])
    const full = ok(agent({}, `context:
  record: ' off '
  record_store: ' notes '
  seed_budget: 0.25
  seed_overflow_margin: 1
  retain: { max_messages: 200, max_age: 14d }
`))
    assert.deepStrictEqual(full.manifest.context, {
      record: false,
      recordStore: "notes",
      seedBudget: 0.25,
      seedOverflowMargin: 1,
      retain: { maxMessages: 200, maxAgeSecs: 14 * 86400 }
    })
    assert.deepStrictEqual(inertPaths(full), [])
  })

  it("trace.capture (default meta), the retired include_tool_output alias (warns), trace.retain (enforced, no warning)", () => {
    for (const capture of ["none", "meta", "content"] as const) {
      const parsed = ok(agent({}, `trace: { capture: ' ${capture} ' }\n`))
      assert.deepStrictEqual(parsed.manifest.trace, { capture })
      assert.deepStrictEqual(parsed.warnings, [])
    }
    assert.deepStrictEqual(ok(agent({}, "trace: {}\n")).manifest.trace, { capture: "meta" })
    for (const [flag, capture] of [[true, "content"], [false, "meta"]] as const) {
      const parsed = ok(agent({}, `trace: { include_tool_output: ${flag} }\n`))
      assert.strictEqual(effectiveTraceCapture(parsed.manifest), capture)
      assert.deepStrictEqual(parsed.warnings, [{
        code: "W-RETIRED-KEY",
        message: `warning: 'trace.include_tool_output: ${flag}' is retired; use 'trace.capture: ${capture}' instead`,
        path: "trace.include_tool_output"
      }])
    }
    const retained = ok(agent({}, "trace: { retain: { max_age: 30m, max_sessions: 5 } }\n"))
    assert.deepStrictEqual(retained.manifest.trace, { capture: "meta", retain: { maxSessions: 5, maxAgeSecs: 1800 } })
    assert.deepStrictEqual(inertPaths(retained), [])
  })

  it("observability: an empty otel_endpoint is absent; eval scorers get their defaults, unknown types are skipped with a warning, llm_judge is run (no warning)", () => {
    assert.deepStrictEqual(ok(agent({}, "observability: { otel_endpoint: '  ' }\n")).manifest.observability, {})
    assert.deepStrictEqual(ok(agent({}, "observability: { otel_endpoint: ' http://collector:4318 ' }\n")).manifest.observability, {
      otelEndpoint: "http://collector:4318"
    })
    const parsed = ok(agent({}, `observability:
  eval:
    dataset_id: ds-1
    scorers:
      - { type: exit_ok }
      - { type: max_turns, name: short }
      - { type: max_tokens, max: 500 }
      - { type: tool_sequence, expected: [search, answer] }
      - { type: vibes }
      - { type: llm_judge, name: judge }
`))
    assert.deepStrictEqual(parsed.manifest.observability?.eval, {
      datasetId: "ds-1",
      scorers: [
        { type: "exit_ok", name: "exit_ok" },
        { type: "max_turns", name: "short", max: 10 },
        { type: "max_tokens", name: "max_tokens", max: 500 },
        { type: "tool_sequence", name: "tool_sequence", expected: ["search", "answer"] },
        { type: "llm_judge", name: "judge" }
      ]
    })
    assert.deepStrictEqual(parsed.warnings, [
      { code: "W-EVAL-SCORER", message: "unknown scorer type 'vibes' — skipping", path: "observability.eval.scorers[4].type" }
    ])
  })

  it("exports: defaults, suffixed sizes and durations; both blocks acted on (no warning)", () => {
    const parsed = ok(`${HEAD}exports:
  files: { root: ' out/ ', mode: read-only }
  peer_files: { root: ./share, max_ttl: 15m, max_bytes: 2Ki }
`)
    assert.deepStrictEqual(parsed.manifest.exports, {
      files: { root: "out/", mode: "read-only", maxBytes: 10 * 1024 * 1024 },
      peerFiles: { root: "./share", maxTtlSecs: 900, maxBytes: 2048 }
    })
    assert.deepStrictEqual(inertPaths(parsed), [])
    assert.deepStrictEqual(ok(`${HEAD}exports: { files: { root: out, mode: read-only, max_bytes: 4096 } }\n`).manifest.exports?.files?.maxBytes, 4096)
    assert.deepStrictEqual(ok(`${HEAD}exports: {}\n`).manifest.exports, {})
  })

  it("durations and byte counts", () => {
    assert.deepStrictEqual([parseDurationSecs("90"), parseDurationSecs(" 30s "), parseDurationSecs("1h"), parseDurationSecs("2d")], [
      Either.right(90),
      Either.right(30),
      Either.right(3600),
      Either.right(172800)
    ])
    assert.deepStrictEqual(parseDurationSecs("30S"), Either.left("'30S' must be a duration: an integer, optionally suffixed s/m/h/d"))
    assert.deepStrictEqual(parseByteSize("1Gi"), Either.right(1073741824))
    assert.deepStrictEqual(parseByteSize("10 Mi"), Either.left("'10 Mi' must be a byte count, optionally suffixed Ki/Mi/Gi"))
    assert.deepStrictEqual(parseByteSize("99999999999Gi"), Either.left("'99999999999Gi' overflows a 64-bit byte count"))
  })

  it("unknown keys in the typed blocks still draw W-SEC-019", () => {
    const { warnings } = ok(agent({ temprature: "0.2" }, "lifecycle: { after_tsk: sleep }\ntrace: { captur: content }\n"))
    assert.deepStrictEqual(warnings.map((w) => [w.code, w.path]), [
      ["W-SEC-019", "inference.temprature"],
      ["W-SEC-019", "trace.captur"],
      ["W-SEC-019", "lifecycle.after_tsk"]
    ])
  })
})

type Bad = readonly [title: string, text: string, expected: { readonly code: string; readonly message: string }]
const bad = (title: string, text: string, expected: { readonly code: string; readonly message: string }): Bad => [title, text, expected]
const typed = (title: string, text: string, needle: string, detail: string): Bad => [title, text, syntaxAt(text, needle, detail)]
const NON_LOOPBACK = "use https:// for remote endpoints, or http://localhost or a loopback IP literal for local inference"
const DURATION = "must be a duration: an integer, optionally suffixed s/m/h/d"
const BYTES = "must be a byte count, optionally suffixed Ki/Mi/Gi"
const ROOT = "must be a relative path inside the workdir"
const EMPTY_RETAIN = "must declare at least one key — omit the block entirely to keep everything, which is what no policy means"
const AT_LEAST_ONE = "must be at least 1 — a limit of zero would delete what retention exists to keep; remove the key to leave it unbounded"

const badManifests: ReadonlyArray<Bad> = [
  // inference, the reference's order
  bad("unknown transport", agent({ transport: "grpc" }), inf("inference.transport", "unknown value 'grpc'")),
  bad("compaction threshold above 1", agent({ compaction: "{ threshold: 1.5 }", transport: "grpc" }), inf("inference.compaction.threshold", "must be in (0.0, 1.0] but got 1.5")),
  bad("compaction threshold 0", agent({ compaction: "{ threshold: 0 }" }), inf("inference.compaction.threshold", "must be in (0.0, 1.0] but got 0")),
  bad("compaction threshold 1.1", agent({ compaction: "{ threshold: 1.1 }" }), inf("inference.compaction.threshold", "must be in (0.0, 1.0] but got 1.1")),
  bad("compaction with both prompts", agent({ compaction: "{ system_prompt: a, system_prompt_file: b }" }), inf("inference.compaction.system_prompt", "at most one of inference.compaction.system_prompt, inference.compaction.system_prompt_file may be set")),
  bad("two prompt sources", agent({ system_prompt: "hi", system_prompt_artifact: "guide" }), inf("inference.system_prompt", "at most one of system_prompt, system_prompt_file, system_prompt_artifact may be set")),
  bad("max_turns 0", agent({ max_turns: "0" }), inf("inference.max_turns", "must be greater than 0")),
  bad("max_task_reopens moved to lifecycle", agent({ max_task_reopens: "2" }), inf("inference.max_task_reopens", "is not a valid inference field; set lifecycle.max_task_reopens instead")),
  bad("no endpoint", agent({ endpoint: undefined }), inf("inference.endpoint", "missing required field")),
  bad("blank endpoint", agent({ endpoint: "'  '" }), inf("inference.endpoint", "missing required field")),
  bad("plain http to a remote host", agent({ endpoint: "http://api.example.com/v1" }), inf("inference.endpoint", `'http://api.example.com/v1' uses plain http:// with non-loopback host 'api.example.com' — ${NON_LOOPBACK}`)),
  bad("plain http to 0.0.0.0", agent({ endpoint: "http://0.0.0.0:8080" }), inf("inference.endpoint", `'http://0.0.0.0:8080' uses plain http:// with non-loopback host '0.0.0.0' — ${NON_LOOPBACK}`)),
  bad("plain http to a mapped IPv4 loopback", agent({ endpoint: "'http://[::ffff:127.0.0.1]/'" }), inf("inference.endpoint", `'http://[::ffff:127.0.0.1]/' uses plain http:// with non-loopback host '[::ffff:7f00:1]' — ${NON_LOOPBACK}`)),
  bad("ftp endpoint", agent({ endpoint: "ftp://files.example.com" }), inf("inference.endpoint", "unsupported scheme 'ftp' in 'ftp://files.example.com' — expected http or https")),
  bad("host:port endpoint", agent({ endpoint: "'localhost:8080'" }), inf("inference.endpoint", "unsupported scheme 'localhost' in 'localhost:8080' — expected http or https")),
  bad("schemeless endpoint", agent({ endpoint: "api.example.com/v1" }), inf("inference.endpoint", "failed to parse 'api.example.com/v1' as a URL: relative URL without a base")),
  bad("endpoint without a host", agent({ endpoint: "'https://'" }), inf("inference.endpoint", "failed to parse 'https://' as a URL: empty host")),
  bad("endpoint with a bad port", agent({ endpoint: "http://localhost:99999" }), inf("inference.endpoint", "failed to parse 'http://localhost:99999' as a URL: invalid port number")),
  bad("no model", agent({ model: undefined }), inf("inference.model", "missing required field")),
  bad("unset api_key variable", agent({ api_key: "${MISSING_KEY}" }), { code: "E-MAN-003", message: "murmur.yaml: inference.api_key references ${MISSING_KEY} but the environment variable is not set" }),
  bad("no driver", agent({ driver: undefined }), inf("inference.driver", "missing required field")),
  bad("driver without artifact", agent({ driver: "{ config: { a: 1 } }" }), inf("inference.driver.artifact", "missing required field")),
  bad("driver.config a scalar", agent({ driver: "{ artifact: d, config: fast }" }), inf("inference.driver.config", "expected mapping/object")),
  bad("driver.config a sequence", agent({ driver: "{ artifact: d, config: [a] }" }), inf("inference.driver.config", "expected mapping/object")),
  bad("driver.config null key", agent({ driver: "{ artifact: d, config: { nested: { ~: x } } }" }), inf("inference.driver.config", "failed to convert to JSON: key must be a string")),
  bad("max_tokens 0", agent({ max_tokens: "0" }), inf("inference.max_tokens", "must be greater than 0")),
  bad("max_session_tokens 0", agent({ max_session_tokens: "0" }), inf("inference.max_session_tokens", "must be greater than 0")),
  bad("undeclared driver", agent({ driver: "{ artifact: ghost }" }), inf("inference.driver.artifact", "artifact 'ghost' is not declared in artifacts:")),
  bad("driver names a skill", agent({ provider: "{ artifact: guide }", driver: undefined }), inf("inference.driver.artifact", "artifact 'guide' (runtime: skill) is not a 'runtime: driver' entry, which inference.driver.artifact requires")),
  bad("undeclared prompt artifact", agent({ system_prompt_artifact: "notes" }), inf("inference.system_prompt_artifact", "artifact 'notes' is not declared in artifacts:")),
  bad("prompt artifact without prompt_payload", agent({ system_prompt_artifact: "d" }), inf("inference.system_prompt_artifact", "artifact 'd' (runtime: driver) does not declare 'prompt_payload: true', which system_prompt_artifact requires")),
  bad("process with a driver", agent({ ...PROCESS, driver: "{ artifact: d }" }), inf("inference.driver.artifact", "is not valid with transport: process")),
  bad("process with the provider alias", agent({ ...PROCESS, provider: "{ artifact: d }" }), inf("inference.driver.artifact", "is not valid with transport: process")),
  bad("process with an endpoint", agent({ ...PROCESS, endpoint: "https://x" }), inf("inference.endpoint", "is not valid with transport: process")),
  bad("process with an api_key", agent({ ...PROCESS, api_key: "${MISSING_KEY}" }), inf("inference.api_key", "is not valid with transport: process")),
  bad("process with max_tokens", agent({ ...PROCESS, max_tokens: "10" }), inf("inference.max_tokens", "is not valid with transport: process")),
  bad("process with max_session_tokens", agent({ ...PROCESS, max_session_tokens: "10" }), inf("inference.max_session_tokens", "is not valid with transport: process")),
  bad("process without a command", agent({ ...PROCESS, command: undefined }), inf("inference.command", "missing required field")),
  typed("max_turns negative", agent({ max_turns: "-1" }), "-1", "inference.max_turns: invalid value: integer `-1`, expected u32"),
  typed("max_tokens a word", agent({ max_tokens: "lots" }), "lots", "inference.max_tokens: invalid type: string \"lots\", expected u32"),
  typed("endpoint a sequence", agent({ endpoint: "[a]" }), "[a]", "inference.endpoint: invalid type: sequence, expected a string"),
  typed("driver a string", agent({ driver: "d" }), "d\n", "inference.driver: invalid type: string \"d\", expected a mapping"),
  typed("threshold a string", agent({ compaction: "{ threshold: high }" }), "high", "inference.compaction.threshold: invalid type: string \"high\", expected f32"),
  // lifecycle (serde enums and integers)
  typed("unknown task_acceptance", agent({}, "lifecycle: { task_acceptance: many }\n"), "many", "lifecycle.task_acceptance: unknown variant `many`, expected one of `none`, `single`, `queue`"),
  typed("unknown after_task", agent({}, "lifecycle: { after_task: forever }\n"), "forever", "lifecycle.after_task: unknown variant `forever`, expected `exit` or `sleep`"),
  typed("unknown conversation", agent({}, "lifecycle: { conversation: 3 }\n"), "3 }", "lifecycle.conversation: unknown variant `3`, expected `stateless` or `threaded`"),
  typed("negative queue_depth", agent({}, "lifecycle: { queue_depth: -2 }\n"), "-2", "lifecycle.queue_depth: invalid value: integer `-2`, expected usize"),
  typed("fractional shell_grace_secs", agent({}, "lifecycle: { shell_grace_secs: 1.5 }\n"), "1.5", "lifecycle.shell_grace_secs: invalid type: floating point `1.5`, expected u64"),
  typed("lifecycle a list", agent({}, "lifecycle: [queue]\n"), "[queue]", "lifecycle: invalid type: sequence, expected a mapping"),
  // network
  typed("internal_port above u16", agent({}, "network: { internal_port: 70000 }\n"), "70000", "network.internal_port: invalid value: integer `70000`, expected u16"),
  // context
  bad("context.max_tokens 0", agent({}, "context: { max_tokens: 0 }\n"), inf("context.max_tokens", "must be greater than 0")),
  bad("context.record unknown", agent({}, "context: { record: maybe }\n"), inf("context.record", "unknown value 'maybe'; expected: on, off")),
  bad("seed_budget above 1", agent({}, "context: { seed_budget: 1.5 }\n"), inf("context.seed_budget", "must be between 0.0 and 1.0")),
  bad("seed_overflow_margin negative", agent({}, "context: { seed_overflow_margin: -0.1 }\n"), inf("context.seed_overflow_margin", "must be between 0.0 and 1.0")),
  typed("seed_budget a string", agent({}, "context: { seed_budget: '0.5' }\n"), "'0.5'", "context.seed_budget: invalid type: string \"0.5\", expected f32"),
  bad("context.retain null", agent({}, "context:\n  retain:\n"), inf("context.retain", EMPTY_RETAIN)),
  bad("context.retain empty", agent({}, "context: { retain: {} }\n"), inf("context.retain", EMPTY_RETAIN)),
  bad("context.retain a number", agent({}, "context: { retain: 5 }\n"), inf("context.retain", "must be a block of keys (max_messages, max_age), got 'Number(5)'")),
  bad("context.retain zero messages", agent({}, "context: { retain: { max_messages: 0 } }\n"), inf("context.retain.max_messages", AT_LEAST_ONE)),
  bad("context.retain negative messages", agent({}, "context: { retain: { max_messages: -1 } }\n"), inf("context.retain.max_messages", "must be a whole number of at least 1")),
  bad("context.retain wordy age", agent({}, "context: { retain: { max_age: 5 minutes } }\n"), inf("context.retain.max_age", `'5 minutes' ${DURATION}`)),
  bad("context.retain zero age", agent({}, "context: { retain: { max_age: 0 } }\n"), inf("context.retain.max_age", `must be greater than zero; ${DURATION}`)),
  bad("context.retain a list age", agent({}, "context: { retain: { max_age: [1d] } }\n"), inf("context.retain.max_age", `'Sequence [String("1d")]' ${DURATION}`)),
  bad("context.retain the trace key", agent({}, "context: { retain: { max_sessions: 3 } }\n"), inf("context.retain", "unknown key 'max_sessions'; expected: max_messages, max_age")),
  // trace
  bad("trace.capture unknown", agent({}, "trace: { capture: verbose }\n"), trc("trace.capture", "must be one of: none, meta, content; got 'verbose'")),
  bad("trace capture and the retired alias", agent({}, "trace: { capture: content, include_tool_output: true }\n"), trc("trace.include_tool_output", "'trace.capture' and 'trace.include_tool_output' are both set; 'trace.include_tool_output' is retired — remove it and keep 'trace.capture'")),
  bad("trace.retain zero sessions", agent({}, "trace: { retain: { max_sessions: 0 } }\n"), trc("trace.retain.max_sessions", AT_LEAST_ONE)),
  bad("trace.retain empty", agent({}, "trace: { retain: {} }\n"), trc("trace.retain", EMPTY_RETAIN)),
  bad("trace.retain a string", agent({}, "trace: { retain: forever }\n"), trc("trace.retain", "must be a block of keys (max_sessions, max_age), got 'String(\"forever\")'")),
  typed("include_tool_output a string", agent({}, "trace: { include_tool_output: 'yes' }\n"), "'yes'", "trace.include_tool_output: invalid type: string \"yes\", expected a boolean"),
  // observability
  typed("scorer without a type", agent({}, "observability:\n  eval:\n    scorers:\n      - { name: x }\n"), "{ name: x }", "observability.eval.scorers[0]: missing field `type`"),
  // exports
  bad("files without root", `${HEAD}exports: { files: { mode: read-only } }\n`, exp("exports.files.root", `is required and ${ROOT}`)),
  bad("files with an absolute root", `${HEAD}exports: { files: { root: /etc, mode: read-only } }\n`, exp("exports.files.root", `'/etc' is absolute; ${ROOT}`)),
  bad("files escaping the workdir", `${HEAD}exports: { files: { root: out/../.., mode: read-only } }\n`, exp("exports.files.root", `'out/../..' contains a '..' component; ${ROOT}`)),
  bad("files without mode", `${HEAD}exports: { files: { root: out } }\n`, exp("exports.files.mode", "is required and must be 'read-only'")),
  bad("files read-write", `${HEAD}exports: { files: { root: out, mode: read-write } }\n`, exp("exports.files.mode", "'read-write' must be 'read-only'")),
  bad("files max_bytes in MB", `${HEAD}exports: { files: { root: out, mode: read-only, max_bytes: 10MB } }\n`, exp("exports.files.max_bytes", `'10MB' ${BYTES}`)),
  bad("files max_bytes 0", `${HEAD}exports: { files: { root: out, mode: read-only, max_bytes: 0Ki } }\n`, exp("exports.files.max_bytes", `must be greater than zero; ${BYTES}`)),
  bad("files max_bytes a list", `${HEAD}exports: { files: { root: out, mode: read-only, max_bytes: [1] } }\n`, exp("exports.files.max_bytes", `'Sequence [Number(1)]' ${BYTES}`)),
  bad("peer_files without root", `${HEAD}exports: { peer_files: { max_ttl: 1h } }\n`, exp("exports.peer_files.root", `is required and ${ROOT}`)),
  bad("peer_files wordy ttl", `${HEAD}exports: { peer_files: { root: out, max_ttl: 1 hour } }\n`, exp("exports.peer_files.max_ttl", `'1 hour' ${DURATION}`)),
  bad("peer_files zero ttl", `${HEAD}exports: { peer_files: { root: out, max_ttl: 0s } }\n`, exp("exports.peer_files.max_ttl", `must be greater than zero; ${DURATION}`)),
  bad("peer_files overflowing size", `${HEAD}exports: { peer_files: { root: out, max_bytes: 99999999999Gi } }\n`, exp("exports.peer_files.max_bytes", "'99999999999Gi' overflows a 64-bit byte count"))
]

describe("agent manifests: refusals, exact texts", () => {
  for (const [title, text, expected] of badManifests) {
    it(title, () => {
      assert.deepStrictEqual(refusal(text), expected)
    })
  }

  it("an artifact named like a runtime-owned tool is E-CAP-013, whatever its role", () => {
    for (const name of ["delegate-task", "share-file", "fetch-peer-file", "submit-plan"]) {
      const text = `name: a\nversion: 1\nartifacts:\n  - { name: d, version: 1, runtime: driver }\n  - { name: ${name}, version: 1, runtime: tool }\n` +
        "inference: { endpoint: 'https://api.example.com', model: m, driver: { artifact: d } }\n"
      assert.deepStrictEqual(refusal(text), {
        code: "E-CAP-013",
        message: `artifact '${name}' uses a name reserved for the runtime tool of the same name (reserved: delegate-task, fetch-peer-file, share-file, submit-plan); rename the artifact`
      })
    }
    assert.strictEqual(Either.isRight(parseManifest("name: a\nversion: 1\nartifacts:\n  - { name: delegate, version: 1 }\n")), true)
  })

  it("an api_key reference with no environment given reads as unset", () => {
    assert.strictEqual(Either.getLeft(parseManifest(agent({ api_key: "${OPENAI_KEY}" }))).pipe((left) => left._tag === "Some" && left.value.message),
      "murmur.yaml: inference.api_key references ${OPENAI_KEY} but the environment variable is not set")
  })

  it("checks in the reference's order: capabilities, inference, the other blocks, then the launch-time grant checks", () => {
    const badCaps = "capabilities: { limits: { instances: 0 } }\n"
    assert.strictEqual(refusal(agent({ max_turns: "0" }, badCaps)).message, "murmur.yaml: invalid capability config for 'capabilities.limits.instances': must be greater than zero")
    assert.deepStrictEqual(refusal(agent({ max_turns: "0" }, "context: { max_tokens: 0 }\n")), inf("inference.max_turns", "must be greater than 0"))
    assert.deepStrictEqual(refusal(agent({ driver: "{ artifact: ghost }" }, "trace: { capture: x }\n")), inf("inference.driver.artifact", "artifact 'ghost' is not declared in artifacts:"))
    assert.deepStrictEqual(refusal(agent({}, "context: { max_tokens: 0 }\ntrace: { capture: x }\n")), inf("context.max_tokens", "must be greater than 0"))
    assert.deepStrictEqual(
      refusal(agent({}, "capabilities: { network: { allow: [''] } }\nlifecycle: { queue_depth: 1 }\ntrace: { capture: x }\n")),
      trc("trace.capture", "must be one of: none, meta, content; got 'x'")
    )
    assert.strictEqual(refusal(agent({}, "capabilities: { network: { allow: [''] } }\n")).code, "E-CAP-001")
    assert.strictEqual(refusal(agent({ max_turns: "x" }, badCaps)).code, "E-MAN-002", "YAML types are checked before any rule")
  })
})

describe("agent manifests: never throw", () => {
  const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer({ min: -3, max: 70000 }), fc.double(), fc.boolean(), fc.constant(null))
  const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 2 }), fc.dictionary(fc.constantFrom("a", "max_age", "max_sessions", "max_messages"), scalar, { maxKeys: 2 }))
  const pick = (arb: fc.Arbitrary<unknown>, ...constants: Array<unknown>) => fc.oneof(arb, fc.constantFrom(...constants))
  const doc = fc.record({
    name: fc.constant("demo"),
    version: fc.constant("1"),
    artifacts: fc.constant([{ name: "d", version: "1", runtime: "driver" }]),
    inference: fc.record({
      transport: pick(value, "http", "process"),
      endpoint: pick(value, "https://x", "http://127.0.0.1:1", "http://[::1]"),
      model: pick(value, "m"),
      api_key: pick(value, "${OPENAI_KEY}", "${NOPE}"),
      command: value,
      driver: pick(value, { artifact: "d" }, { artifact: "d", config: { a: 1 } }),
      compaction: value,
      max_turns: value,
      max_tokens: value,
      system_prompt_artifact: pick(value, "d")
    }, { requiredKeys: [] }),
    lifecycle: fc.dictionary(fc.constantFrom("task_acceptance", "after_task", "queue_depth", "conversation"), pick(value, "queue", "sleep"), { maxKeys: 3 }),
    context: fc.record({ max_tokens: value, record: value, seed_budget: value, retain: value }, { requiredKeys: [] }),
    trace: fc.record({ capture: value, include_tool_output: value, retain: value }, { requiredKeys: [] }),
    observability: fc.record({ otel_endpoint: value, eval: value }, { requiredKeys: [] }),
    exports: fc.record({ files: value, peer_files: value }, { requiredKeys: [] })
  }, { requiredKeys: ["name", "version", "artifacts"] }).map((d) => stringify(d))

  it("every refusal is coded, and a YAML-level one always carries its position (property)", () => {
    fc.assert(
      fc.property(doc, (text) => {
        const result = parseManifest(text, { env: ENV })
        if (Either.isLeft(result)) {
          assert.match(result.left.code, /^E-(MAN|CAP)-\d{3}$/)
          if (result.left.code === "E-MAN-002") assert.match(result.left.message, /at line \d+, column \d+/, result.left.message)
        } else {
          assert.isTrue(isCapsuleManifest(result.right.manifest))
        }
      }),
      { numRuns: 800 }
    )
  })
})
