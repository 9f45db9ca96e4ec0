/**
 * Capsule directories for sandbox tests: a `murmur.yaml`, a fixture component as `capsule.wasm`
 * and fixture tools, in a fresh temp directory; plus a runner for `node dist/main.js run`.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
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

/** Runs the CLI to its exit; `input`, when given, is its whole standard input (else none). */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}, timeoutMs = 60_000, input?: string): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const started = Date.now()
    const child = spawn(process.execPath, [main, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir, MURMUR_STORE: "memory", ...env },
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
    })
    if (input !== undefined) child.stdin!.end(input)
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    child.stderr!.on("data", (chunk) => (stderr += chunk))
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

/** Polls until `ok` holds (a child's output arriving, say); fails after `ms`. */
export const until = async (ok: () => boolean, what: string, ms = 30_000) => {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export interface ServeProcess {
  readonly child: ChildProcessWithoutNullStreams
  readonly listening: { readonly event: string; readonly url: string; readonly session_id: string; readonly workdir: string; readonly records: string }
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

/**
 * `node dist/main.js serve <dir> --json` as a child process, resolved once it prints its
 * listening line; `cleanups` gets a kill for the afterEach hook.
 */
export const serveCli = (
  dir: string,
  env: Record<string, string>,
  cleanups: Array<() => Promise<void> | void>
): Promise<ServeProcess> => listeningCli(["serve", dir, "--json"], env, cleanups)

/** Any `--json` command that serves (`serve`, `run <agent dir>`), resolved at its listening line. */
export const listeningCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  cleanups: Array<() => Promise<void> | void>
): Promise<ServeProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir, MURMUR_STORE: "memory", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
      child.on("exit", (code, signal) => done({ code, signal }))
    )
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL")
        await exited
      }
    })
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not listen within 30 s; stderr: ${stderr}`)), 30_000)
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      const end = stdout.indexOf("\n")
      if (end < 0) return
      clearTimeout(timer)
      try {
        resolve({ child, listening: JSON.parse(stdout.slice(0, end)), stdout: () => stdout, stderr: () => stderr, exited })
      } catch (error) {
        reject(error)
      }
    })
    void exited.then(({ code }) => {
      clearTimeout(timer)
      reject(new Error(`${args[0]} exited (${code}) before listening; stderr: ${stderr}`))
    })
  })
