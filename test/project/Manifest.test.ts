import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { stringify } from "yaml"
import { CapsuleManifest, isAgentCapsule, parseManifest, type ParsedManifest } from "../../src/project/Manifest.js"
import { ArtifactManifest, parseArtifactManifest } from "../../src/project/manifest/ArtifactManifest.js"
import { DEFAULT_LIMITS, effectiveLimits } from "../../src/project/manifest/Capabilities.js"
import { editDistance, nearestKnownKey } from "../../src/project/manifest/UnknownKeys.js"

const HEAD = "name: demo\nversion: 0.1.0\n"

const isCapsuleManifest = Schema.is(CapsuleManifest)

/** Parses `text`, expecting a manifest that also satisfies its own Schema. */
const ok = (text: string, options?: Parameters<typeof parseManifest>[1]): ParsedManifest => {
  const result = parseManifest(text, options)
  if (Either.isLeft(result)) assert.fail(`expected a manifest, got ${result.left.code}: ${result.left.message}`)
  assert.isTrue(isCapsuleManifest(result.right.manifest), "the parsed manifest conforms to CapsuleManifest")
  return result.right
}

const refusal = (text: string) => {
  const result = parseManifest(text)
  if (Either.isRight(result)) assert.fail(`expected a refusal, got ${JSON.stringify(result.right)}`)
  return { code: result.left.code, message: result.left.message }
}

/** A capsule with one artifact entry whose body is `lines` (indented under `- `). */
const withArtifact = (...lines: Array<string>) =>
  `${HEAD}artifacts:\n  - ${lines.join("\n    ")}\n`

const withCapabilities = (body: string) => `${HEAD}capabilities:\n${body.replace(/^/gm, "  ")}\n`

const capErr = (field: string, message: string) => ({
  code: "E-MAN-003",
  message: `murmur.yaml: invalid capability config for '${field}': ${message}`
})
const artErr = (index: number, message: string) => ({
  code: "E-MAN-003",
  message: `murmur.yaml: invalid artifact declaration at index ${index}: ${message}`
})
const syntax = (line: number, column: number, detail: string) => ({
  code: "E-MAN-002",
  message: `murmur.yaml: YAML syntax error at line ${line}, column ${column}: ${detail} at line ${line} column ${column}`
})

