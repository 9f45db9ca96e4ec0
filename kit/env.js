// capsule-runtime/tool, env: the tool's config and environment. Composed in when the world imports
// wasi:cli/environment; `$environment` is the composer's binding module. A tool sees its entry's
// `config:` (as MURMUR_ARTIFACT_CONFIG) and the names capabilities.env.allow lets through.

const environmentMap = () => new Map($environment.getEnvironment());

/** The tool's `config:` from its manifest entry, parsed ({} when it has none). */
export function config() {
  const raw = environmentMap().get("MURMUR_ARTIFACT_CONFIG");
  if (raw === undefined || raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new ToolError("the tool's config is not JSON: " + describeThrown(error), { code: "bad-config" });
  }
}

/** An environment variable the grant lets through, else undefined. */
export function env(name) {
  return environmentMap().get(name);
}
