/**
 * Builds a JS driver that calls its provider through `wasi:http` (drivers/openai) with
 * componentize-js (StarlingMonkey). componentize-qjs cannot: its Wizer linker refuses every
 * guest importing `wasi:http/types` (mismatched `io-error` / `input-stream` resources, even
 * with a trimmed interface). StarlingMonkey is slow to build (~25 s, ~800 MB, 14 MB out), so
 * the component is rebuilt only when a digest of its inputs differs from the stamp written
 * next to it (`.<name>.wasm.stamp`).
 *
 * The build runs in a child `node`: componentize-js loads its own copy of preview2-shim and
 * blocks its process in a synchronous Wizer run, neither of which belongs in the caller's
 * (often a test runner's) process.
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { componentWit } from "@bytecodealliance/jco"
import { parseWorld, unsupported } from "../sandbox/ComponentWorld.js"
import { assembleWit, builderVersions, repoRoot } from "./GuestWit.js"

export interface DriverBuildOptions {
  /** The artifact name (also the output's base name by default). */
  readonly name: string
  /** Directory holding `world.wit` and the JS modules; the entry is `driver.js`. */
  readonly sourceDir: string
  /** Default: `<sourceDir>/<name>.wasm`. */
  readonly outFile?: string
  /** World in `world.wit`; default `driver`. */
  readonly world?: string
  /** Rebuild even when the stamp matches. */
  readonly force?: boolean
}

export interface DriverBuilt {
  readonly file: string
  readonly rebuilt: boolean
  readonly ms: number
  readonly bytes: number
}

/** Bump when the build changes in a way the hashed inputs do not show. */
const BUILD_REVISION = "DriverBuild/1"
const ENTRY = "driver.js"

/** componentize-js ships inside jco (ESM only, so it is found on disk, not resolved). */
const componentizeJsRoot = (): string => {
  for (let dir = repoRoot; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules/@bytecodealliance/componentize-js")
    if (existsSync(join(candidate, "package.json"))) return candidate
    if (dirname(dir) === dir) throw new Error("@bytecodealliance/componentize-js is not installed (it comes with @bytecodealliance/jco)")
  }
}

const versionAt = (root: string): string => (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version

/** Every source the component is made of, in a fixed order: the WIT and the JS modules. */
const sourceFiles = (sourceDir: string): ReadonlyArray<string> =>
  readdirSync(sourceDir).filter((name) => name === "world.wit" || name.endsWith(".js") || name.endsWith(".mjs")).sort()

const digestOf = (parts: ReadonlyArray<string>): string => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part).update("\0")
  return hash.digest("hex")
}

// Reads the request on stdin (the WIT is large), writes the component where it is told.
const CHILD = `
let text = ""
process.stdin.setEncoding("utf8")
for await (const chunk of process.stdin) text += chunk
const input = JSON.parse(text)
const { componentize } = await import(input.module)
const { writeFileSync } = await import("node:fs")
const { component } = await componentize({
  sourcePath: input.entry,
  witWorld: input.wit,
  worldName: input.world,
  disableFeatures: ["fetch-event"]
})
writeFileSync(input.outFile, component)
`

const componentize = (input: { readonly module: string; readonly entry: string; readonly wit: string; readonly world: string; readonly outFile: string }, cwd: string) =>
  new Promise<void>((resolve, reject) => {
    // cwd is the driver's directory: componentize-js maps it as Wizer's root, so the engine
    // sees the driver's modules and nothing else of the repository.
    const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD], { cwd, stdio: ["pipe", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`componentize-js failed (${signal ?? `exit ${code}`}):\n${output.slice(-4000)}`))
    )
    child.stdin.end(JSON.stringify(input))
  })

/** The built component must be one our loader accepts (murmur:* exact, wasi:*@0.2.x). */
const checkWorld = async (file: string) => {
  const problems = unsupported(parseWorld(await componentWit(readFileSync(file))))
  if (problems.length > 0) throw new Error(`${file}: ${problems.map((problem) => problem.message).join("; ")}`)
}

export const buildDriver = async (options: DriverBuildOptions): Promise<DriverBuilt> => {
  const started = Date.now()
  const file = options.outFile ?? join(options.sourceDir, `${options.name}.wasm`)
  const stampFile = join(dirname(file), `.${basename(file)}.stamp`)
  const world = options.world ?? "driver"
  const wit = assembleWit(readFileSync(join(options.sourceDir, "world.wit"), "utf8"))
  const componentizeRoot = componentizeJsRoot()
  const stamp = digestOf([
    BUILD_REVISION,
    builderVersions(),
    `componentize-js@${versionAt(componentizeRoot)}`,
    world,
    wit,
    ...sourceFiles(options.sourceDir).flatMap((name) => [name, readFileSync(join(options.sourceDir, name), "utf8")])
  ])
  if (options.force !== true && existsSync(file) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) {
    return { file, rebuilt: false, ms: Date.now() - started, bytes: readFileSync(file).length }
  }
  // Concurrent builds (a test run beside `npm run build`) each write their own temp file; the
  // renames are atomic, so a reader sees one whole component or the previous one.
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  try {
    await componentize({
      module: pathToFileURL(join(componentizeRoot, "src/componentize.js")).href,
      entry: join(options.sourceDir, ENTRY),
      wit,
      world,
      outFile: temp
    }, options.sourceDir)
    await checkWorld(temp)
    renameSync(temp, file)
  } finally {
    rmSync(temp, { force: true })
  }
  writeFileSync(`${stampFile}.tmp`, stamp)
  renameSync(`${stampFile}.tmp`, stampFile)
  return { file, rebuilt: true, ms: Date.now() - started, bytes: readFileSync(file).length }
}

/** The drivers this repository ships as JS built with componentize-js. */
export const shippedDrivers: ReadonlyArray<DriverBuildOptions> = [
  { name: "openai", sourceDir: join(repoRoot, "drivers/openai") }
]