describe("parseManifest: accepted manifests and defaults", () => {
  it("a minimal manifest: identity, no artifacts, an empty ceiling, no warnings", () => {
    const { manifest, warnings } = ok(HEAD)
    assert.deepStrictEqual(manifest, { name: "demo", version: "0.1.0", artifacts: [], capabilities: {} })
    assert.deepStrictEqual(warnings, [])
    assert.isFalse(isAgentCapsule(manifest))
    assert.deepStrictEqual(effectiveLimits(manifest.capabilities), DEFAULT_LIMITS)
  })

  it("plain scalars keep their source text where a string is expected (version: 1.0)", () => {
    const { manifest } = ok("name: 42\nversion: 1.0\nmur_version: 0.3.0\n")
    assert.strictEqual(manifest.name, "42")
    assert.strictEqual(manifest.version, "1.0")
    assert.strictEqual(manifest.murVersion, "0.3.0")
  })

  it("artifact defaults follow the role", () => {
    const { manifest } = ok(`${HEAD}artifacts:
  - name: echo
    version: 1.2.3
  - name: guide
    version: 0.1.0
    runtime: skill
  - name: observer
    version: 0.1.0
    runtime: hook
    on_overflow: block
  - name: provider
    version: 0.1.0
    runtime: driver
    prompt_payload: true
`)
    assert.deepStrictEqual(manifest.artifacts, [
      { name: "echo", version: "1.2.3", runtime: "tool", localSource: false, promptPayload: false, onOverflow: "drop" },
      { name: "guide", version: "0.1.0", runtime: "skill", localSource: true, promptPayload: true, onOverflow: "drop" },
      { name: "observer", version: "0.1.0", runtime: "hook", localSource: false, promptPayload: false, onOverflow: "block" },
      { name: "provider", version: "0.1.0", runtime: "driver", localSource: false, promptPayload: true, onOverflow: "drop" }
    ])
  })

  it("source: resolves as version 'local' and warns when a version was also given", () => {
    const { manifest, warnings } = ok(withArtifact("name: notes", "runtime: skill", "source: ./skills/notes", "version: 2.0.0"))
    assert.strictEqual(manifest.artifacts[0]!.version, "local")
    assert.strictEqual(manifest.artifacts[0]!.source, "./skills/notes")
    assert.deepStrictEqual(warnings, [{
      code: "W-LOCAL-SOURCE",
      message: "warning: artifact 'notes' declares both 'source:' and 'version: 2.0.0'; version is ignored for local-source skills (using 'local')",
      path: "artifacts[0].version"
    }])
    const tool = ok(withArtifact("name: echo", "source: ./echo", "local_source: true")).manifest.artifacts[0]!
    assert.strictEqual(tool.version, "local")
    assert.isTrue(tool.localSource)
  })

  it("limits: an empty block takes every default; an explicit deadline applies to hooks too", () => {
    assert.deepStrictEqual(ok(withCapabilities("limits: {}")).manifest.capabilities.limits, {
      memoryBytes: 536870912,
      tableElements: 100000,
      instances: 1000,
      deadlineSeconds: 600,
      hookDeadlineSeconds: 30
    })
    assert.deepStrictEqual(
      ok(withCapabilities("limits:\n  memory_bytes: 0x1000000\n  deadline_seconds: 5")).manifest.capabilities.limits,
      { memoryBytes: 16777216, tableElements: 100000, instances: 1000, deadlineSeconds: 5, hookDeadlineSeconds: 5 }
    )
  })

  it("the capsule-wide ceiling, every block", () => {
    const { manifest, warnings } = ok(withCapabilities(`network:
  allow: ["HTTPS://API.Example.com", "localhost:8080", " host-with-space "]
peer_fetch:
  allow: [localhost:41234, "https://peer.example.com/"]
filesystem:
  scope: "  ./data  "
  read_only: [" docs ", "", "src/generated"]
shell:
  allow: [bash, python3, git]
  strip_env: [AWS_*]
  interpreter_runtime:
    - binary: python3
      dirs:
        - path: /usr/lib/python3.11
          list_dir: true
  staged_runtime:
    - binary: git
      source_path: /opt/git
      pin: " git-2.43 "
  max_output_bytes: 1048576
spawn:
  allow: [helper]
env:
  allow: [MY_REGION]
resources:
  cpu_seconds: 60
  cgroup_cpu_percent: 50
state: { store: " notes " }
conversation: { read: false }
plan: { submit: true }
containment: " sealed "`))
    // Every key not acted on is named (./ManifestKeys.test.ts walks them all); none is refused.
    assert.deepStrictEqual(warnings.map((w) => [w.code, w.path]), [
      ["W-RUN-001", "capabilities.resources.cgroup_cpu_percent"],
      ["W-RUN-001", "capabilities.state"],
      ["W-RUN-001", "capabilities.conversation"]
    ])
    assert.deepStrictEqual(manifest.capabilities, {
      network: { allow: ["HTTPS://API.Example.com", "localhost:8080", " host-with-space "], unixSockets: false },
      peerFetch: { allow: ["localhost:41234", "https://peer.example.com/"] },
      filesystem: { scope: "./data", workdirExec: false, readOnly: ["docs", "src/generated"] },
      shell: {
        allow: ["bash", "python3", "git"],
        stripEnv: ["AWS_*"],
        baselineEnv: [],
        interpreterRuntime: [{ binary: "python3", dirs: [{ path: "/usr/lib/python3.11", listDir: true }] }],
        stagedRuntime: [{ binary: "git", sourcePath: "/opt/git", pin: "git-2.43" }],
        maxOutputBytes: 1048576
      },
      spawn: { allow: ["helper"] },
      env: { allow: ["MY_REGION"] },
      resources: { cpu_seconds: 60, cgroup_cpu_percent: 50 },
      state: { store: "notes" },
      conversation: { read: false },
      plan: { submit: true },
      containment: "sealed"
    })
  })

  it("null blocks and values read as absent (serde's Option), an empty containment as none", () => {
    const { manifest } = ok(`${HEAD}artifacts:\ncapabilities:\n  network:\n  shell:\n  containment: "  "\ninference:\n`)
    assert.deepStrictEqual(manifest.artifacts, [])
    assert.deepStrictEqual(manifest.capabilities, {})
    assert.isFalse(isAgentCapsule(manifest))
  })

  it("per-artifact grants and task_io / conversation on a hook", () => {
    const { manifest } = ok(`${HEAD}artifacts:
  - name: gate
    version: 0.1.0
    runtime: hook
    capabilities:
      network: { allow: ["https://telemetry.example.com"] }
      filesystem: { scope: hook-state }
      task_io: { read: true }
      conversation: { read: true }
`)
    assert.deepStrictEqual(manifest.artifacts[0]!.capabilities, {
      network: { allow: ["https://telemetry.example.com"], unixSockets: false },
      filesystem: { scope: "hook-state", workdirExec: false, readOnly: [] },
      taskIo: { read: true },
      conversation: { read: true }
    })
  })

  it("config: compact JSON in declaration order, integer-like keys included", () => {
    const { manifest } = ok(withArtifact(
      "name: corpus",
      "version: 0.1.0",
      "config:",
      "  b: 1",
      "  a: [1, 2.5, true, null, \"x\"]",
      "  '10': { nested: { deep: yes } }"
    ))
    assert.strictEqual(manifest.artifacts[0]!.configJson, "{\"b\":1,\"a\":[1,2.5,true,null,\"x\"],\"10\":{\"nested\":{\"deep\":\"yes\"}}}")
    assert.strictEqual(ok(withArtifact("name: t", "version: 1", "config: {}")).manifest.artifacts[0]!.configJson, "{}")
  })

  it("config: exactly 65536 bytes of JSON is accepted", () => {
    const blob = "x".repeat(65536 - 11)
    const { manifest } = ok(withArtifact("name: t", "version: 1", `config: { blob: ${blob} }`))
    assert.strictEqual(manifest.artifacts[0]!.configJson!.length, 65536)
  })

  it("the agent blocks are typed (the whole 0.3 manifest is covered in ManifestAgent.test.ts)", () => {
    const { manifest, warnings } = ok(`${HEAD}artifacts: [{ name: d, version: 1, runtime: driver }]
inference:
  endpoint: https://api.example.com
  model: m
  driver: { artifact: d, config: { anything: [1] } }
lifecycle: { task_acceptance: queue, delegation_deadline_secs: 60 }
context: { max_tokens: 1000 }
trace: { capture: content }
network: { internal_port: 14159 }
`)
    assert.deepStrictEqual(warnings.map((w) => [w.code, w.path]), [])
    assert.isTrue(isAgentCapsule(manifest))
    assert.deepStrictEqual(manifest.inference?.driver, { artifact: "d", configJson: "{\"anything\":[1]}" })
    assert.strictEqual(manifest.lifecycle?.taskAcceptance, "queue")
    assert.strictEqual(manifest.lifecycle?.delegationDeadlineSecs, 60)
    assert.deepStrictEqual(manifest.network, { internalPort: 14159 })
    assert.strictEqual(manifest.trace?.capture, "content")
  })

  it("records the path it was given on a refusal, never in the message", () => {
    const result = parseManifest("version: 1\n", { path: "/capsules/demo/murmur.yaml" })
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) {
      assert.strictEqual(result.left.path, "/capsules/demo/murmur.yaml")
      assert.strictEqual(result.left.message, "murmur.yaml: missing required field 'name'")
      assert.strictEqual(result.left._tag, "ManifestError")
    }
  })
})

