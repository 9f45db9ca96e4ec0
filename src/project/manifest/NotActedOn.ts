/**
 * `W-RUN-001`: keys of the 0.3 manifest that this runtime recognizes and validates with the
 * reference's rules but does not act on yet (the `warned` lines of ./ManifestKeys.ts), and
 * `W-SEC-008`: capsule-wide grants declared on an artifact entry, where they are inert. Never
 * silent: each declared one is named, so an operator knows the capsule runs here without it.
 */
import type { ManifestWarning } from "./ManifestError.js"
import { warnedRoots } from "./ManifestKeys.js"

const RUNTIME = "capsule-runtime (TypeScript)"

type Blocks = Readonly<Record<string, unknown>>

const ENTRY_PREFIX = "artifacts[].capabilities."

const valueAt = (root: unknown, keys: ReadonlyArray<string>): unknown =>
  keys.reduce<unknown>((node, key) => (node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key.replace(/\[\]$/, "")] : undefined), root)

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
  // The workdir budget is watched by the agent loop; a script capsule (no inference block) runs without it.
  if (blocks["inference"] === undefined && valueAt(blocks, ["capabilities", "resources", "workdir_max_bytes"]) !== undefined) {
    warnings.push(warning(
      "capabilities.resources.workdir_max_bytes",
      "capabilities.resources.workdir_max_bytes",
      "a script capsule's workdir is not watched (an agent capsule's is)"
    ))
  }
  const artifactList = Array.isArray(blocks["artifacts"]) ? blocks["artifacts"] as ReadonlyArray<Readonly<Record<string, unknown>> | null> : []
  for (const [path, consequence] of warnedRoots()) {
    const entryKey = path.startsWith(ENTRY_PREFIX) ? path.slice(ENTRY_PREFIX.length) : undefined
    if (entryKey === undefined) {
      if (valueAt(blocks, path.split(".")) !== undefined) warnings.push(warning(path, path, consequence))
      continue
    }
    artifactList.forEach((artifact, index) => {
      if (artifact === null || artifact["runtime"] === "hook") return
      const key = entryKey.replace(/\[\]$/, "")
      if (valueAt(artifact["capabilities"], key.split(".")) === undefined) return
      warnings.push({
        code: "W-SEC-008",
        message: `artifact '${String(artifact["name"])}' declares capabilities.${key}, which ${consequence}`,
        path: `artifacts[${index}].capabilities.${key}`
      })
    })
  }
  // Hooks run in the agent loop (../../hooks/Hooks.ts); a script capsule has none to call them.
  artifactList.forEach((artifact, index) => {
    if (artifact?.["runtime"] === "hook" && blocks["inference"] === undefined) {
      warnings.push(warning(`artifacts[${index}]`, `runtime: hook (artifact '${String(artifact["name"])}')`, "a script capsule has no agent loop to call hooks at, so it runs without it"))
    }
  })
  return warnings
}
