/**
 * The network grant (reference §3.3): `capabilities.network.allow` entries parsed into rules, the
 * matcher the wasi-http outgoing handler and `message/send` consult before any connection, and
 * per-artifact narrowing of a tool's or driver's declared list to the capsule-wide ceiling.
 *
 * Entries are parsed as WHATWG URLs, which is what the reference's `url` crate implements, so
 * hosts come out lowercased, IDNA-encoded and with IPv4 shorthand normalized the same way. A
 * request host is only lowercased (it is compared byte for byte, with no DNS and no wildcards).
 */
import { Either, Option, Schema } from "effect"
import { allows, defaultPort, type RequestTarget, requestTarget, splitHostPort } from "./NetworkMatch.js"

export const NetworkRule = Schema.Struct({
  scheme: Schema.optional(Schema.Literal("http", "https")),
  host: Schema.String,
  port: Schema.optional(Schema.Int)
})
export type NetworkRule = typeof NetworkRule.Type

/** `E-CAP-001`: a `network.allow` entry that does not parse. */
export class NetworkRuleError extends Schema.TaggedError<NetworkRuleError>()("NetworkRuleError", {
  entry: Schema.String,
  reason: Schema.String
}) {
  static readonly code = "E-CAP-001"

  override get message(): string {
    return `invalid network capability allow entry '${this.entry}': ${this.reason}`
  }
}

export const parseAllowRule = (entry: string): Either.Either<NetworkRule, NetworkRuleError> => {
  const trimmed = entry.trim()
  if (trimmed === "") return Either.left(new NetworkRuleError({ entry, reason: "entry must not be empty" }))
  return trimmed.includes("://") ? parseUrlRule(trimmed) : parseHostRule(trimmed)
}

/** Parses every entry; the first bad one fails the list. */
export const parseAllowList = (
  entries: ReadonlyArray<string>
): Either.Either<ReadonlyArray<NetworkRule>, NetworkRuleError> => Either.all(entries.map(parseAllowRule))

const parseUrlRule = (entry: string): Either.Either<NetworkRule, NetworkRuleError> => {
  const fail = (reason: string) => Either.left(new NetworkRuleError({ entry, reason }))
  const url = parseUrl(entry)
  if (typeof url === "string") return fail(`invalid URL: ${url}`)
  const scheme = url.protocol.slice(0, -1).toLowerCase()
  if (scheme !== "http" && scheme !== "https") {
    return fail(`unsupported URL scheme '${scheme}' (expected http or https)`)
  }
  if (hasQueryOrFragment(entry) || (url.pathname !== "" && url.pathname !== "/")) {
    return fail("URL allow entries must not include path, query, or fragment")
  }
  const host = url.hostname.toLowerCase()
  if (host === "") return fail("URL allow entries must include a host")
  const port = url.port === "" ? defaultPort(scheme) : Number(url.port)
  return Either.right({ scheme, host, ...(port === undefined ? {} : { port }) })
}

const parseHostRule = (entry: string): Either.Either<NetworkRule, NetworkRuleError> => {
  const fail = (reason: string) => Either.left(new NetworkRuleError({ entry, reason }))
  const url = parseUrl(`http://${entry}`)
  if (typeof url === "string") return fail(`invalid host allow entry: ${url}`)
  if (url.pathname !== "/" || hasQueryOrFragment(entry)) {
    return fail("host allow entries must be host or host:port only")
  }
  const host = url.hostname.toLowerCase()
  if (host === "") return fail("host allow entries must include a host")
  // As in the reference, an explicit `:80` is the http default and reads back as no port.
  return Either.right({ host, ...(url.port === "" ? {} : { port: Number(url.port) }) })
}

/** In a parsed URL, any `?` or `#` opens a query or fragment, even an empty one. */
const hasQueryOrFragment = (entry: string): boolean => entry.includes("?") || entry.includes("#")