describe("parseManifest: W-SEC-019 for unrecognized keys", () => {
  const LINK = "https://docs.murmur.nexus/murmur-nexus/murmur/reference/diagnostics/#w-sec-019"
  const typo = (key: string, where: string, nearest: string) =>
    `unrecognized key '${key}' ${where} — did you mean '${nearest}'? The manifest has a spelling problem here: the key was parsed and ignored, so whatever it declared is not in effect. Correct it in murmur.yaml (${LINK})`
  const newer = (key: string, where: string) =>
    `unrecognized key '${key}' ${where} — this build of mur does not recognize it and no key it does recognize there is close to it, so the key may come from a newer mur. It was parsed and ignored; nothing here says the manifest is misspelled (${LINK})`

  it("names every unknown key by path, block by block, without refusing", () => {
    const { manifest, warnings } = ok(`${HEAD}quantum_teleport: true
artifacts:
  - name: echo
    version: 1.0.0
    runtme: tool
    capabilities:
      shell: { alow: [bash], allow: [bash] }
capabilities:
  filesystem:
    read-only: [docs]
  zeta: 1
  alpha: 2
inference: { endpoint: "https://x", model: x, modle: y, driver: { artifact: echo, confg: {} } }
lifecycle: { after_tsk: sleep }
`.replace("runtme: tool", "runtime: driver\n    runtme: tool"))
    assert.strictEqual(manifest.artifacts[0]!.runtime, "driver")
    assert.deepStrictEqual(warnings.filter((w) => w.code === "W-SEC-008").map((w) => w.path), ["artifacts[0].capabilities.shell"])
    assert.deepStrictEqual(warnings.filter((w) => w.code !== "W-SEC-008").map((w) => [w.code, w.path]), [
      ["W-SEC-019", "quantum_teleport"],
      ["W-SEC-019", "artifacts[0].runtme"],
      ["W-SEC-019", "artifacts[0].capabilities.shell.alow"],
      ["W-SEC-019", "capabilities.alpha"],
      ["W-SEC-019", "capabilities.zeta"],
      ["W-SEC-019", "capabilities.filesystem.read-only"],
      ["W-SEC-019", "inference.modle"],
      ["W-SEC-019", "inference.driver.confg"],
      ["W-SEC-019", "lifecycle.after_tsk"]
    ])
    assert.strictEqual(warnings[0]!.message, newer("quantum_teleport", "at the top level"))
    assert.strictEqual(warnings[1]!.message, typo("runtme", "in artifacts[0]", "runtime"))
    assert.strictEqual(warnings[2]!.message, typo("alow", "in artifacts[0].capabilities.shell", "allow"))
    assert.strictEqual(warnings[5]!.message, typo("read-only", "in capabilities.filesystem", "read_only"))
    assert.strictEqual(warnings[8]!.message, typo("after_tsk", "in lifecycle", "after_task"))
  })

  it("adds the stale-runtime line when mur_version pins a newer release", () => {
    const text = `${HEAD}mur_version: 9.0.0\nfuture_a: 1\nfuture_b: 2\n`
    const { warnings } = ok(text, { runningVersion: "0.3.0" })
    assert.strictEqual(warnings.length, 3)
    assert.strictEqual(
      warnings[2]!.message,
      `this manifest pins mur 9.0.0, you are running 0.3.0; 2 keys in it are not recognized by this build (${LINK})`
    )
    assert.strictEqual(ok(text, { runningVersion: "9.0.0" }).warnings.length, 2)
    assert.strictEqual(ok(text).warnings.length, 2)
  })

  it("suggests by optimal-string-alignment distance within a third of the key", () => {
    assert.strictEqual(editDistance("allwo", "allow"), 1)
    assert.strictEqual(editDistance("read-only", "read_only"), 1)
    assert.strictEqual(editDistance("", "abc"), 3)
    assert.strictEqual(nearestKnownKey("read-only", ["scope", "workdir_exec", "read_only"]), "read_only")
    assert.isUndefined(nearestKnownKey("quantum_teleport", ["name", "version", "artifacts", "capabilities"]))
  })
})

