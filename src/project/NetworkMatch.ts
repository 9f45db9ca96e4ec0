/**
 * The network grant's matcher (reference §3.3), the part a guest worker needs: no `effect`
 * import, so loading it costs a guest's start nothing. Parsing and narrowing the allow list
 * live in NetworkPolicy.ts.
 */

/** A parsed `network.allow` entry (NetworkPolicy's `NetworkRule` schema decodes to this). */
export interface NetworkRule {
  readonly scheme?: "http" | "https" | undefined
  readonly host: string
  readonly port?: number | undefined
}

/** Where a request goes, as the matcher sees it. `port` is unset only for a non-http(s) scheme. */
export interface RequestTarget {
  readonly scheme: string
  readonly host: string
  readonly port: number | undefined
}

/** An outgoing request's scheme and authority as the guest set them. */
export interface OutgoingRequest {
  readonly scheme?: string | undefined
  readonly authority?: string | undefined
  /** Decides the scheme when the request names none (`https` with TLS, else `http`). */
  readonly useTls?: boolean | undefined
}

export const defaultPort = (scheme: string): number | undefined =>
  scheme === "http" ? 80 : scheme === "https" ? 443 : undefined


/** `host[:port]` without userinfo; an IP literal keeps its brackets, text after `]` is the port part. */
export const splitHostPort = (hostPort: string): { readonly host: string; readonly port: string | undefined } => {
  if (hostPort.startsWith("[")) {
    const close = hostPort.indexOf("]")
    if (close < 0) return { host: hostPort, port: undefined }
    const after = hostPort.slice(close + 1)
    return { host: hostPort.slice(0, close + 1), port: after === "" ? undefined : after.replace(/^:/, "") }
  }
  const colon = hostPort.indexOf(":")
  return colon < 0
    ? { host: hostPort, port: undefined }
    : { host: hostPort.slice(0, colon), port: hostPort.slice(colon + 1) }
}

/**
 * Splits an outgoing request into what the matcher compares. No authority means no target, and
 * the request is denied. The port is the explicit one, else the scheme's default.
 */
export const requestTarget = (request: OutgoingRequest): RequestTarget | undefined => {
  const authority = request.authority
  if (authority === undefined || authority === "") return undefined
  const scheme = request.scheme === undefined || request.scheme === ""
    ? (request.useTls === true ? "https" : "http")
    : request.scheme.toLowerCase()
  return {
    scheme,
    host: authorityHost(authority).toLowerCase(),
    port: authorityPort(authority) ?? defaultPort(scheme)
  }
}

/** The host of `[userinfo@]host[:port]`; an IP literal keeps its brackets. */
const authorityHost = (authority: string): string => splitHostPort(authority.slice(authority.lastIndexOf("@") + 1)).host

/** The digits after the last `:`, when they form a u16. */
const authorityPort = (authority: string): number | undefined => {
  const colon = authority.lastIndexOf(":")
  if (colon < 0) return undefined
  const digits = authority.slice(colon + 1)
  if (!/^\+?[0-9]+$/.test(digits)) return undefined
  const port = Number(digits)
  return port <= 65535 ? port : undefined
}

/** Host byte-equal; the rule's scheme and port, when set, equal the target's. */
export const ruleMatches = (rule: NetworkRule, target: RequestTarget): boolean =>
  rule.host === target.host &&
  (rule.scheme === undefined || rule.scheme === target.scheme) &&
  (rule.port === undefined || rule.port === target.port)

export const allows = (rules: ReadonlyArray<NetworkRule>, target: RequestTarget): boolean =>
  rules.some((rule) => ruleMatches(rule, target))

/** The outgoing-handler check: `false` means answer `HTTP-request-denied`. */
export const matchRequest = (rules: ReadonlyArray<NetworkRule>, request: OutgoingRequest): boolean => {
  const target = requestTarget(request)
  return target !== undefined && allows(rules, target)
}

