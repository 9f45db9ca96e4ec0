/**
 * What a component imports and exports (WIT names with versions), and whether this runtime can
 * run it. jco does not check interface versions, so we do, before anything is instantiated: a
 * component built against another version of a `murmur:*` interface is refused with the
 * reference's "rebuild against the versioned WIT" wording, naming the interface.
 */
import { componentWit } from "@bytecodealliance/jco"
import { Effect } from "effect"
import { SandboxError } from "../SandboxError.js"

export interface ComponentWorld {
  readonly imports: ReadonlyArray<string>
  readonly exports: ReadonlyArray<string>
}

/** The `murmur:*` interfaces this runtime provides or calls, at their one supported version. */
export const supportedMurmur: ReadonlyMap<string, string> = new Map([
  ["murmur:capsule/run", "0.1.0"],
  ["murmur:tool/run", "0.1.0"],
  ["murmur:tool-registry/invoke", "0.1.0"],
  ["murmur:text/chunks", "0.1.0"],
  ["murmur:task/task", "0.1.0"],
  ["murmur:message/send", "0.1.0"],
  ["murmur:artifact-manager/manage", "0.1.0"],
  // The hook world (spec §2.10).
  ["murmur:hook/lifecycle", "0.8.0"],
  ["murmur:runtime/inference", "0.3.0"],
  ["murmur:runtime/tokens", "0.3.0"],
  ["murmur:task-io/read", "0.1.0"],
  ["murmur:conversation/read", "0.1.0"]
])

/** The WASI interfaces the host links (any 0.2.x). */
export const supportedWasi: ReadonlySet<string> = new Set([
  "wasi:cli/environment",
  "wasi:cli/exit",
  "wasi:cli/stdin",
  "wasi:cli/stdout",
  "wasi:cli/stderr",
  "wasi:cli/terminal-input",
  "wasi:cli/terminal-output",
  "wasi:cli/terminal-stdin",
  "wasi:cli/terminal-stdout",
  "wasi:cli/terminal-stderr",
  "wasi:io/error",
  "wasi:io/poll",
  "wasi:io/streams",
  "wasi:clocks/monotonic-clock",
  "wasi:clocks/wall-clock",
  "wasi:random/random",
  "wasi:random/insecure",
  "wasi:random/insecure-seed",
  "wasi:filesystem/types",
  "wasi:filesystem/preopens",
  "wasi:sockets/network",
  "wasi:sockets/instance-network",
  "wasi:sockets/ip-name-lookup",
  "wasi:sockets/tcp",
  "wasi:sockets/tcp-create-socket",
  "wasi:sockets/udp",
  "wasi:sockets/udp-create-socket",
  "wasi:http/types",
  "wasi:http/outgoing-handler"
])

/** Splits `ns:pkg/iface@1.2.3` into the unversioned name and the version. */
export const splitVersion = (name: string): { readonly name: string; readonly version: string | undefined } => {
  const at = name.lastIndexOf("@")
  return at < 0 ? { name, version: undefined } : { name: name.slice(0, at), version: name.slice(at + 1) }
}

/** Reads the `import …;` / `export …;` lines of the component's root world. */
export const parseWorld = (wit: string): ComponentWorld => {
  const imports: Array<string> = []
  const exports: Array<string> = []
  for (const raw of wit.split("\n")) {
    const line = raw.trim()
    const match = /^(import|export)\s+([^;]+);$/.exec(line)
    if (match === null) continue
    ;(match[1] === "import" ? imports : exports).push(match[2]!.trim())
  }
  return { imports, exports }
}

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d]

/** What the first eight bytes say, before asking the decoder (whose errors dump byte arrays). */
const headerProblem = (bytes: Uint8Array): string | undefined => {
  if (bytes.length < 8 || WASM_MAGIC.some((byte, at) => bytes[at] !== byte)) return "not a WebAssembly file (no \\0asm header)"
  // Layer 0 is a core module; components are layer 1 (bytes 6–7).
  if (bytes[6] === 0 && bytes[7] === 0) return "a core WebAssembly module, not a component; build it as a component (e.g. wasm-tools component new)"
  return undefined
}

export const readWorld = (bytes: Uint8Array): Effect.Effect<ComponentWorld, SandboxError> => {
  const problem = headerProblem(bytes)
  if (problem !== undefined) return Effect.fail(new SandboxError({ reason: "InvalidComponent", message: `not a WebAssembly component: ${problem}` }))
  return Effect.tryPromise({
    try: async () => parseWorld(await componentWit(bytes)),
    catch: (error) =>
      new SandboxError({
        reason: "InvalidComponent",
        // The decoder's message spans lines (byte arrays included): one line is enough to act on.
        message: `not a WebAssembly component: ${(error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, " ")}`
      })
  })
}

const rebuild = (found: string, expected: string) =>
  `component ${found.startsWith("murmur:capsule/") || found.startsWith("murmur:tool/run") || found.startsWith("murmur:hook/") ? "exports" : "imports"} ${found}, but this runtime provides ${expected}; rebuild the artifact against the versioned WIT`

/** Problems that keep the component from running here (empty: it can run). */
export const unsupported = (world: ComponentWorld): ReadonlyArray<{ readonly reason: "VersionMismatch" | "DeniedImport"; readonly message: string }> => {
  const problems: Array<{ reason: "VersionMismatch" | "DeniedImport"; message: string }> = []
  const check = (item: string, direction: "import" | "export") => {
    const { name, version } = splitVersion(item)
    if (name.startsWith("murmur:")) {
      const expected = supportedMurmur.get(name)
      if (expected === undefined) {
        problems.push({ reason: "DeniedImport", message: `component ${direction}s ${item}, which this runtime does not provide; rebuild the artifact against the versioned WIT (supported: ${[...supportedMurmur].map(([n, v]) => `${n}@${v}`).join(", ")})` })
      } else if (version !== expected) {
        problems.push({ reason: "VersionMismatch", message: rebuild(item, `${name}@${expected}`) })
      }
      return
    }
    if (direction === "export") return
    if (name.startsWith("wasi:") && supportedWasi.has(name) && version !== undefined && /^0\.2\.\d+$/.test(version)) return
    problems.push({
      reason: name.startsWith("wasi:") && supportedWasi.has(name) ? "VersionMismatch" : "DeniedImport",
      message: `component imports ${item}, which this runtime does not provide (it links wasi:*@0.2.x and murmur:* at their versioned names)`
    })
  }
  for (const item of world.imports) check(item, "import")
  for (const item of world.exports) check(item, "export")
  return problems
}

export const runnableAs = (world: ComponentWorld): ReadonlyArray<"capsule" | "tool" | "hook"> => [
  ...(world.exports.includes("murmur:capsule/run@0.1.0") ? ["capsule" as const] : []),
  ...(world.exports.includes("murmur:tool/run@0.1.0") ? ["tool" as const] : []),
  ...(world.exports.includes("murmur:hook/lifecycle@0.8.0") ? ["hook" as const] : [])
]
