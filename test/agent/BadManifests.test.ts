/**
 * Bad agent manifests through the command line (`npm run build` first): each `murmur.yaml` of the
 * table is refused by `node dist/main.js validate <dir>` (exit 1, `error[CODE]: message` on
 * stderr, nothing on stdout) and, for every third row (one CLI start costs ~1.5 s of CPU, and
 * `run` reads the manifest through the same parser), by `node dist/main.js run <dir> --json`
 * (exit 1, one exit event carrying the same code and text, no listening line, no workdir). The codes and texts are the
 * reference's (spec §1.5; src/project/manifest/*.ts), byte for byte, covering the inference,
 * lifecycle, capabilities and artifacts blocks. (The parser's own exhaustive table is
 * test/project/ManifestAgent.test.ts; this one checks what the CLI prints for them.)
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCli } from "../lib/CapsuleDirs.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const DRIVER = "  - { name: d, version: 1.0.0, runtime: driver }\n"
const TOOL = "  - { name: echo-tool, version: 0.1.0, runtime: tool }\n"
const INFERENCE: Record<string, string> = { endpoint: "http://127.0.0.1:9/v1", model: "m", driver: "{ artifact: d }" }

/** An agent manifest: `artifacts` entries (the driver `d` and the tool `echo-tool` by default), the inference block with `inference` over its keys, then `extra`. */
const manifest = (options: { readonly artifacts?: string; readonly inference?: Record<string, string | undefined>; readonly extra?: string } = {}) => {
  const inference = Object.entries({ ...INFERENCE, ...options.inference })
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `  ${key}: ${value}\n`)
    .join("")
  return `name: demo\nversion: 0.1.0\nartifacts:\n${options.artifacts ?? DRIVER + TOOL}inference:\n${inference}${options.extra ?? ""}`
}

interface Refusal {
  readonly code: string
  readonly message: string
}

const inf = (field: string, message: string): Refusal => ({ code: "E-MAN-003", message: `murmur.yaml: invalid inference config for '${field}': ${message}` })
const cap = (field: string, message: string): Refusal => ({ code: "E-MAN-003", message: `murmur.yaml: invalid capability config for '${field}': ${message}` })
const art = (index: number, message: string): Refusal => ({ code: "E-MAN-003", message: `murmur.yaml: invalid artifact declaration at index ${index}: ${message}` })

/** E-MAN-002 at the first occurrence of `needle` in `text` (1-based line and column). */
const syntaxAt = (text: string, needle: string, detail: string): Refusal => {
  const offset = text.indexOf(needle)
  if (offset < 0) throw new Error(`'${needle}' is not in the manifest`)
  const before = text.slice(0, offset).split("\n")
  const line = before.length
  const column = before.at(-1)!.length + 1
  return { code: "E-MAN-002", message: `murmur.yaml: YAML syntax error at line ${line}, column ${column}: ${detail} at line ${line} column ${column}` }
}

type Row = readonly [title: string, yaml: string, expected: Refusal]
const typed = (title: string, yaml: string, needle: string, detail: string): Row => [title, yaml, syntaxAt(yaml, needle, detail)]

const NON_LOOPBACK = "use https:// for remote endpoints, or http://localhost or a loopback IP literal for local inference"

