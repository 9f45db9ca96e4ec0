/**
 * Agent capsules with hooks for the hook tests: the scripted driver, the tools asked for, and
 * each hook the `hook-probe` fixture (a real component in real workers) under its own contract
 * and config. A hook with `log: true` is scoped the directory `hooklog/`, where the probe appends
 * every call it gets to `calls.log`.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { type AgentDirOptions, makeAgentCapsuleDir } from "../lib/CapsuleDirs.js"
import { buildComponent } from "../lib/components.js"

export interface HookSpec {
  readonly name: string
  readonly binding?: string
  readonly mode?: "blocking" | "async"
  readonly policy?: string
  /** The probe's config (answers, err, trap, spin, big, compact, infer, probe). */
  readonly config?: Readonly<Record<string, unknown>>
  readonly log?: boolean
  /** More lines under the entry's `capabilities:` (indented six spaces). */
  readonly capabilities?: string
  /** More keys on the entry (indented four spaces). */
  readonly entry?: string
}

export const hookedCapsule = async (options: AgentDirOptions, hooks: ReadonlyArray<HookSpec>): Promise<string> => {
  const dir = await makeAgentCapsuleDir(options)
  const wasm = await buildComponent("hook-probe")
  const entries = hooks.map((hook) => {
    const target = join(dir, ".murmur", "artifacts", hook.name, "0.1.0")
    mkdirSync(target, { recursive: true })
    writeFileSync(join(target, `${hook.name}.wasm`), wasm)
    const contract = [
      ...(hook.binding === undefined ? [] : [`binding: ${hook.binding}`]),
      ...(hook.mode === undefined ? [] : [`execution_mode: ${hook.mode}`]),
      ...(hook.policy === undefined ? [] : [`commit_policy: ${hook.policy}`])
    ]
    writeFileSync(join(target, "murmur.yaml"), [`name: ${hook.name}`, "version: 0.1.0", "runtime: hook", ...contract, ""].join("\n"))
    const capabilities = [
      ...(hook.log === true ? ["      filesystem:\n        scope: hooklog\n"] : []),
      ...(hook.capabilities === undefined ? [] : [hook.capabilities])
    ].join("")
    return `  - name: ${hook.name}\n    version: 0.1.0\n    runtime: hook\n` +
      (hook.config === undefined ? "" : `    config: ${JSON.stringify(hook.config)}\n`) +
      (capabilities === "" ? "" : `    capabilities:\n${capabilities}`) +
      (hook.entry ?? "")
  }).join("")
  const manifest = readFileSync(join(dir, "murmur.yaml"), "utf8")
  writeFileSync(join(dir, "murmur.yaml"), manifest.replace("\ninference:\n", `\n${entries}inference:\n`))
  return dir
}

/** What the probes logged, one line per call (or probe answer). */
export const hookCalls = (workdir: string): ReadonlyArray<string> => {
  try {
    return readFileSync(join(workdir, "hooklog", "calls.log"), "utf8").split("\n").filter((line) => line !== "")
  } catch {
    return []
  }
}
