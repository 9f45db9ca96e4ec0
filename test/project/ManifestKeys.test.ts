/**
 * Nothing in a manifest is accepted silently: the reader's whole key tree (walked from the
 * readers themselves, not from a list kept beside them) is classified in ManifestKeys.ts, and
 * every key classified as warned really earns a warning naming it when declared.
 */
import { existsSync } from "node:fs"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { parseManifest, topLevelSpec } from "../../src/project/Manifest.js"
import { MANIFEST_KEYS, warnedRoots } from "../../src/project/manifest/ManifestKeys.js"
import { shapeOf, type Spec } from "../../src/project/manifest/YamlReader.js"

const walk = (spec: Spec, prefix: string, out: Array<string>) => {
  for (const [key, reader] of Object.entries(spec)) {
    let path = prefix === "" ? key : `${prefix}.${key}`
    let shape = shapeOf(reader)
    if (shape.item !== undefined) {
      path = `${path}[]`
      shape = shapeOf(shape.item)
    }
    out.push(path)
    if (shape.fields !== undefined) walk(shape.fields, path, out)
  }
  return out
}

const ALL_KEYS = walk(topLevelSpec as Spec, "", [])

/** A key counts as classified by its own line, or by an ancestor warned or refused as a whole. */
const dispositionOf = (path: string) => {
  for (let at = path; at !== ""; at = at.slice(0, Math.max(0, at.lastIndexOf(".")))) {
    const line = MANIFEST_KEYS[at]
    if (line !== undefined && (at === path || line.kind !== "enforced")) return line
  }
  return undefined
}

/** A value of the right type for each warned key, and the block it needs around it. */
const SAMPLES: Readonly<Record<string, string>> = {
  "capabilities.resources.cgroup_memory_bytes": "capabilities: { resources: { cgroup_memory_bytes: 1000 } }",
  "capabilities.resources.cgroup_pids_max": "capabilities: { resources: { cgroup_pids_max: 10 } }",
  "capabilities.resources.cgroup_cpu_percent": "capabilities: { resources: { cgroup_cpu_percent: 50 } }",
  "capabilities.resources.cgroup_io_bytes_per_sec": "capabilities: { resources: { cgroup_io_bytes_per_sec: 1000 } }",
  "capabilities.resources.workdir_max_bytes": "capabilities: { resources: { workdir_max_bytes: 1000 } }",
  "capabilities.state": "capabilities: { state: { store: notes } }",
  "capabilities.conversation": "capabilities: { conversation: { read: true } }",
  "capabilities.plan": "capabilities: { plan: { submit: true } }",
  "inference.compaction": "inference: { compaction: { threshold: 0.5 } }",
  "inference.max_session_tokens": "inference: { max_session_tokens: 1000 }",
  "context.max_tokens": "context: { max_tokens: 1000 }",
  "context.seed_budget": "context: { seed_budget: 0.2 }",
  "context.seed_overflow_margin": "context: { seed_overflow_margin: 0.2 }",
  "observability.eval": "observability: { eval: { dataset_id: d, scorers: [{ type: exit_ok }] } }",
  "trace.retain": "trace: { retain: { max_sessions: 3 } }",
  "lifecycle.max_task_reopens": "lifecycle: { max_task_reopens: 2 }"
}

const ENTRY_SAMPLES: Readonly<Record<string, string>> = {
  "network.unix_sockets": "{ network: { unix_sockets: true } }",
  "peer_fetch": "{ peer_fetch: { allow: [localhost:4000] } }",
  "filesystem.workdir_exec": "{ filesystem: { workdir_exec: true } }",
  "filesystem.read_only[]": "{ filesystem: { read_only: [docs] } }",
  "shell": "{ shell: { allow: [echo] } }",
  "spawn": "{ spawn: { allow: [helper] } }",
  "env": "{ env: { allow: [LANG] } }",
  "limits": "{ limits: { memory_bytes: 1000000 } }",
  "resources": "{ resources: { cpu_seconds: 5 } }",
  "state": "{ state: { store: notes } }",
  "plan": "{ plan: { submit: true } }",
  "containment": "{ containment: sealed }"
}

