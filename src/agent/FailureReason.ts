/**
 * The reason a failed agent task gives the person who sent it (its status message, `watch`,
 * `send`, `out/result.txt`), said in the manifest's terms:
 *
 * - a request through the inference gateway names the configured `inference.endpoint` (without
 *   userinfo), never the gateway's `http://127.0.0.1:9` placeholder;
 * - a request the network grant denied names the grant and the key to change
 *   (`capabilities.network.allow does not cover api.example.com:443; add it to …`);
 * - a provider that could not be reached at all (connection refused, no such host, timed out)
 *   asks whether the model server is running at the configured endpoint;
 * - the API key, the gateway's rendered auth header value and any auth header the text quotes
 *   are replaced with `[redacted]`.
 */
import { Either, Redacted } from "effect"
import type { PreparedAgent } from "./AgentLaunch.js"
import { parseAllowList } from "../project/NetworkPolicy.js"
import { allows, type NetworkRule } from "../project/NetworkMatch.js"
import { GATEWAY_AUTHORITY } from "../sandbox/host/GatewayRewrite.js"
import { credentialPatterns, matchesPattern } from "../sandbox/grants/EnvGrant.js"

export interface ReasonContext {
  /** `inference.endpoint` as configured. */
  readonly endpoint: string | undefined
  /** Values never to be shown (the key, the rendered auth header value). */
  readonly secrets: ReadonlyArray<string>
  /** `capabilities.network.allow`, parsed. */
  readonly ceiling: ReadonlyArray<NetworkRule>
  /** The driver's entry name, when its entry narrows the network grant. */
  readonly driverNarrows: string | undefined
}

export const reasonContext = (prepared: PreparedAgent): ReasonContext => {
  const { manifest } = prepared.project
  const apiKey = manifest.inference?.apiKey
  const header = prepared.driver.spec.grant.gateway?.value
  const entry = manifest.artifacts.find((artifact) => artifact.name === prepared.driver.name)
  return {
    endpoint: manifest.inference?.endpoint,
    secrets: [...(apiKey === undefined ? [] : [Redacted.value(apiKey)]), ...(header === undefined ? [] : [header])].filter((secret) => secret.length >= 4),
    ceiling: Either.getOrElse(parseAllowList(manifest.capabilities.network?.allow ?? []), () => []),
    driverNarrows: entry?.capabilities?.network?.allow === undefined ? undefined : entry.name
  }
}

/** `scheme://host` of the endpoint, no userinfo, no path. */
const originOf = (endpoint: string): string | undefined => {
  try {
    const url = new URL(endpoint)
    return `${url.protocol}//${url.host}`
  } catch {
    return undefined
  }
}

/** The transport errors of a request that reached no server (wasi:http's, and Node's). */
const UNREACHABLE = /failed: (connection-refused|connection-timeout|destination-not-found|destination-unavailable|DNS-error|dns-error|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT)\b/
const CHECK = "; is the model server running at "

const pathOf = (endpoint: string): string => {
  try {
    return new URL(endpoint).pathname.replace(/\/$/, "")
  } catch {
    return ""
  }
}

const GATEWAY = new RegExp(`https?://${GATEWAY_AUTHORITY.replace(/\./g, "\\.")}(?![0-9])`, "g")
const AUTH_HEADER = /\b(authorization|proxy-authorization|x-api-key|api-key)(["']?\s*[:=]\s*["']?)(bearer\s+|basic\s+)?[^\s"',;]+/gi
const DENIED = /request to (\S+) was denied by the network grant \(HTTP-request-denied\)(?:; allow its host in capabilities\.network\.allow)?/

const hostPort = (text: string): { readonly scheme: string; readonly host: string; readonly port: number; readonly label: string } | undefined => {
  try {
    const url = new URL(text)
    const scheme = url.protocol.slice(0, -1)
    const port = url.port === "" ? (scheme === "https" ? 443 : 80) : Number(url.port)
    return { scheme, host: url.hostname.toLowerCase(), port, label: `${url.hostname}:${port}` }
  } catch {
    return undefined
  }
}

/** The text with the gateway named as the endpoint, a denial explained, and secrets redacted. */
export const explainFailure = (text: string, context: ReasonContext): string => {
  let out = text
  const origin = context.endpoint === undefined ? undefined : originOf(context.endpoint)
  if (origin !== undefined) out = out.replace(GATEWAY, origin)
  out = out.replace(DENIED, (whole, url: string) => {
    const target = hostPort(url)
    if (target === undefined) return whole
    const key = context.driverNarrows !== undefined && allows(context.ceiling, target)
      ? `artifacts[${context.driverNarrows}].capabilities.network.allow`
      : "capabilities.network.allow"
    return `request to ${url} was denied: ${key} does not cover ${target.label}; add it to ${key}`
  })
  // The provider could not be reached at all: say where it was looked for and what to check.
  if (origin !== undefined && UNREACHABLE.test(out) && !out.includes(CHECK)) {
    out = `${out}${CHECK}${origin}${pathOf(context.endpoint!)} (inference.endpoint)? a local server (Ollama, vLLM, llama.cpp) must be started first`
  }
  for (const secret of context.secrets) out = out.split(secret).join("[redacted]")
  return out.replace(AUTH_HEADER, (_whole, name: string, sep: string) => `${name}${sep}[redacted]`)
}

/** What a failed task's status says: `session ended: <reason>` (the reference's words, then why). */
export const failedMessage = (sessionEnded: string, resultText: string): string => {
  const reason = resultText.replace(/^error:\s*/, "").trim()
  return reason === "" ? sessionEnded : `${sessionEnded}: ${reason}`
}

/**
 * The values no failure text may quote: the inference key, and every host variable a guest or
 * command is never given (credential-shaped names, `shell.strip_env` patterns).
 */
export const secretsOf = (prepared: PreparedAgent): ReadonlyArray<string> => {
  const patterns = [...credentialPatterns, ...(prepared.project.manifest.capabilities.shell?.stripEnv ?? [])]
  const apiKey = prepared.project.manifest.inference?.apiKey
  return [
    ...(apiKey === undefined ? [] : [Redacted.value(apiKey)]),
    ...Object.entries(prepared.hostEnv).flatMap(([name, value]) => value !== undefined && patterns.some((pattern) => matchesPattern(name, pattern)) ? [value] : [])
  ]
}