const rows: ReadonlyArray<Row> = [
  // inference
  ["inference.max_turns 0", manifest({ inference: { max_turns: "0" } }), inf("inference.max_turns", "must be greater than 0")],
  [
    "inference.endpoint plain http to a remote host",
    manifest({ inference: { endpoint: "http://api.example.com/v1" } }),
    inf("inference.endpoint", `'http://api.example.com/v1' uses plain http:// with non-loopback host 'api.example.com' — ${NON_LOOPBACK}`)
  ],
  ["inference.driver not declared", manifest({ inference: { driver: "{ artifact: ghost }" } }), inf("inference.driver.artifact", "artifact 'ghost' is not declared in artifacts:")],
  [
    "inference.driver naming a tool entry",
    manifest({ inference: { driver: "{ artifact: echo-tool }" } }),
    inf("inference.driver.artifact", "artifact 'echo-tool' (runtime: tool) is not a 'runtime: driver' entry, which inference.driver.artifact requires")
  ],
  [
    "two system prompt sources",
    manifest({ inference: { system_prompt: "Be brief.", system_prompt_file: "prompt.md" } }),
    inf("inference.system_prompt", "at most one of system_prompt, system_prompt_file, system_prompt_artifact may be set")
  ],
  [
    "inference.api_key naming an unset variable",
    manifest({ inference: { api_key: "${CAPSULE_RUNTIME_E2E_UNSET_KEY}" } }),
    { code: "E-MAN-003", message: "murmur.yaml: inference.api_key references ${CAPSULE_RUNTIME_E2E_UNSET_KEY} but the environment variable is not set" }
  ],
  // lifecycle
  typed(
    "lifecycle.task_acceptance unknown",
    manifest({ extra: "lifecycle:\n  task_acceptance: many\n" }),
    "many",
    "lifecycle.task_acceptance: unknown variant `many`, expected one of `none`, `single`, `queue`"
  ),
  typed(
    "lifecycle.input_timeout_secs negative",
    manifest({ extra: "lifecycle:\n  input_timeout_secs: -5\n" }),
    "-5",
    "lifecycle.input_timeout_secs: invalid value: integer `-5`, expected u64"
  ),
  // capabilities
  ["capabilities.shell with an empty allow", manifest({ extra: "capabilities:\n  shell:\n    allow: []\n" }), cap("capabilities.shell.allow", "must contain at least one binary")],
  ["capabilities.limits.deadline_seconds 0", manifest({ extra: "capabilities:\n  limits:\n    deadline_seconds: 0\n" }), cap("capabilities.limits.deadline_seconds", "must be greater than zero")],
  [
    "capabilities.network.allow with an empty entry",
    manifest({ extra: "capabilities:\n  network:\n    allow: ['']\n" }),
    { code: "E-CAP-001", message: "invalid network capability allow entry '': entry must not be empty" }
  ],
  [
    "capabilities.filesystem.scope escaping the workdir",
    manifest({ extra: "capabilities:\n  filesystem:\n    scope: ../outside\n" }),
    { code: "E-CAP-002", message: "invalid filesystem capability scope '../outside': scope cannot escape the workdir via '..'" }
  ],
  [
    "capabilities.containment scoped with an executable workdir",
    manifest({ extra: "capabilities:\n  containment: scoped\n  filesystem:\n    workdir_exec: true\n" }),
    {
      code: "E-CAP-003",
      message: "containment floor 'scoped' cannot be met: capabilities.filesystem.workdir_exec: true makes the workdir executable, which caps containment at advisory on every host; remove workdir_exec or declare containment: advisory"
    }
  ],
  [
    "capabilities.shell.staged_runtime without the sealed floor",
    manifest({ extra: "capabilities:\n  shell:\n    allow: [python3]\n    staged_runtime:\n      - { binary: python3, source_path: /opt/py, pin: '3.11' }\n" }),
    {
      code: "E-CAP-004",
      message: "capabilities.shell.staged_runtime for 'python3' requires capabilities.containment: sealed (declared: advisory) — a staged runtime is bind-mounted into a sealed root, which no weaker class composes"
    }
  ],
  // artifacts
  [
    "artifact runtime: wasm",
    manifest({ artifacts: DRIVER + "  - { name: echo-tool, version: 0.1.0, runtime: wasm }\n" }),
    art(1, "use 'runtime: tool'; implementation is declared in the artifact's own manifest (got 'wasm')")
  ],
  [
    "artifact source without local_source",
    manifest({ artifacts: DRIVER + "  - { name: notes, source: ./notes }\n" }),
    art(1, "artifact 'notes' declares 'source:' but does not declare 'local_source: true' (runtime: tool)")
  ],
  [
    "artifact config that is not a mapping",
    manifest({ artifacts: DRIVER + "  - { name: echo-tool, version: 0.1.0, runtime: tool, config: fast }\n" }),
    { code: "E-CAP-010", message: "invalid config for artifact 'echo-tool': 'config:' must be a mapping of keys to values, but this entry declares a string" }
  ]
]

const capsuleDir = (yaml: string) => {
  const dir = mkdtempSync(join(tmpdir(), "bad-manifest-"))
  dirs.push(dir)
  writeFileSync(join(dir, "murmur.yaml"), yaml)
  return dir
}

describe.concurrent("bad agent manifests: validate and run refuse them with the reference's code and text", () => {
  it("the table holds at least 12 distinct refusals", () => {
    expect(new Set(rows.map(([, , expected]) => expected.message)).size).toBe(rows.length)
    expect(rows.length).toBeGreaterThanOrEqual(12)
  })

  rows.forEach(([title, yaml, expected], index) => {
    it(`${title}: ${expected.code}`, async () => {
      const dir = capsuleDir(yaml)
      const validated = await runCli(["validate", dir])
      expect(validated.code).toBe(1)
      expect(validated.stdout).toBe("")
      // validate reports every problem in one pass: the reference's refusal first, then any other
      // problem it found beside it.
      const errors = validated.stderr.trimEnd().split("\n").filter((line) => line.startsWith("error["))
      expect(errors[0]).toBe(`error[${expected.code}]: ${expected.message}`)
      if (index % 3 !== 0) return

      const run = await runCli(["run", dir, "--json"])
      expect(run.code, run.stderr).toBe(1)
      expect(run.stdout.trimEnd().split("\n").map((line) => JSON.parse(line))).toEqual([
        { event: "exit", status: "failed", error: expected }
      ])
      expect(existsSync(join(dir, "workdir"))).toBe(false)
    })
  })
})