type Bad = readonly [title: string, text: string, expected: { readonly code: string; readonly message: string }]

const badManifests: ReadonlyArray<Bad> = [
  // YAML syntax and YAML types (E-MAN-002)
  ["duplicate key", "name: a\nname: b\n", syntax(2, 1, "Map keys must be unique")],
  ["unterminated quote", "name: \"a\nversion: 1\n", syntax(3, 1, "Missing closing \"quote")],
  ["root is a sequence", "- a\n", syntax(1, 1, "invalid type: sequence, expected a mapping")],
  ["name is a sequence", "name: [a]\n", syntax(1, 7, "name: invalid type: sequence, expected a string")],
  ["artifact entry is a string", `${HEAD}artifacts:\n  - my-tool\n`, syntax(4, 5, "artifacts[0]: invalid type: string \"my-tool\", expected a mapping")],
  ["capabilities is a sequence", `${HEAD}capabilities: []\n`, syntax(3, 15, "capabilities: invalid type: sequence, expected a mapping")],
  ["bool given a string", withCapabilities("network:\n  unix_sockets: \"yes\""), syntax(5, 19, "capabilities.network.unix_sockets: invalid type: string \"yes\", expected a boolean")],
  ["list given an integer", withCapabilities("network:\n  allow: 5"), syntax(5, 12, "capabilities.network.allow: invalid type: integer `5`, expected a sequence")],
  ["null list item", withCapabilities("shell:\n  allow: [bash, ~]"), syntax(5, 19, "capabilities.shell.allow[1]: invalid type: unit value, expected a string")],
  ["negative limit", withCapabilities("limits:\n  instances: -1"), syntax(5, 16, "capabilities.limits.instances: invalid value: integer `-1`, expected usize")],
  ["fractional limit", withCapabilities("limits:\n  instances: 1.5"), syntax(5, 16, "capabilities.limits.instances: invalid type: floating point `1.5`, expected usize")],
  ["quoted limit", withCapabilities("limits:\n  deadline_seconds: \"5\""), syntax(5, 23, "capabilities.limits.deadline_seconds: invalid type: string \"5\", expected u64")],
  ["u32 overflow", withCapabilities("resources:\n  cgroup_cpu_percent: 4294967296"), syntax(5, 25, "capabilities.resources.cgroup_cpu_percent: invalid value: integer `4294967296`, expected u32")],
  ["unknown anchor", `${HEAD}extra: *nope\n`, syntax(3, 8, "unknown anchor 'nope'")],
  ["self-nesting alias", `${HEAD}extra: &a [*a]\n`, syntax(3, 12, "recursion limit exceeded")],
  // identity (E-MAN-001)
  ["empty document", "", { code: "E-MAN-001", message: "murmur.yaml: missing required field 'name'" }],
  ["missing name", "version: 1\n", { code: "E-MAN-001", message: "murmur.yaml: missing required field 'name'" }],
  ["blank name", "name: '  '\nversion: 1\n", { code: "E-MAN-001", message: "murmur.yaml: missing required field 'name'" }],
  ["missing version", "name: a\n", { code: "E-MAN-001", message: "murmur.yaml: missing required field 'version'" }],
  ["null version", "name: a\nversion: ~\n", { code: "E-MAN-001", message: "murmur.yaml: missing required field 'version'" }],
  // artifacts[] (E-MAN-003)
  ["artifact without name", withArtifact("version: 1"), artErr(0, "missing required field 'name'")],
  ["second artifact without version", `${HEAD}artifacts:\n  - { name: a, version: 1 }\n  - { name: b }\n`, artErr(1, "missing required field 'version'")],
  ["runtime: wasm", withArtifact("name: t", "version: 1", "runtime: wasm"), artErr(0, "use 'runtime: tool'; implementation is declared in the artifact's own manifest (got 'wasm')")],
  ["runtime: native", withArtifact("name: t", "version: 1", "runtime: native"), artErr(0, "use 'runtime: tool'; implementation is declared in the artifact's own manifest (got 'native')")],
  ["unknown runtime", withArtifact("name: t", "version: 1", "runtime: capsule"), artErr(0, "unknown runtime 'capsule'; expected one of: tool, driver, hook, skill")],
  ["source without local_source", withArtifact("name: t", "source: ./t", "runtime: driver"), artErr(0, "artifact 't' declares 'source:' but does not declare 'local_source: true' (runtime: driver)")],
  ["skill opting out of local_source", withArtifact("name: s", "source: ./s", "runtime: skill", "local_source: false"), artErr(0, "artifact 's' declares 'source:' but does not declare 'local_source: true' (runtime: skill)")],
  ["capabilities on a skill", withArtifact("name: s", "version: 1", "runtime: skill", "capabilities: { network: { allow: [] } }"), artErr(0, "artifact 's' declares per-artifact 'capabilities:' but has 'runtime: skill'; per-artifact capabilities are only recognized on 'runtime: hook', 'runtime: tool', and 'runtime: driver' entries — use the capsule-wide top-level 'capabilities:' block instead")],
  ["task_io on a tool", withArtifact("name: t", "version: 1", "capabilities: { task_io: { read: true } }"), artErr(0, "artifact 't' declares 'capabilities.task_io:' but has 'runtime: tool'; the key grants the murmur:task-io/read host import and is only recognized on 'runtime: hook' entries")],
  ["conversation on a driver", withArtifact("name: d", "version: 1", "runtime: driver", "capabilities: { conversation: { read: true } }"), artErr(0, "artifact 'd' declares 'capabilities.conversation:' but has 'runtime: driver'; the key grants the murmur:conversation/read host import and is only recognized on 'runtime: hook' entries")],
  ["on_overflow on a tool", withArtifact("name: t", "version: 1", "on_overflow: block"), artErr(0, "artifact 't' declares 'on_overflow:' but has 'runtime: tool'; the key governs an async hook's job queue and is only recognized on 'runtime: hook' entries")],
  ["unknown on_overflow", withArtifact("name: h", "version: 1", "runtime: hook", "on_overflow: wait"), artErr(0, "artifact 'h' declares unknown on_overflow 'wait'; expected: drop, block")],
  ["config on a skill", withArtifact("name: s", "version: 1", "runtime: skill", "config: { a: 1 }"), artErr(0, "artifact 's' declares 'config:' but has 'runtime: skill'; the key is recognized only on 'runtime: hook', 'runtime: tool', and 'runtime: driver' entries")],
  // capabilities (E-MAN-003)
  ["capsule-wide task_io", withCapabilities("task_io: { read: true }"), capErr("capabilities.task_io", "is recognized only on 'runtime: hook' artifact entries, not in the capsule-wide capabilities block — the grant is per-hook")],
  ["top-level config", `${HEAD}config: { a: 1 }\n`, capErr("config", "is declared per artifact, on the 'runtime: hook', 'runtime: tool' or 'runtime: driver' entry that reads it — there is no capsule-wide config block")],
  ["empty shell allow", withCapabilities("shell: { allow: [] }"), capErr("capabilities.shell.allow", "must contain at least one binary")],
  ["shell block without allow", withCapabilities("shell: { strip_env: [X] }"), capErr("capabilities.shell.allow", "must contain at least one binary")],
  ["zero shell max_output_bytes", withCapabilities("shell: { allow: [sh], max_output_bytes: 0 }"), capErr("capabilities.shell.max_output_bytes", "must be greater than zero")],
  ["zero memory_bytes", withCapabilities("limits: { memory_bytes: 0 }"), capErr("capabilities.limits.memory_bytes", "must be greater than zero")],
  ["zero table_elements", withCapabilities("limits: { table_elements: 0 }"), capErr("capabilities.limits.table_elements", "must be greater than zero")],
  ["zero instances", withCapabilities("limits: { instances: 0 }"), capErr("capabilities.limits.instances", "must be greater than zero")],
  ["zero deadline", withCapabilities("limits: { deadline_seconds: 0 }"), capErr("capabilities.limits.deadline_seconds", "must be greater than zero")],
  ["zero cgroup_cpu_percent", withCapabilities("resources: { cgroup_cpu_percent: 0 }"), capErr("capabilities.resources.cgroup_cpu_percent", "must be greater than zero")],
  ["zero workdir_max_bytes", withCapabilities("resources: { workdir_max_bytes: 0 }"), capErr("capabilities.resources.workdir_max_bytes", "must be greater than zero")],
  ["per-artifact zero limit", withArtifact("name: t", "version: 1", "capabilities: { limits: { instances: 0 } }"), capErr("capabilities.limits.instances", "must be greater than zero")],
  ["unknown containment", withCapabilities("containment: strict"), capErr("capabilities.containment", "must be one of: advisory, scoped, sealed; got 'strict'")],
  ["empty peer_fetch", withCapabilities("peer_fetch: { allow: [] }"), capErr("capabilities.peer_fetch.allow", "must be a non-empty list of network destinations")],
  ["peer_fetch scheme", withCapabilities("peer_fetch: { allow: [\"ftp://peer\"] }"), capErr("capabilities.peer_fetch.allow", "'ftp://peer' has unsupported scheme 'ftp' (expected http or https); must be a non-empty list of network destinations")],
  ["peer_fetch path", withCapabilities("peer_fetch: { allow: [\"https://peer/x\"] }"), capErr("capabilities.peer_fetch.allow", "'https://peer/x' must not include a path, query or fragment; must be a non-empty list of network destinations")],
  ["peer_fetch port", withCapabilities("peer_fetch: { allow: [\"peer:http\"] }"), capErr("capabilities.peer_fetch.allow", "'peer:http' has an unparseable port 'http'; must be a non-empty list of network destinations")],
  ["task_io without read", withArtifact("name: h", "version: 1", "runtime: hook", "capabilities: { task_io: {} }"), capErr("capabilities.task_io.read", "must be set explicitly to true or false — a capability is never inferred")],
  ["plan without submit", withCapabilities("plan: {}"), capErr("capabilities.plan.submit", "must be set explicitly to true or false — a capability is never inferred")],
  ["interpreter binary not allowed", withCapabilities("shell:\n  allow: [bash]\n  interpreter_runtime: [{ binary: python3, dirs: [{ path: /usr/lib, list_dir: true }] }]"), capErr("capabilities.shell.interpreter_runtime[0].binary", "'python3' is not in capabilities.shell.allow — interpreter_runtime can only narrow filesystem access for an already-allowlisted binary, never grant exec")],
  ["interpreter without dirs", withCapabilities("shell:\n  allow: [python3]\n  interpreter_runtime: [{ binary: python3 }]"), capErr("capabilities.shell.interpreter_runtime[0].dirs", "must name at least one directory")],
  ["interpreter relative dir", withCapabilities("shell:\n  allow: [python3]\n  interpreter_runtime: [{ binary: python3, dirs: [{ path: lib, list_dir: true }] }]"), capErr("capabilities.shell.interpreter_runtime[0].dirs[0].path", "'lib' must be an absolute host path (start with '/') — these are filesystem paths outside the workdir")],
  ["interpreter list_dir omitted", withCapabilities("shell:\n  allow: [python3]\n  interpreter_runtime: [{ binary: python3, dirs: [{ path: /usr/lib }] }]"), capErr("capabilities.shell.interpreter_runtime[0].dirs[0].list_dir", "'/usr/lib' must set list_dir explicitly to true or false — enumerability is never inferred")],
  ["staged without pin", withCapabilities("shell:\n  allow: [git]\n  staged_runtime: [{ binary: git, source_path: /opt/git }]"), capErr("capabilities.shell.staged_runtime[0].pin", "'/opt/git' must declare a non-empty pin identifying which build this tree is — it is never inferred, because it is the value a human compares across two hosts to confirm the same runtime shipped to both")],
  ["staged relative source", withCapabilities("shell:\n  allow: [git]\n  staged_runtime: [{ binary: git, source_path: opt/git, pin: p }]"), capErr("capabilities.shell.staged_runtime[0].source_path", "'opt/git' must be an absolute host path (start with '/') — staged-runtime sources are host filesystem paths outside the workdir")],
  // launch-time grant shapes (E-CAP-001, E-CAP-002)
  ["empty network allow entry", withCapabilities("network: { allow: [\"https://a.example\", \"\"] }"), { code: "E-CAP-001", message: "invalid network capability allow entry '': entry must not be empty" }],
  ["blank per-artifact allow entry", withArtifact("name: t", "version: 1", "capabilities: { network: { allow: [\"  \"] } }"), { code: "E-CAP-001", message: "invalid network capability allow entry '  ': entry must not be empty" }],
  ["absolute scope", withCapabilities("filesystem: { scope: /tmp }"), { code: "E-CAP-002", message: "invalid filesystem capability scope '/tmp': scope must be relative to the workdir" }],
  ["escaping scope", withCapabilities("filesystem: { scope: ../x }"), { code: "E-CAP-002", message: "invalid filesystem capability scope '../x': scope cannot escape the workdir via '..'" }],
  ["escaping after descent", withCapabilities("filesystem: { scope: a/../../b }"), { code: "E-CAP-002", message: "invalid filesystem capability scope 'a/../../b': scope cannot escape the workdir via '..'" }],
  ["per-artifact escaping scope", withArtifact("name: h", "version: 1", "runtime: hook", "capabilities: { filesystem: { scope: ../../etc } }"), { code: "E-CAP-002", message: "invalid filesystem capability scope '../../etc': scope cannot escape the workdir via '..'" }],
  // config (E-CAP-010)
  ...(
    [
      ["7", "a number"],
      ["[a, b]", "a sequence"],
      ["", "an empty block"],
      ["'literal'", "a string"],
      ["true", "a boolean"]
    ] as const
  ).map(([value, shape]): Bad => [
    `config given ${shape}`,
    withArtifact("name: config-echo", "version: 1", `config: ${value}`),
    { code: "E-CAP-010", message: `invalid config for artifact 'config-echo': 'config:' must be a mapping of keys to values, but this entry declares ${shape}` }
  ]),
  ["config integer key", withArtifact("name: t", "version: 1", "config: { 1: x }"), { code: "E-CAP-010", message: "invalid config for artifact 't': every key in 'config:' must be a string, but this entry declares a number key 1" }],
  ["config null key", withArtifact("name: t", "version: 1", "config: { ~: x }"), { code: "E-CAP-010", message: "invalid config for artifact 't': every key in 'config:' must be a string, but this entry declares an empty block key null" }],
  ["config oversized", withArtifact("name: t", "version: 1", `config: { blob: ${"x".repeat(70000)} }`), { code: "E-CAP-010", message: "invalid config for artifact 't': 'config:' serializes to 70011 bytes of JSON, over the 65536-byte limit for MURMUR_ARTIFACT_CONFIG" }]
]

