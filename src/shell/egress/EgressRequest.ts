/**
 * The one request a command's proxy connection opens with (./EgressProxy.ts): `CONNECT host:port`
 * for a tunnel (TLS, as `HTTPS_PROXY` clients use it), or an absolute-form `http://` request to
 * forward. Pure: bytes in, a target and the head to send upstream out, or the status to refuse
 * with. A forwarded head is rewritten to origin form with its `Host` taken from the checked URL
 * (so a `Host` header cannot name another site than the one the policy saw), the proxy's own
 * hop-by-hop headers dropped and `Connection: close` set, since each proxy connection carries one
 * request to one checked host.
 */

export interface EgressTarget {
  /** `https` for a tunnel (what CONNECT carries), `http` for a forwarded request. */
  readonly scheme: "http" | "https"
  /** WHATWG-normalized (lowercase, IDNA, IPv4 shorthand resolved), as `network.allow` entries are; IPv6 in brackets. */
  readonly host: string
  readonly port: number
}

export type ParsedRequest =
  | {
    readonly _tag: "Connect"
    readonly method: "CONNECT"
    readonly target: EgressTarget
  }
  | {
    readonly _tag: "Forward"
    readonly method: string
    readonly target: EgressTarget
    /** The head to send upstream. */
    readonly head: Buffer
    /** Body bytes after the head that belong to this request; `undefined`: relayed until the client closes (chunked). */
    readonly bodyBytes: number | undefined
  }
  | {
    readonly _tag: "Refused"
    readonly method: string | undefined
    readonly status: 400 | 405 | 505
    readonly reason: string
  }

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const HOP_BY_HOP = new Set(["host", "connection", "proxy-connection", "proxy-authorization", "keep-alive", "te", "upgrade"])

/** Where the head ends (the index after `\r\n\r\n`), or -1. */
export const headEnd = (bytes: Buffer): number => {
  const at = bytes.indexOf("\r\n\r\n")
  return at < 0 ? -1 : at + 4
}

const refused = (method: string | undefined, status: 400 | 405 | 505, reason: string): ParsedRequest => ({ _tag: "Refused", method, status, reason })

/** `host[:port]` as the WHATWG parser reads it after `http://`; `undefined` when it is not one. */
const authorityTarget = (authority: string, scheme: "http" | "https", defaultPort: number | undefined): EgressTarget | undefined => {
  if (authority === "" || /[/?#@\\\s]/.test(authority)) return undefined
  let url: URL
  try {
    url = new URL(`http://${authority}`)
  } catch {
    return undefined
  }
  const explicit = /:(\d+)$/.exec(authority)?.[1]
  const port = explicit !== undefined ? Number(explicit) : defaultPort
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535 || url.hostname === "") return undefined
  return { scheme, host: url.hostname.toLowerCase(), port }
}

/** Parses the head (`head` holds exactly the bytes up to and including `\r\n\r\n`). */
export const parseRequest = (head: Buffer): ParsedRequest => {
  const lines = head.toString("latin1").slice(0, -4).split("\r\n")
  const [method, target, version, ...extra] = (lines[0] ?? "").split(" ")
  if (method === undefined || !TOKEN.test(method) || target === undefined || version === undefined || extra.length > 0) {
    return refused(undefined, 400, "malformed request line")
  }
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") return refused(method, 505, `unsupported version ${version}`)
  const headers: Array<readonly [string, string]> = []
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":")
    const name = colon < 0 ? "" : line.slice(0, colon)
    if (!TOKEN.test(name)) return refused(method, 400, "malformed header line")
    headers.push([name, line.slice(colon + 1).trim()])
  }
  if (method === "CONNECT") {
    const connectTarget = authorityTarget(target, "https", undefined)
    return connectTarget === undefined
      ? refused(method, 400, "CONNECT needs host:port")
      : { _tag: "Connect", method, target: connectTarget }
  }
  if (!target.toLowerCase().startsWith("http://")) {
    return refused(method, target.toLowerCase().startsWith("https://") ? 405 : 400, "only absolute http:// requests are forwarded (use CONNECT for https)")
  }
  const authority = target.slice("http://".length).split(/[/?#]/, 1)[0] ?? ""
  const forwardTarget = authorityTarget(authority, "http", 80)
  if (forwardTarget === undefined) return refused(method, 400, "bad request target")
  // The path and query as the command wrote them (a fragment is never sent).
  const rest = target.slice("http://".length + authority.length).split("#", 1)[0]!
  const originForm = rest === "" ? "/" : rest.startsWith("/") ? rest : `/${rest}`
  const value = (name: string) => headers.filter(([key]) => key.toLowerCase() === name).map(([, v]) => v)
  const lengths = new Set(value("content-length"))
  if (lengths.size > 1 || [...lengths].some((length) => !/^\d{1,15}$/.test(length))) return refused(method, 400, "bad Content-Length")
  const chunked = value("transfer-encoding").length > 0
  const bodyBytes = chunked ? undefined : lengths.size === 0 ? 0 : Number([...lengths][0])
  const kept = headers.filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase()))
  const hostHeader = forwardTarget.port === 80 ? forwardTarget.host : `${forwardTarget.host}:${forwardTarget.port}`
  const text = [
    `${method} ${originForm} ${version}`,
    `Host: ${hostHeader}`,
    ...kept.map(([name, v]) => `${name}: ${v}`),
    "Connection: close",
    "",
    ""
  ].join("\r\n")
  return { _tag: "Forward", method, target: forwardTarget, head: Buffer.from(text, "latin1"), bodyBytes }
}
