/**
 * Capsule directories for sandbox tests: a `murmur.yaml`, a fixture component as `capsule.wasm`
 * and fixture tools, in a fresh temp directory; plus a runner for `node dist/main.js run`.
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildComponent, type FixtureName } from "./components.js"

export interface CapsuleDirOptions {
  readonly name?: string
  readonly capsule: FixtureName
  /** Tools installed in the registry path `.murmur/artifacts/<name>/0.1.0/`. */
  readonly tools?: Readonly<Record<string, FixtureName>>
  /** YAML appended under `capabilities:` (indented by the caller with two spaces). */
  readonly capabilities?: string
  /** Extra YAML per tool entry (e.g. `    capabilities:\n      filesystem:\n        scope: data`). */
  readonly toolEntries?: Readonly<Record<string, string>>
  /** Extra top-level YAML. */
  readonly extra?: string
}

export const makeCapsuleDir = async (options: CapsuleDirOptions): Promise<string> => {
  const dir = mkdtempSync(join(tmpdir(), "capsule-"))
  writeFileSync(join(dir, "capsule.wasm"), await buildComponent(options.capsule))
  const tools = Object.entries(options.tools ?? {})
  for (const [name, fixture] of tools) {
    const target = join(dir, ".murmur", "artifacts", name, "0.1.0")
    mkdirSync(target, { recursive: true })
    writeFileSync(join(target, `${name}.wasm`), await buildComponent(fixture))
    writeFileSync(join(target, "murmur.yaml"), `name: ${name}\nversion: 0.1.0\nruntime: tool\ndescription: the ${name} fixture\n`)
  }
  const artifacts = tools.length === 0
    ? "artifacts: []\n"
    : `artifacts:\n${tools.map(([name]) => `  - name: ${name}\n    version: 0.1.0\n    runtime: tool\n${options.toolEntries?.[name] ?? ""}`).join("")}`
  const yaml = `name: ${options.name ?? "test-capsule"}\nversion: 0.1.0\n${artifacts}` +
    (options.capabilities === undefined ? "" : `capabilities:\n${options.capabilities}`) +
    (options.extra ?? "")
  writeFileSync(join(dir, "murmur.yaml"), yaml)
  return dir
}

const main = new URL("../../dist/main.js", import.meta.url).pathname

/** Where CLI runs keep transpiled components (shared across test runs, git-ignored). */
export const cliCacheDir = new URL("../../.cache/cli-components", import.meta.url).pathname

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
}

export const runCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const started = Date.now()
    const child = spawn(process.execPath, [main, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`run ${args.join(" ")} timed out; stderr: ${stderr}`))
    }, timeoutMs)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr, ms: Date.now() - started })
    })
  })

/** The `exit` event: the last stdout line of `run --json`. */
export const exitEvent = (result: CliResult) => JSON.parse(result.stdout.trim().split("\n").at(-1)!)

export interface AgentDirOptions {
  readonly name?: string
  /** `driver.config` of the scripted driver: `{ replies: [...], chunks?: boolean }`. */
  readonly driverConfig: unknown
  /** WASM tools installed in the registry path, by entry name. */
  readonly tools?: Readonly<Record<string, FixtureName>>
  /** YAML lines under `inference:` (two-space indented by the caller). */
  readonly inference?: string
  /** YAML appended under `capabilities:`. */
  readonly capabilities?: string
  readonly extra?: string
}

/** An agent capsule: the `scripted-driver` fixture as its driver, fixture tools, no capsule component. */
export const makeAgentCapsuleDir = async (options: AgentDirOptions): Promise<string> => {
  const dir = mkdtempSync(join(tmpdir(), "agent-"))
  const install = async (name: string, fixture: FixtureName, runtime: string) => {
    const target = join(dir, ".murmur", "artifacts", name, "0.1.0")
    mkdirSync(target, { recursive: true })
    writeFileSync(join(target, `${name}.wasm`), await buildComponent(fixture))
    writeFileSync(join(target, "murmur.yaml"), `name: ${name}\nversion: 0.1.0\nruntime: ${runtime}\ndescription: the ${name} fixture\n`)
  }
  await install("scripted-driver", "scripted-driver", "driver")
  const tools = Object.entries(options.tools ?? {})
  for (const [name, fixture] of tools) await install(name, fixture, "tool")
  const entries = [
    "  - name: scripted-driver\n    version: 0.1.0\n    runtime: driver\n",
    ...tools.map(([name]) => `  - name: ${name}\n    version: 0.1.0\n    runtime: tool\n`)
  ].join("")
  const yaml = `name: ${options.name ?? "test-agent"}\nversion: 0.1.0\nartifacts:\n${entries}` +
    "inference:\n  endpoint: http://127.0.0.1:9/v1\n  model: scripted\n" +
    `  driver:\n    artifact: scripted-driver\n    config: ${JSON.stringify(options.driverConfig)}\n` +
    (options.inference ?? "") +
    (options.capabilities === undefined ? "" : `capabilities:\n${options.capabilities}`) +
    (options.extra ?? "")
  writeFileSync(join(dir, "murmur.yaml"), yaml)
  return dir
}