/** The parsed URL, or the reason it does not parse in the `url` crate's words. */
const parseUrl = (input: string): URL | string => {
  try {
    return new URL(input)
  } catch {
    return whyInvalid(input)
  }
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/

/** Best-effort naming of a parse failure, since WHATWG `URL` only says "Invalid URL". */
const whyInvalid = (input: string): string => {
  const colon = input.indexOf(":")
  if (colon <= 0 || !SCHEME.test(input.slice(0, colon))) return "relative URL without a base"
  const authority = input.slice(input.indexOf("://") + 3).split(/[/?#\\]/, 1)[0] ?? ""
  const { host, port } = splitHostPort(authority.slice(authority.lastIndexOf("@") + 1))
  if (host === "") return "empty host"
  if (port !== undefined && (!/^[0-9]*$/.test(port) || Number(port) > 65535)) return "invalid port number"
  if (host.startsWith("[")) return "invalid IPv6 address"
  const lastLabel = host.split(".").filter((label) => label !== "").pop() ?? ""
  return /^[0-9]/.test(lastLabel) ? "invalid IPv4 address" : "invalid domain character"
}

/**
 * Whether the ceiling rule already permits everything `narrower` permits. An unset scheme or port
 * on the ceiling is a wildcard; on `narrower` it is broader than any set one, so a bare host is not
 * covered by a scheme-bound ceiling rule.
 */
export const covers = (ceiling: NetworkRule, narrower: NetworkRule): boolean =>
  ceiling.host === narrower.host &&
  (ceiling.scheme === undefined || ceiling.scheme === narrower.scheme) &&
  (ceiling.port === undefined || ceiling.port === narrower.port)

export interface Narrowed {
  readonly rules: ReadonlyArray<NetworkRule>
  /** Declared entries no ceiling rule covers, as written. */
  readonly dropped: ReadonlyArray<string>
  /** At most one `W-SEC-007` line naming every dropped entry. */
  readonly warnings: ReadonlyArray<string>
}

const DIAGNOSTICS_URL = "https://docs.murmur.nexus/murmur-nexus/murmur/reference/diagnostics/"

export const securityWarningLink = (code: string): string => `${DIAGNOSTICS_URL}#${code.toLowerCase()}`

/**
 * A tool's or driver's effective rules. `declared` undefined (no `network` block) keeps the
 * ceiling; an explicit `[]` denies everything; any entry no ceiling rule covers is dropped and
 * reported. A bad declared entry fails with `E-CAP-001`, as staging does.
 */
export const narrow = (
  ceiling: ReadonlyArray<NetworkRule>,
  declared: ReadonlyArray<string> | undefined,
  artifactName: string
): Either.Either<Narrowed, NetworkRuleError> => {
  if (declared === undefined) return Either.right({ rules: ceiling, dropped: [], warnings: [] })
  return Either.map(parseAllowList(declared), (parsed) => {
    const rules: Array<NetworkRule> = []
    const dropped: Array<string> = []
    parsed.forEach((rule, i) => {
      if (ceiling.some((c) => covers(c, rule))) rules.push(rule)
      else dropped.push(declared[i]!)
    })
    return { rules, dropped, warnings: dropped.length === 0 ? [] : [narrowingWarning(artifactName, dropped)] }
  })
}

/** The reference's `W-SEC-007` text, without the `[capsule-runtime] ` log prefix. */
export const narrowingWarning = (artifactName: string, dropped: ReadonlyArray<string>): string =>
  `warning[W-SEC-007]: artifact '${artifactName}' declares capabilities.network.allow entries the ` +
  `capsule-wide ceiling does not allow (${dropped.join(", ")}) — they are dropped, not granted, because ` +
  `per-artifact capabilities can only narrow (${securityWarningLink("W-SEC-007")})`

/**
 * The target of a `message/send` peer URL: without `://` it is read as `http://…`. Fails with the
 * reference's "invalid peer URL" text when there is no usable authority.
 */
export const peerUrlTarget = (peerUrl: string): Either.Either<RequestTarget, string> => {
  const forParse = peerUrl.includes("://") ? peerUrl : `http://${peerUrl}`
  const sep = forParse.indexOf("://")
  const scheme = forParse.slice(0, sep)
  const authority = forParse.slice(sep + 3).split(/[/?#]/, 1)[0] ?? ""
  const invalid = (why?: string) => Either.left(`invalid peer URL '${peerUrl}'${why === undefined ? "" : `: ${why}`}`)
  if (!SCHEME.test(scheme)) return invalid("invalid scheme")
  if (!/^[A-Za-z0-9\-._~!$&'()*+,;=:@[\]%]*$/.test(authority)) return invalid("invalid uri character")
  const { port } = splitHostPort(authority.slice(authority.lastIndexOf("@") + 1))
  if (port !== undefined && !/^[0-9]*$/.test(port)) return invalid("invalid port number")
  return Option.match(Option.fromNullable(requestTarget({ scheme, authority })), {
    onNone: () => invalid(),
    onSome: (target) => Either.right(target)
  })
}

/**
 * The `message/send` gate: `Right` when some rule allows the peer, else the reference's
 * `network policy: '<peer-url>' not in <field>` error string (no connection is made).
 */
export const checkPeerUrl = (
  rules: ReadonlyArray<NetworkRule>,
  peerUrl: string,
  field = "capabilities.network.allow"
): Either.Either<void, string> =>
  Either.flatMap(peerUrlTarget(peerUrl), (target) =>
    allows(rules, target) ? Either.right(undefined) : Either.left(`network policy: '${peerUrl}' not in ${field}`))
