/**
 * A capsule directory, resolved for launch: its `murmur.yaml`, its script component
 * (`capsule.wasm`, else the single root `*.wasm`), and its artifacts — from an entry's `source:`
 * (a `.wasm`, or an artifact directory with its own `murmur.yaml` and one root `.wasm`) or from
 * `.murmur/artifacts/<name>/<version>/` — with registry artifacts pinned by SHA-256 in
 * `murmur.lock` on the first run and verified on every later one.
 */
import { existsSync } from "node:fs"
import { readdir, readFile, stat, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { Effect, Either } from "effect"
import type { ArtifactData } from "./ArtifactData.js"
import { digestOf } from "./Digest.js"
import { LOCKFILE_NAME, type Lockfile, parseLockfile, serializeLockfile, verifyOrPin } from "./Lockfile.js"
import { type CapsuleManifest, isAgentCapsule, parseManifest } from "./Manifest.js"
import type { ArtifactEntry } from "./manifest/ArtifactEntry.js"
import { type ArtifactManifest, parseArtifactManifest } from "./manifest/ArtifactManifest.js"
import type { ManifestWarning } from "./manifest/ManifestError.js"
import { ProjectError } from "./ProjectError.js"

export interface ResolvedArtifact {
  readonly entry: ArtifactEntry
  /** The artifact's own manifest, when it came as a directory. */
  readonly own: ArtifactManifest | undefined
  /** The WebAssembly component; absent for native tools and skills. */
  readonly wasm: Uint8Array | undefined
  readonly sha256: string | undefined
  /** The `.wasm` file it came from (named in a load failure). */
  readonly path: string | undefined
}

/** `describe` answers schemas as JSON strings (a manifest may hold either form). */
const schemaText = (schema: unknown) => schema === undefined ? undefined : typeof schema === "string" ? schema : JSON.stringify(schema)

/** What `murmur:artifact-manager/manage` tells a guest about an installed artifact. */
export const artifactData = (artifact: ResolvedArtifact): ArtifactData => ({
  name: artifact.entry.name,
  version: artifact.entry.version,
  runtime: artifact.wasm === undefined ? "native" : "wasm",
  description: artifact.own?.description ?? "",
  tags: artifact.own?.tags ?? [],
  inputSchema: schemaText(artifact.own?.inputSchema),
  outputSchema: schemaText(artifact.own?.outputSchema)
})

export interface CapsuleProject {
  readonly directory: string
  readonly manifest: CapsuleManifest
  readonly warnings: ReadonlyArray<ManifestWarning>
  /** The script capsule's component (agent capsules have none). */
  readonly component: { readonly path: string; readonly bytes: Uint8Array } | undefined
  readonly artifacts: ReadonlyArray<ResolvedArtifact>
}

const resolved = (entry: ArtifactEntry, own: ArtifactManifest | undefined, wasm: Uint8Array | undefined, path?: string): ResolvedArtifact => ({
  entry,
  own,
  wasm,
  sha256: wasm === undefined ? undefined : digestOf(wasm),
  path
})

/** How a load failure names an artifact: its role, name and file. */
export const artifactLabel = (artifact: ResolvedArtifact): string =>
  `${artifact.entry.runtime} '${artifact.entry.name}'${artifact.path === undefined ? "" : ` (${artifact.path})`}`

const fail = (code: string, message: string) => Effect.fail(new ProjectError({ code, message }))

const io = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (error) => new ProjectError({ code: "E-RUN-002", message: `${what}: ${error instanceof Error ? error.message : String(error)}` }) })

/** `capsule.wasm` wins; else exactly one root `*.wasm`. */
const rootWasm = (directory: string, missing: string) =>
  Effect.gen(function*() {
    const names = (yield* io(`cannot read ${directory}`, () => readdir(directory))).filter((name) => name.endsWith(".wasm")).sort()
    if (names.includes("capsule.wasm")) return join(directory, "capsule.wasm")
    if (names.length === 1) return join(directory, names[0]!)
    if (names.length === 0) return yield* fail("E-RUN-004", missing)
    return yield* fail("E-RUN-004", `multiple root .wasm files found: ${names.join(", ")} (expected capsule.wasm or one root *.wasm)`)
  })