describe("parseManifest: refusals, exact texts", () => {
  for (const [title, text, expected] of badManifests) {
    it(title, () => {
      assert.deepStrictEqual(refusal(text), expected)
    })
  }

  it("checks in the reference's order: types, identity, artifacts, capabilities", () => {
    assert.strictEqual(refusal("capabilities: { limits: { instances: x } }\n").code, "E-MAN-002")
    assert.deepStrictEqual(refusal(`version: 1\nartifacts: [{ runtime: wasm }]\n`).code, "E-MAN-001")
    assert.deepStrictEqual(
      refusal(`${HEAD}artifacts: [{ runtime: wasm }]\ncapabilities: { limits: { instances: 0 } }\n`),
      artErr(0, "missing required field 'name'")
    )
    assert.deepStrictEqual(
      refusal(`${HEAD}artifacts: [{ name: t, version: 1, config: 7 }]\ncapabilities: { limits: { instances: 0 } }\n`),
      capErr("capabilities.limits.instances", "must be greater than zero")
    )
  })
})

describe("parseManifest: never throws", () => {
  const tokens = fc.constantFrom(
    "name:", "version:", "artifacts:", "capabilities:", "network:", "allow:", "shell:", "limits:", "config:",
    "filesystem:", "scope:", "inference:", "runtime:", "- ", "  ", "\n", ":", "[", "]", "{", "}", ",", "&a ", "*a",
    "'", "\"", "~", "0", "-1", "1.5", "true", "wasm", "skill", "../x", "#", "? ", "!!str ", "|", ">", "\t", "<<: "
  )
  const soup = fc.array(tokens, { maxLength: 60 }).map((parts) => parts.join(""))
  const scalar = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null))
  const value = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.string(), scalar, { maxKeys: 3 }))
  const structured = fc.record({
    name: value,
    version: value,
    artifacts: fc.oneof(value, fc.array(fc.record({ name: value, version: value, runtime: fc.oneof(value, fc.constantFrom("tool", "hook", "skill", "wasm")), source: value, capabilities: value, config: value, on_overflow: value }, { requiredKeys: [] }), { maxLength: 3 })),
    capabilities: fc.oneof(value, fc.record({ network: value, filesystem: value, shell: value, limits: value, resources: value, containment: value, peer_fetch: value, plan: value }, { requiredKeys: [] })),
    inference: value,
    config: value
  }, { requiredKeys: [] }).map((doc) => stringify(doc))

  it("returns Left or Right for any text (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), soup, structured, fc.anything().map((x) => stringify(x))), (text) => {
        const result = parseManifest(text)
        assert.isTrue(Either.isLeft(result) || Either.isRight(result))
        if (Either.isLeft(result)) assert.match(result.left.code, /^E-(MAN|CAP)-\d{3}$/)
      }),
      { numRuns: 600 }
    )
  })

  it("bounds alias fan-out and nesting instead of hanging or overflowing", () => {
    let levels = "      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
    for (let i = 1; i < 10; i++) levels += `      l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(", ")}]\n`
    const driverBomb = `${HEAD}artifacts: [{ name: d, version: 1, runtime: driver }]\ninference:\n  endpoint: https://x\n  model: m\n  driver:\n    artifact: d\n    config:\n${levels}`
    assert.strictEqual(refusal(driverBomb).code, "E-MAN-002")
    assert.strictEqual(refusal(`${HEAD}artifacts:\n  - name: t\n    version: 1\n    config:\n${levels}`).code, "E-MAN-002")
    assert.strictEqual(refusal("[".repeat(20_000)).code, "E-MAN-002")
  })
})

