/**
 * The three `inference:` values that need more than a type check (spec §1.5): the endpoint (any
 * `https://` host; plain `http://` only to `localhost` or a loopback IP literal), the api key (a
 * literal, or `${UPPER_SNAKE}` resolved from the host environment the caller passes, held as a
 * `Redacted` so it never prints) and `driver.config` (a mapping, lowered to the compact JSON a
 * driver reads as `MURMUR_INFERENCE_DRIVER_CONFIG`, keys in declaration order).
 */
import { Redacted } from "effect"
import { isMap, isScalar, isSeq } from "yaml"
import type { Node } from "yaml"
import { invalidInference, missingInferenceEnvVar } from "./ManifestError.js"
import { deref, isIntegerScalar, isNull, type ReadContext, refuse, scalarText } from "./YamlReader.js"

export const INFERENCE_DRIVER_CONFIG_ENV = "MURMUR_INFERENCE_DRIVER_CONFIG"

/** Why the `url` crate would refuse `endpoint`, in its words (WHATWG `URL` gives no reason). */
const urlParseProblem = (endpoint: string): string => {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(endpoint)) return "relative URL without a base"
  const authority = endpoint.replace(/^[^:]*:[/\\]*/, "").split(/[/?#\\]/)[0] ?? ""
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1)
  if (hostPort === "" || hostPort.startsWith(":")) return "empty host"
  if (hostPort.startsWith("[")) return "invalid IPv6 address"
  const port = /:([^:]*)$/.exec(hostPort)?.[1]
  if (port !== undefined && (!/^[0-9]*$/.test(port) || Number(port) > 65535)) return "invalid port number"
  const host = port === undefined ? hostPort : hostPort.slice(0, hostPort.length - port.length - 1)
  if (/^(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+))*\.?$/i.test(host)) return "invalid IPv4 address"
  return "invalid domain character"
}

const isLoopbackIp = (host: string): boolean => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  if (bare === "::1") return true
  const octets = bare.split(".")
  return octets.length === 4 && octets.every((octet) => /^[0-9]{1,3}$/.test(octet)) && octets[0] === "127"
}

/**
 * Refuses an endpoint that would send inference traffic unencrypted off the host. WHATWG `URL`
 * normalizes hosts like the reference's `url` crate (`127.1` is `127.0.0.1`, `[0::1]` is `[::1]`);
 * unlike the 0.3 reference, a bracketed IPv6 loopback (`http://[::1]`) is accepted.
 */
export const checkEndpoint = (endpoint: string): void => {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return refuse(invalidInference("inference.endpoint", `failed to parse '${endpoint}' as a URL: ${urlParseProblem(endpoint)}`))
  }
  const scheme = url.protocol.replace(/:$/, "")
  if (scheme === "https") return
  if (scheme !== "http") {
    return refuse(invalidInference("inference.endpoint", `unsupported scheme '${scheme}' in '${endpoint}' — expected http or https`))
  }
  const host = url.hostname
  if (host === "localhost" || isLoopbackIp(host)) return
  refuse(invalidInference(
    "inference.endpoint",
    `'${endpoint}' uses plain http:// with non-loopback host '${host}' — use https:// for remote endpoints, or http://localhost or a loopback IP literal for local inference`
  ))
}

const ENV_REFERENCE = /^\$\{([A-Z_][A-Z0-9_]*)\}$/

export interface ResolvedApiKey {
  readonly apiKey: Redacted.Redacted<string>
  /** The host variable it came from, when it was a `${VAR}` reference. */
  readonly apiKeyEnv?: string
}

/**
 * `inference.api_key` as written (trimmed, non-empty): `${NAME}` (upper snake case) is looked up
 * in `env` and must be set (an empty value counts as set); anything else is the key itself.
 */
export const resolveApiKey = (written: string, env: Readonly<Record<string, string | undefined>>): ResolvedApiKey => {
  const variable = ENV_REFERENCE.exec(written)?.[1]
  if (variable === undefined) return { apiKey: Redacted.make(written) }
  const value = Object.hasOwn(env, variable) ? env[variable] : undefined
  if (value === undefined) return refuse(missingInferenceEnvVar(written))
  return { apiKey: Redacted.make(value), apiKeyEnv: variable }
}

class NotJson {
  constructor(readonly reason: string) {}
}

/** serde_json's number text: integers bare, floats with a fraction (`1.0`), non-finite as null. */
const jsonNumber = (node: Node, value: number): string => {
  if (!Number.isFinite(value)) return "null"
  if (isScalar(node) && isIntegerScalar(node)) return String(value)
  return Number.isInteger(value) && Math.abs(value) < 1e16 ? `${value}.0` : JSON.stringify(value)
}

const toJson = (ctx: ReadContext, input: Node | null | undefined): string => {
  const node = deref(ctx, input)
  if (node === undefined || node === null || isNull(node)) return "null"
  if (isMap(node)) {
    const fields = node.items.map((pair) => {
      const key = deref(ctx, pair.key as Node | null)
      if (!isScalar(key) || key.value === null || typeof key.value === "object") throw new NotJson("key must be a string")
      return `${JSON.stringify(scalarText(key))}:${toJson(ctx, pair.value as Node | null)}`
    })
    return `{${fields.join(",")}}`
  }
  if (isSeq(node)) return `[${node.items.map((item) => toJson(ctx, item as Node | null)).join(",")}]`
  if (!isScalar(node)) return "null"
  const value: unknown = node.value
  if (typeof value === "number") return jsonNumber(node, value)
  if (typeof value === "bigint") return value.toString()
  if (typeof value === "boolean") return String(value)
  return JSON.stringify(String(value))
}

/**
 * `driver.config` as compact JSON, or `undefined` when absent or null. A mapping is required; a
 * string, number or boolean key becomes its text, any other key is refused (as serde_json does).
 */
export const driverConfigJson = (ctx: ReadContext, input: Node | null | undefined): string | undefined => {
  const node = deref(ctx, input)
  if (node === undefined || node === null || isNull(node)) return undefined
  if (!isMap(node)) return refuse(invalidInference("inference.driver.config", "expected mapping/object"))
  try {
    return toJson(ctx, node)
  } catch (cause) {
    if (!(cause instanceof NotJson)) throw cause
    return refuse(invalidInference("inference.driver.config", `failed to convert to JSON: ${cause.reason}`))
  }
}