const readArtifactDir = (directory: string, entry: ArtifactEntry) =>
  Effect.gen(function*() {
    const manifestPath = join(directory, "murmur.yaml")
    let own: ArtifactManifest | undefined
    if (existsSync(manifestPath)) {
      const parsed = parseArtifactManifest(yield* io(`cannot read ${manifestPath}`, () => readFile(manifestPath, "utf8")))
      if (Either.isLeft(parsed)) return yield* fail(parsed.left.code, `artifact '${entry.name}': ${parsed.left.message}`)
      own = parsed.right
    }
    if (own?.implementation === "native" || own?.runtime === "skill" || entry.runtime === "skill") {
      return resolved(entry, own, undefined)
    }
    const path = yield* rootWasm(directory, `artifact '${entry.name}': missing root .wasm file (expected capsule.wasm or one root *.wasm)`)
    return resolved(entry, own, yield* io(`cannot read ${path}`, () => readFile(path)), path)
  })

const resolveArtifact = (directory: string, entry: ArtifactEntry) =>
  Effect.gen(function*() {
    const location = entry.source !== undefined
      ? resolve(directory, entry.source)
      : join(directory, ".murmur", "artifacts", entry.name, entry.version)
    const info = yield* Effect.promise(() => stat(location).catch(() => undefined))
    if (info === undefined) return undefined as ResolvedArtifact | undefined
    if (info.isDirectory()) return yield* readArtifactDir(location, entry)
    return resolved(entry, undefined, yield* io(`cannot read ${location}`, () => readFile(location)), location)
  })

/** Registry artifacts are pinned; `source:` ones are the operator's own working copies. */
const pin = (directory: string, artifacts: ReadonlyArray<ResolvedArtifact>) =>
  Effect.gen(function*() {
    const path = join(directory, LOCKFILE_NAME)
    const existed = existsSync(path)
    let lock: Lockfile | undefined
    if (existed) {
      const parsed = parseLockfile(yield* io(`cannot read ${path}`, () => readFile(path, "utf8")))
      if (Either.isLeft(parsed)) return yield* fail(parsed.left.code, parsed.left.message)
      lock = parsed.right
    }
    let changed = false
    for (const artifact of artifacts) {
      if (artifact.entry.source !== undefined || artifact.sha256 === undefined) continue
      const checked = verifyOrPin(lock, artifact.entry.name, artifact.entry.version, artifact.sha256, { onMissing: existed ? "fail" : "pin" })
      if (Either.isLeft(checked)) return yield* fail(checked.left.code, checked.left.message)
      if (checked.right._tag === "Pinned") {
        lock = checked.right.lock
        changed = true
      }
    }
    if (changed && lock !== undefined) {
      const written = lock
      yield* io(`cannot write ${path}`, () => writeFile(path, serializeLockfile(written)))
    }
  })

type HostEnv = Readonly<Record<string, string | undefined>>

/** The directory's `murmur.yaml`, parsed; `env` answers its `${VAR}` references. */
const readManifest = (root: string, env: HostEnv) =>
  Effect.gen(function*() {
    const manifestPath = join(root, "murmur.yaml")
    if (!existsSync(manifestPath)) return yield* fail("E-RUN-002", `no murmur.yaml in ${root}`)
    const parsed = parseManifest(yield* io(`cannot read ${manifestPath}`, () => readFile(manifestPath, "utf8")), { path: manifestPath, env })
    if (Either.isLeft(parsed)) return yield* fail(parsed.left.code, parsed.left.message)
    return parsed.right
  })

