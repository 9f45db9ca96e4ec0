/**
 * What `validate` checks beyond the manifest's own parse, read from the raw YAML so they run
 * even when the parse refused it (every problem in one pass): each artifact's files resolve (a
 * `source:` path, else the registry install path), a source directory has been built, and an
 * inference endpoint a networking driver will call is covered by `capabilities.network.allow`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { Either } from "effect"
import { parse } from "yaml"
import { allows } from "../project/NetworkMatch.js"

export interface Diagnostic {
  readonly code: string
  readonly message: string
  /** Dotted manifest path a warning is about. */
  readonly path?: string
}
import { parseAllowList, peerUrlTarget } from "../project/NetworkPolicy.js"

type Yaml = { readonly [key: string]: unknown }

const asMap = (value: unknown): Yaml | undefined => typeof value === "object" && value !== null && !Array.isArray(value) ? value as Yaml : undefined

const readYaml = (file: string): Yaml | undefined => {
  try {
    return asMap(parse(readFileSync(file, "utf8")))
  } catch {
    return undefined
  }
}

/** A driver calls its endpoint when it declares inference_auth or its world imports wasi:http. */
const driverCallsOut = (dir: string): boolean => {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return true
  if (asMap(readYaml(join(dir, "murmur.yaml")))?.["inference_auth"] !== undefined) return true
  const wit = join(dir, "world.wit")
  if (existsSync(wit)) return /import\s+wasi:http\//.test(readFileSync(wit, "utf8"))
  // A prebuilt driver of unknown make: assume it calls its endpoint, as most do.
  return true
}

export interface Checked {
  readonly errors: ReadonlyArray<Diagnostic>
  readonly warnings: ReadonlyArray<Diagnostic>
}

export const checkCapsuleFiles = (directory: string, text: string): Checked => {
  const errors: Array<Diagnostic> = []
  const warnings: Array<Diagnostic> = []
  let manifest: Yaml | undefined
  try {
    manifest = asMap(parse(text))
  } catch {
    return { errors, warnings }
  }
  if (manifest === undefined || typeof manifest["runtime"] === "string") return { errors, warnings }
  const root = resolve(directory)
  const locations = new Map<string, string>()
  const artifacts = Array.isArray(manifest["artifacts"]) ? manifest["artifacts"] : []
  artifacts.forEach((raw, index) => {
    const artifact = asMap(raw)
    if (artifact === undefined) return
    const name = typeof artifact["name"] === "string" ? artifact["name"] : `#${index}`
    const version = typeof artifact["version"] === "string" ? artifact["version"] : "local"
    const source = typeof artifact["source"] === "string" ? artifact["source"] : undefined
    const location = source !== undefined ? resolve(root, source) : join(root, ".murmur", "artifacts", name, version)
    locations.set(name, location)
    const path = `artifacts[${index}]${source === undefined ? "" : ".source"}`
    if (!existsSync(location)) {
      // A registry artifact may still be installed before the run; a missing `source:` cannot.
      if (source !== undefined) {
        errors.push({ code: "E-VAL-001", message: `artifact '${name}': source '${source}' does not exist (resolved to ${location})`, path })
      } else {
        warnings.push({ code: "W-VAL-002", message: `artifact '${name}@${version}' is not installed (looked in ${location})`, path })
      }
      return
    }
    if (artifact["runtime"] === "skill" || !statSync(location).isDirectory()) return
    const own = readYaml(join(location, "murmur.yaml"))
    if (own?.["implementation"] === "native" || own?.["runtime"] === "skill") return
    const wasm = readdirSync(location).filter((file) => file.endsWith(".wasm"))
    if (wasm.length === 0) {
      errors.push({
        code: "E-VAL-002",
        message: existsSync(join(location, "world.wit"))
          ? `artifact '${name}': ${location} has sources but no component yet; run: capsule-runtime build ${directory}`
          : `artifact '${name}': no .wasm component in ${location}`,
        path
      })
    }
  })
  const inference = asMap(manifest["inference"])
  const endpoint = typeof inference?.["endpoint"] === "string" ? inference["endpoint"] : undefined
  const driverName = asMap(inference?.["driver"])?.["artifact"]
  const driverDir = typeof driverName === "string" ? locations.get(driverName) : undefined
  if (endpoint !== undefined && (driverDir === undefined || driverCallsOut(driverDir))) {
    const network = asMap(asMap(manifest["capabilities"])?.["network"])
    const allow = Array.isArray(network?.["allow"]) ? network["allow"].filter((entry): entry is string => typeof entry === "string") : []
    const rules = parseAllowList(allow)
    const target = peerUrlTarget(endpoint)
    if (Either.isRight(rules) && Either.isRight(target) && !allows(rules.right, target.right)) {
      const origin = (() => {
        try {
          return new URL(endpoint).origin
        } catch {
          return endpoint
        }
      })()
      warnings.push({
        code: "W-VAL-001",
        message: `inference.endpoint ${origin} is not covered by capabilities.network.allow, so the driver's requests to it will be denied; add "${origin}" to capabilities.network.allow`,
        path: "capabilities.network.allow"
      })
    }
  }
  return { errors, warnings }
}