describe("parseArtifactManifest (§1.4)", () => {
  const art = (text: string) => {
    const result = parseArtifactManifest(text)
    if (Either.isLeft(result)) assert.fail(`${result.left.code}: ${result.left.message}`)
    assert.isTrue(Schema.is(ArtifactManifest)(result.right))
    return result.right
  }
  const artRefusal = (text: string) => {
    const result = parseArtifactManifest(text)
    if (Either.isRight(result)) assert.fail(`expected a refusal, got ${JSON.stringify(result.right)}`)
    return { code: result.left.code, message: result.left.message }
  }

  it("a fixture's manifest with the legacy runtime: wasm", () => {
    assert.deepStrictEqual(art("name: echo-tool\nversion: 0.0.1\nruntime: wasm\ndescription: Echoes\ninput_schema: '{\"type\":\"object\"}'\ntags: [demo, 3]\n"), {
      name: "echo-tool",
      version: "0.0.1",
      runtime: "wasm",
      implementation: "wasm",
      packaging: "wasm",
      requiresFiles: [],
      description: "Echoes",
      tags: ["demo"],
      inputSchema: { type: "object" }
    })
  })

  it("derives packaging, honours execution case-insensitively, defaults requires_files for skills", () => {
    const skill = art("name: guide\nversion: 0.1.0\nruntime: skill\n")
    assert.strictEqual(skill.packaging, "static")
    assert.deepStrictEqual(skill.requiresFiles, ["skill.md"])
    assert.deepStrictEqual(art("name: g\nversion: 0.1.0\nruntime: skill\nrequires_files: []\n").requiresFiles, [])
    assert.strictEqual(art("name: n\nversion: 0.1.0\nruntime: tool\nimplementation: native\n").packaging, "native")
    const declared = art("name: n\nversion: 0.1.0\nruntime: tool\nimplementation: native\nexecution: Static\n")
    assert.strictEqual(declared.execution, "static")
    assert.strictEqual(declared.packaging, "static")
  })

  it("reads input (alias), output_schema, hook contract fields and inference_auth", () => {
    const driver = art(`name: d\nversion: 0.1.0\nruntime: driver\ninput: { type: object }\noutput_schema: { type: string }\ninference_auth: { header: x-api-key, value: "{key}" }\n`)
    assert.deepStrictEqual(driver.inputSchema, { type: "object" })
    assert.deepStrictEqual(driver.outputSchema, { type: "string" })
    assert.deepStrictEqual(driver.inferenceAuth, { header: "x-api-key", value: "{key}" })
    const hook = art("name: h\nversion: 0.1.0\nruntime: hook\nbinding: on-shell\nexecution_mode: blocking\ncommit_policy: deny\n")
    assert.strictEqual(hook.binding, "on-shell")
    assert.strictEqual(hook.executionMode, "blocking")
    assert.strictEqual(hook.commitPolicy, "deny")
  })

  const bad: ReadonlyArray<readonly [string, string, string, string]> = [
    ["missing name", "version: 1.0.0\nruntime: tool\n", "E-MAN-001", "murmur.yaml: missing required field 'name'"],
    ["missing version", "name: a\nruntime: tool\n", "E-MAN-001", "murmur.yaml: missing required field 'version'"],
    ["missing runtime", "name: a\nversion: 0.1.0\n", "E-MAN-001", "murmur.yaml: missing required field 'runtime'"],
    ["numeric version", "name: a\nversion: 1.0\nruntime: tool\n", "E-MAN-003", "murmur.yaml: field 'version' has invalid type (expected string, got number)"],
    ["root sequence", "- a\n", "E-MAN-003", "murmur.yaml: field '<root>' has invalid type (expected mapping, got sequence)"],
    ["empty document", "", "E-MAN-003", "murmur.yaml: field '<root>' has invalid type (expected mapping, got null)"],
    ["bad execution", "name: a\nversion: 0.1.0\nruntime: tool\nexecution: docker\n", "E-MAN-003", "murmur.yaml: field 'execution' has invalid type (expected one of: wasm, native, static, got docker)"],
    ["requires_files scalar", "name: a\nversion: 0.1.0\nruntime: tool\nrequires_files: a.txt\n", "E-MAN-003", "murmur.yaml: field 'requires_files' has invalid type (expected sequence of strings, got string)"],
    ["inference_auth scalar", "name: a\nversion: 0.1.0\nruntime: driver\ninference_auth: x\n", "E-MAN-003", "murmur.yaml: field 'inference_auth' has invalid type (expected mapping, got string)"],
    ["inference_auth without header", "name: a\nversion: 0.1.0\nruntime: driver\ninference_auth: { value: \"{key}\" }\n", "E-MAN-001", "murmur.yaml: missing required field 'inference_auth.header'"],
    ["inference_auth bad header", "name: a\nversion: 0.1.0\nruntime: driver\ninference_auth: { header: \"x key\", value: \"{key}\" }\n", "E-MAN-003", "murmur.yaml: field 'inference_auth.header' 'x key' is not a valid HTTP header name"],
    ["inference_auth no placeholder", "name: a\nversion: 0.1.0\nruntime: driver\ninference_auth: { header: Authorization, value: Bearer }\n", "E-MAN-003", "murmur.yaml: field 'inference_auth.value' must contain {key} exactly once (found 0)"],
    ["syntax", "name: a\nname: b\n", "E-MAN-002", "murmur.yaml: YAML syntax error at line 2, column 1: Map keys must be unique at line 2 column 1"]
  ]
  for (const [title, text, code, message] of bad) {
    it(`refuses: ${title}`, () => {
      assert.deepStrictEqual(artRefusal(text), { code, message })
    })
  }

  it("never throws (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.anything().map((x) => stringify(x))), (text) => {
        const result = parseArtifactManifest(text)
        assert.isTrue(Either.isLeft(result) || Either.isRight(result))
      }),
      { numRuns: 300 }
    )
  })
})
