/**
 * `murmur.lock` (spec §1.2, `lock_version: 1`): the version and SHA-256 every registry-resolved
 * artifact is pinned to, beside `murmur.yaml`. Pure: parse and serialize text, and decide whether
 * a freshly resolved artifact matches its pin or pins it. The caller reads and writes the file.
 */
import { Either, Schema } from "effect"
import { isMap, isScalar, isSeq, parseDocument, stringify } from "yaml"
import type { Node, Scalar } from "yaml"

export const LOCK_VERSION = 1
export const LOCKFILE_NAME = "murmur.lock"

export const LockedArtifact = Schema.Struct({
  name: Schema.String,
  resolvedVersion: Schema.String,
  sha256: Schema.Struct({ wasm: Schema.String })
})
export type LockedArtifact = typeof LockedArtifact.Type

export const Lockfile = Schema.Struct({
  lockVersion: Schema.Literal(LOCK_VERSION),
  artifacts: Schema.Array(LockedArtifact)
})
export type Lockfile = typeof Lockfile.Type

export class LockfileError extends Schema.TaggedError<LockfileError>()("LockfileError", {
  /** E-RUN-003: unreadable lock, missing entry, version mismatch. E-REG-002: hash mismatch. */
  code: Schema.Literal("E-RUN-003", "E-REG-002"),
  message: Schema.String,
  /** What disagreed and how to fix it, when there is more to say than the reference's text. */
  hint: Schema.optionalWith(Schema.String, { exact: true })
}) {}

export const emptyLockfile: Lockfile = { lockVersion: LOCK_VERSION, artifacts: [] }

const invalid = (message: string) => new LockfileError({ code: "E-RUN-003", message: `invalid murmur.lock: ${message}` })

const text = (node: unknown): string | undefined => {
  if (!isScalar(node) || node.value === null) return undefined
  const scalar = node as Scalar
  return typeof scalar.value === "string" ? scalar.value : scalar.source ?? String(scalar.value)
}

const field = (node: unknown, key: string): unknown => (isMap(node) ? node.get(key, true) : undefined)

/** Reads `murmur.lock` text. Any problem is `E-RUN-003` "invalid murmur.lock: …". */
export const parseLockfile = (source: string): Either.Either<Lockfile, LockfileError> => {
  let doc
  try {
    doc = parseDocument(source, { prettyErrors: false })
  } catch (cause) {
    return Either.left(invalid(`YAML parse error: ${cause instanceof Error ? cause.message : String(cause)}`))
  }
  const [problem] = doc.errors
  if (problem !== undefined) return Either.left(invalid(`YAML parse error: ${problem.message}`))
  const root = doc.contents as Node | null
  if (!isMap(root)) return Either.left(invalid("YAML parse error: expected a mapping with lock_version and artifacts"))
  const version = field(root, "lock_version")
  const versionText = text(version) ?? "null"
  if (!isScalar(version) || version.value !== LOCK_VERSION) {
    return Either.left(invalid(`unsupported lock_version ${versionText} (expected ${LOCK_VERSION}) — delete murmur.lock and run \`mur install\` to regenerate it`))
  }
  const list = field(root, "artifacts")
  if (list !== undefined && !isSeq(list) && text(list) !== undefined) {
    return Either.left(invalid("YAML parse error: artifacts: expected a sequence"))
  }
  const artifacts: Array<LockedArtifact> = []
  for (const entry of isSeq(list) ? list.items : []) {
    const name = text(field(entry, "name")) ?? ""
    if (name.trim() === "") return Either.left(invalid("artifact entry has empty name"))
    const resolvedVersion = text(field(entry, "resolved_version")) ?? ""
    if (resolvedVersion.trim() === "") return Either.left(invalid(`artifact '${name}' has empty resolved_version`))
    const wasm = text(field(field(entry, "sha256"), "wasm")) ?? ""
    if (wasm.trim() === "") return Either.left(invalid(`artifact '${name}' has empty sha256.wasm`))
    artifacts.push({ name, resolvedVersion, sha256: { wasm } })
  }
  return Either.right({ lockVersion: LOCK_VERSION, artifacts })
}

/** The file's text, in the reference's layout (`lock_version`, then `artifacts` in pin order). */
export const serializeLockfile = (lock: Lockfile): string =>
  stringify(
    {
      lock_version: lock.lockVersion,
      artifacts: lock.artifacts.map((entry) => ({
        name: entry.name,
        resolved_version: entry.resolvedVersion,
        sha256: { wasm: entry.sha256.wasm }
      }))
    },
    { indentSeq: false, lineWidth: 0 }
  )

export type LockCheck =
  /** The pin agrees; nothing to write. */
  | { readonly _tag: "Ok"; readonly entry: LockedArtifact }
  /** There was no pin; `lock` now has one and should be written. */
  | { readonly _tag: "Pinned"; readonly lock: Lockfile; readonly entry: LockedArtifact }

export interface VerifyOptions {
  /**
   * What an existing lock without an entry for `name` means. `"pin"` (default) adds the entry, so
   * a caller can thread one lock through a first run; `"fail"` is the reference's `mur run` on a
   * lock that already existed before this run (E-RUN-003).
   */
  readonly onMissing?: "pin" | "fail"
}

/**
 * Checks a resolved artifact against its pin. No lock (`undefined`): a new lock pinning it. An
 * entry that agrees: `Ok`. A different version: E-RUN-003. A different hash: E-REG-002, the
 * reference's integrity failure. Hashes compare case-insensitively.
 */
export const verifyOrPin = (
  lock: Lockfile | undefined,
  name: string,
  version: string,
  sha256: string,
  options: VerifyOptions = {}
): Either.Either<LockCheck, LockfileError> => {
  const pinnedEntry: LockedArtifact = { name, resolvedVersion: version, sha256: { wasm: sha256 } }
  const current = lock ?? emptyLockfile
  const existing = current.artifacts.find((entry) => entry.name === name)
  if (existing === undefined) {
    if (lock !== undefined && options.onMissing === "fail") {
      return Either.left(new LockfileError({ code: "E-RUN-003", message: `murmur.lock missing artifact entry for '${name}'` }))
    }
    return Either.right({ _tag: "Pinned", lock: { ...current, artifacts: [...current.artifacts, pinnedEntry] }, entry: pinnedEntry })
  }
  if (existing.resolvedVersion !== version) {
    return Either.left(new LockfileError({
      code: "E-RUN-003",
      message: `lockfile version mismatch for '${name}': manifest requested ${version}, lock pinned ${existing.resolvedVersion}`,
      hint: `pinned ${name}@${existing.resolvedVersion}, but ${name}@${version} was resolved; update the manifest or delete the entry from murmur.lock`
    }))
  }
  if (existing.sha256.wasm.toLowerCase() !== sha256.toLowerCase()) {
    return Either.left(new LockfileError({
      code: "E-REG-002",
      message: `artifact integrity check failed for ${name}@${version}`,
      hint: `'${name}' is pinned at sha256 ${existing.sha256.wasm}, but ${sha256} was resolved; artifact on disk does not match murmur.lock — re-publish or delete the lock`
    }))
  }
  return Either.right({ _tag: "Ok", entry: existing })
}
