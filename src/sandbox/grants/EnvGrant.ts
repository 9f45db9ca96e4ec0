/**
 * The environment a WASM guest sees (reference §3.4). Nothing is inherited: the map is built in
 * order from the host values of `capabilities.env.allow` names, minus every credential-shaped
 * name and every `shell.strip_env` pattern, then `MURMUR_ARTIFACT_CONFIG` for an artifact that
 * declares `config:`, then the runtime's own `MURMUR_*` variables, which always win. The host
 * environment is a parameter, never read here.
 */

/** Built-in credential patterns stripped from every guest and subprocess environment. */
export const credentialPatterns: ReadonlyArray<string> = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "GOOGLE_API_KEY",
  "HUGGING_FACE_HUB_TOKEN",
  "NEXUS_API_KEY",
  "AWS_*",
  "GITHUB_TOKEN",
  "GH_TOKEN",
  "DOCKER_*",
  "KUBECONFIG",
  "NPM_TOKEN",
  "PYPI_TOKEN",
  "CARGO_REGISTRY_TOKEN",
  "*_API_KEY"
]

/** Runtime-owned: its value comes from the artifact's own `config:` block, never from the host. */
export const ARTIFACT_CONFIG_ENV = "MURMUR_ARTIFACT_CONFIG"

/**
 * Case-sensitive pattern match: `*middle*` (contains), `*suffix`, `prefix*`, else exact. A lone
 * `*` matches every name.
 */
export const matchesPattern = (name: string, pattern: string): boolean => {
  if (pattern.startsWith("*")) {
    const rest = pattern.slice(1)
    return rest.endsWith("*") ? name.includes(rest.slice(0, -1)) : name.endsWith(rest)
  }
  if (pattern.endsWith("*")) return name.startsWith(pattern.slice(0, -1))
  return name === pattern
}

/** The first built-in or `strip_env` pattern that removes `name`, if any. */
export const strippingPattern = (name: string, stripPatterns: ReadonlyArray<string>): string | undefined =>
  credentialPatterns.find((p) => matchesPattern(name, p)) ?? stripPatterns.find((p) => matchesPattern(name, p))

export interface GuestEnvInput {
  /** The host's environment, passed in by the layer that owns `process.env`. */
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** `capabilities.env.allow`. */
  readonly allow: ReadonlyArray<string>
  /** `capabilities.shell.strip_env`. */
  readonly stripPatterns: ReadonlyArray<string>
  /** The artifact's `config:` block, already serialized as compact JSON. */
  readonly artifactConfig?: string | undefined
  /** The runtime's own variables (inference, identity), in the order they are set. */
  readonly runtimeVars: Readonly<Record<string, string>>
}

/**
 * The guest's environment. Allowed names unset on the host are simply absent. Allow-copied names
 * come first in code-unit order (the reference builds them in a sorted map), runtime variables last.
 */
export const guestEnv = (input: GuestEnvInput): Record<string, string> => {
  const env = new Map<string, string>()
  for (const name of [...new Set(input.allow)].sort()) {
    if (name === ARTIFACT_CONFIG_ENV || !Object.hasOwn(input.hostEnv, name)) continue
    const value = input.hostEnv[name]
    if (value !== undefined && strippingPattern(name, input.stripPatterns) === undefined) env.set(name, value)
  }
  const later = input.artifactConfig === undefined
    ? Object.entries(input.runtimeVars)
    : [[ARTIFACT_CONFIG_ENV, input.artifactConfig] as const, ...Object.entries(input.runtimeVars)]
  for (const [name, value] of later) {
    env.delete(name)
    env.set(name, value)
  }
  return Object.fromEntries(env)
}

export interface RefusedEntry {
  readonly name: string
  readonly pattern: string
}

/**
 * `env.allow` entries the credential filter would strip, each with the pattern that catches it.
 * From 0.3-late the reference refuses such a manifest at launch instead of stripping silently; the
 * caller decides which to do.
 */
export const refusedAllowEntries = (
  allow: ReadonlyArray<string>,
  stripPatterns: ReadonlyArray<string>
): ReadonlyArray<RefusedEntry> =>
  [...new Set(allow)].flatMap((name) => {
    const pattern = strippingPattern(name, stripPatterns)
    return pattern === undefined ? [] : [{ name, pattern }]
  })