/** Resolves the entries (all of them, or E-RUN-008 naming the missing ones) and pins registry ones. */
const resolveAll = (root: string, wanted: ReadonlyArray<ArtifactEntry>) =>
  Effect.gen(function*() {
    const found = yield* Effect.forEach(wanted, (entry) => resolveArtifact(root, entry))
    const missing = wanted.filter((_, i) => found[i] === undefined)
    if (missing.length > 0) {
      // The paths tried, so a capsule copied elsewhere shows which relative `source:` broke.
      const described = missing.map((entry) => `${entry.name}@${entry.version} (looked in ${artifactLocation(root, entry)})`)
      return yield* fail("E-RUN-008", `missing artifacts: ${described.join(", ")}`)
    }
    const artifacts = found.filter((artifact): artifact is ResolvedArtifact => artifact !== undefined)
    yield* pin(root, artifacts)
    return artifacts
  })

type Manifested = { readonly root: string; readonly manifest: CapsuleManifest; readonly warnings: ReadonlyArray<ManifestWarning> }

const scriptProject = ({ manifest, root, warnings }: Manifested) =>
  Effect.gen(function*() {
    const componentPath = yield* rootWasm(root, `no capsule component in ${root}: expected capsule.wasm or exactly one root *.wasm`)
    const component = { path: componentPath, bytes: yield* io(`cannot read ${componentPath}`, () => readFile(componentPath)) }
    const artifacts = yield* resolveAll(root, manifest.artifacts.filter((entry) => entry.runtime === "tool"))
    return { directory: root, manifest, warnings, component, artifacts } satisfies CapsuleProject
  })

const agentProject = ({ manifest, root, warnings }: Manifested) =>
  Effect.gen(function*() {
    const artifacts = yield* resolveAll(
      root,
      manifest.artifacts.filter((entry) => entry.runtime === "tool" || entry.runtime === "driver" || entry.runtime === "skill" || entry.runtime === "hook")
    )
    return { directory: root, manifest, warnings, component: undefined, artifacts } satisfies CapsuleProject
  })

const manifested = (directory: string, env: HostEnv) =>
  Effect.gen(function*() {
    const root = resolve(directory)
    const { manifest, warnings } = yield* readManifest(root, env)
    return { root, manifest, warnings } satisfies Manifested
  })

/** A script capsule's directory: its component and its tools. */
export const loadProject = (directory: string, env: HostEnv = {}) =>
  Effect.gen(function*() {
    const read = yield* manifested(directory, env)
    if (isAgentCapsule(read.manifest)) {
      return yield* fail(
        "E-RUN-005",
        `${read.manifest.name} is an agent capsule (it has an inference: block); \`run\` does not run agent capsules yet — use \`serve <dir>\` for now`
      )
    }
    return yield* scriptProject(read)
  })

/**
 * An agent capsule's directory (it has an `inference:` block): no capsule component; its tools,
 * driver, hooks and skills resolved like a script capsule's tools, registry ones pinned. Skills resolve
 * to their directory (no `.wasm`).
 */
export const loadAgentProject = (directory: string, env: HostEnv = {}) =>
  Effect.gen(function*() {
    const read = yield* manifested(directory, env)
    if (!isAgentCapsule(read.manifest)) return yield* fail("E-RUN-005", `${read.manifest.name} is not an agent capsule (it has no inference: block)`)
    return yield* agentProject(read)
  })

/** Either kind of capsule directory, the manifest read once: `agent` when it has an `inference:` block. */
export const loadAnyProject = (directory: string, env: HostEnv = {}) =>
  Effect.gen(function*() {
    const read = yield* manifested(directory, env)
    return isAgentCapsule(read.manifest)
      ? { kind: "agent" as const, project: yield* agentProject(read) }
      : { kind: "script" as const, project: yield* scriptProject(read) }
  })

/** Where an entry's files live: its `source:`, else the registry path. */
export const artifactLocation = (directory: string, entry: ArtifactEntry): string =>
  entry.source !== undefined ? resolve(directory, entry.source) : join(directory, ".murmur", "artifacts", entry.name, entry.version)
