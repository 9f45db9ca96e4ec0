/**
 * A JS guest built with componentize-js (StarlingMonkey), for guests that call `wasi:http`
 * (drivers/openai). componentize-qjs cannot build those: its Wizer linker refuses every guest
 * importing `wasi:http/types` (mismatched `io-error` / `input-stream` resources, even with a
 * trimmed interface). StarlingMonkey is slow (~20 s, ~800 MB, 14 MB out), which is why shipped
 * guests are stamped and rebuilt only when their inputs change (./ShippedGuests.ts).
 *
 * The build runs in a child `node`: componentize-js loads its own copy of preview2-shim and
 * blocks its process in a synchronous Wizer run, neither of which belongs in the caller's
 * (often a test runner's) process.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { repoRoot, versionAt } from "./GuestWit.js"
import type { GuestSource } from "./QuickJsBuild.js"

/** componentize-js is ESM only (its package.json is not exported), so it is found on disk. */
const componentizeJsRoot = (): string => {
  for (let dir = repoRoot; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules/@bytecodealliance/componentize-js")
    if (existsSync(join(candidate, "package.json"))) return candidate
    if (dirname(dir) === dir) throw new Error("@bytecodealliance/componentize-js is not installed")
  }
}

export const starlingMonkeyVersion = (): string => `componentize-js@${versionAt(componentizeJsRoot())}`

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
    // cwd is the guest's directory: componentize-js maps it as Wizer's root, so the engine
    // sees the guest's modules and nothing else of the repository.
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

export const buildStarlingMonkey = async (source: GuestSource): Promise<Uint8Array> => {
  const scratch = mkdtempSync(join(tmpdir(), "capsule-runtime-sm-"))
  try {
    const outFile = join(scratch, "guest.wasm")
    await componentize({
      module: pathToFileURL(join(componentizeJsRoot(), "src/componentize.js")).href,
      entry: source.entry,
      wit: source.wit,
      world: source.world,
      outFile
    }, dirname(source.entry))
    return new Uint8Array(readFileSync(outFile))
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
