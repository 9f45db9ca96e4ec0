/**
 * `W-RUN-001`: keys of the 0.3 manifest that this runtime recognizes and validates with the
 * reference's rules but does not act on yet. Never silent: each declared one is named, so an
 * operator knows the capsule runs here without it.
 */
import type { ManifestWarning } from "./ManifestError.js"

const RUNTIME = "capsule-runtime (TypeScript)"

/** Dotted paths whose mere declaration earns the warning, in manifest block order. */
const INERT_KEYS = [
  ["inference", "compaction"],
  ["inference", "max_session_tokens"],
  ["lifecycle", "max_task_reopens"],
  ["context", "record"],
  ["context", "record_store"],
  ["context", "seed_budget"],
  ["context", "seed_overflow_margin"],
  ["context", "retain"],
  ["observability", "eval"],
  ["trace", "retain"],
  ["exports", "files"],
  ["exports", "peer_files"]
] as const

type Blocks = Readonly<Record<string, unknown>>

const warning = (path: string, subject: string, consequence: string): ManifestWarning => ({
  code: "W-RUN-001",
  message: `'${subject}' is accepted but not acted on by ${RUNTIME} yet: ${consequence}`,
  path
})

/**
 * One warning per declared key this runtime leaves inert, given the top-level blocks as read
 * (a key is declared when its read value is not `undefined`) and the inference transport.
 */
export const notActedOnWarnings = (blocks: Blocks, transport: "http" | "process" | undefined): ReadonlyArray<ManifestWarning> => {
  const warnings: Array<ManifestWarning> = []
  if (transport === "process") {
    warnings.push(warning(
      "inference.transport",
      "inference.transport: process",
      "this runtime drives a model only through a 'transport: http' driver artifact, so the capsule cannot run here"
    ))
  }
  for (const [block, key] of INERT_KEYS) {
    const declared = blocks[block] as Readonly<Record<string, unknown>> | undefined
    if (declared?.[key] !== undefined) {
      const path = `${block}.${key}`
      warnings.push(warning(path, path, "it was validated and has no effect when this runtime runs the capsule"))
    }
  }
  const lifecycle = blocks["lifecycle"] as Readonly<Record<string, unknown>> | undefined
  if (lifecycle?.["conversation"] === "threaded") {
    warnings.push(warning("lifecycle.conversation", "lifecycle.conversation: threaded", "every task starts a fresh conversation, as under 'stateless'"))
  }
  const artifacts = Array.isArray(blocks["artifacts"]) ? blocks["artifacts"] as ReadonlyArray<Readonly<Record<string, unknown>> | null> : []
  artifacts.forEach((artifact, index) => {
    if (artifact?.["runtime"] === "hook") {
      warnings.push(warning(`artifacts[${index}]`, `runtime: hook (artifact '${String(artifact["name"])}')`, "hooks are not run, so the capsule runs without it"))
    }
  })
  return warnings
}