const agent = (extra: string, entryCapabilities?: string) => {
  const blocks = extra.split("\n").filter((line) => line !== "")
  const inference = blocks.find((line) => line.startsWith("inference:"))
  const others = blocks.filter((line) => !line.startsWith("inference:")).join("\n")
  const inferenceExtra = inference === undefined ? "" : inference.slice("inference: { ".length, -" }".length) + ", "
  return `name: a\nversion: 1.0.0\nartifacts:\n  - { name: d, version: 1.0.0, runtime: driver${entryCapabilities === undefined ? "" : `, capabilities: ${entryCapabilities}`} }\n` +
    `inference: { ${inferenceExtra}endpoint: 'http://127.0.0.1:9/v1', model: m, driver: { artifact: d } }\n${others}\n`
}

describe("every manifest key is enforced, refused or warned", () => {
  it("the reader's key tree and the classification table are the same set", () => {
    const unclassified = ALL_KEYS.filter((path) => dispositionOf(path) === undefined)
    expect(unclassified).toEqual([])
    const stale = Object.keys(MANIFEST_KEYS).filter((path) => !ALL_KEYS.includes(path))
    expect(stale).toEqual([])
    expect(ALL_KEYS.length).toBeGreaterThan(150)
  })

  it("an enforced or refused key names a source file that exists", () => {
    for (const [path, line] of Object.entries(MANIFEST_KEYS)) {
      if (line.kind === "warned") continue
      const file = line.by.split(/[ ,]/)[0]!
      expect(existsSync(new URL(`../../${file}`, import.meta.url)), `${path}: ${line.by}`).toBe(true)
    }
  })

  for (const [path, consequence] of warnedRoots()) {
    const entryKey = path.startsWith("artifacts[].capabilities.") ? path.slice("artifacts[].capabilities.".length) : undefined
    it(`declaring ${path} earns a warning naming it`, () => {
      const sample = entryKey === undefined ? SAMPLES[path] : ENTRY_SAMPLES[entryKey]
      expect(sample, `a sample value for ${path}`).toBeDefined()
      const parsed = parseManifest(entryKey === undefined ? agent(sample!) : agent("", sample))
      expect(Either.isRight(parsed), Either.isLeft(parsed) ? parsed.left.message : "").toBe(true)
      const warnings = Either.getOrThrow(parsed).warnings
      if (entryKey === undefined) {
        expect(warnings).toContainEqual({ code: "W-RUN-001", path, message: `'${path}' is accepted but not acted on by capsule-runtime (TypeScript) yet: ${consequence}` })
      } else {
        const key = entryKey.replace(/\[\]$/, "")
        expect(warnings).toContainEqual({ code: "W-SEC-008", path: `artifacts[0].capabilities.${key}`, message: `artifact 'd' declares capabilities.${key}, which ${consequence}` })
      }
    })
  }

  it("a manifest declaring only enforced keys earns no warning", () => {
    const parsed = Either.getOrThrow(parseManifest(agent("capabilities: { network: { allow: [localhost:1] }, filesystem: { read_only: [docs] }, containment: advisory, resources: { cpu_seconds: 5, max_open_files: 64 }, spawn: { allow: [helper] } }\nlifecycle: { task_acceptance: queue, shell_grace_secs: 2, delegation_deadline_secs: 60 }\ntrace: { capture: meta }")))
    expect(parsed.warnings).toEqual([])
  })

  it("resources.workdir_max_bytes is watched for an agent capsule and warned for a script capsule", () => {
    const budget = "capabilities: { resources: { workdir_max_bytes: 1000000 } }\n"
    expect(Either.getOrThrow(parseManifest(agent(budget))).warnings).toEqual([])
    const script = Either.getOrThrow(parseManifest(`name: s\nversion: 0.1.0\n${budget}`))
    expect(script.warnings.map((warning) => [warning.code, warning.path])).toEqual([["W-RUN-001", "capabilities.resources.workdir_max_bytes"]])
    expect(script.warnings[0]!.message).toContain("a script capsule's workdir is not watched")
  })
})
