/**
 * Where a push may go. Webhook URLs come from clients, so each is an SSRF vector: a URL naming
 * (or resolving to) a loopback, private, link-local, carrier-grade NAT, multicast, unspecified or
 * cloud-metadata address is refused unless its host matches an operator's `--push-allow` pattern.
 * The check runs on the addresses a connection is about to use (`guardedLookup`, called for
 * every connection, with no connection reuse), so a name that resolves to a public address when
 * the config is made and to a private one later (DNS rebinding) is still refused.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import { isIP } from "node:net"

const v4 = (address: string): number => address.split(".").reduce((sum, part) => sum * 256 + Number(part), 0)

const v4Blocks: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, incl. the 169.254.169.254 metadata service
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, and broadcast
]

const inV4Block = (address: string) =>
  v4Blocks.some(([base, bits]) => (v4(address) >>> (32 - bits)) === (v4(base) >>> (32 - bits)))

/** Expands an IPv6 address to its eight groups. */
const groups = (address: string): Array<number> => {
  const [head, tail] = address.split("::") as [string, string | undefined]
  const parse = (part: string) => (part.length === 0 ? [] : part.split(":").flatMap((group) =>
    group.includes(".") ? [v4(group) >>> 16, v4(group) & 0xffff] : [Number.parseInt(group, 16)]))
  const front = parse(head)
  const back = tail === undefined ? [] : parse(tail)
  return [...front, ...Array(8 - front.length - back.length).fill(0), ...back]
}

/** Whether a resolved address is one a webhook may not reach by default. */
export const isForbiddenAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 4) return inV4Block(address)
  if (family !== 6) return true
  const g = groups(address.replace(/%.*$/, ""))
  if (g.every((group) => group === 0)) return true // ::
  if (g.slice(0, 7).every((group) => group === 0) && g[7] === 1) return true // ::1
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms carry a v4 address.
  if (g.slice(0, 5).every((group) => group === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return inV4Block(`${g[6]! >>> 8}.${g[6]! & 255}.${g[7]! >>> 8}.${g[7]! & 255}`)
  }
  const first = g[0]!
  return (first & 0xfe00) === 0xfc00 || // unique local fc00::/7 (incl. fd00:ec2::254, a metadata address)
    (first & 0xffc0) === 0xfe80 || // link-local fe80::/10
    (first & 0xff00) === 0xff00 || // multicast
    (first === 0x64 && g[1] === 0xff9b) || // NAT64 of v4 space
    first === 0x2002 // 6to4, which embeds any v4 address
}

/**
 * Whether the operator allowed `host` (`--push-allow`): a pattern is a host name, an IP address,
 * `*.suffix` for the suffix's subdomains, or `*` for every host.
 */
export const hostAllowed = (host: string, patterns: ReadonlyArray<string>): boolean => {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "")
  return patterns.some((pattern) => {
    const p = pattern.toLowerCase().replace(/^\[|\]$/g, "")
    return p === "*" || p === name || (p.startsWith("*.") && name.endsWith(p.slice(1)))
  })
}

export type TargetCheck = { readonly _tag: "Ok"; readonly url: URL } | { readonly _tag: "Refused"; readonly reason: string }

/** A webhook URL's own checks: http(s), no credentials in it, bounded, and no forbidden address literal. */
export const checkTarget = (raw: string, allow: ReadonlyArray<string>): TargetCheck => {
  if (raw.length > 2048) return { _tag: "Refused", reason: "the push URL is longer than 2048 characters" }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { _tag: "Refused", reason: `the push URL ${JSON.stringify(raw.slice(0, 200))} is not an absolute URL` }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { _tag: "Refused", reason: `the push URL must be http or https, not ${url.protocol}` }
  if (url.username !== "" || url.password !== "") {
    return { _tag: "Refused", reason: "the push URL must not carry credentials; use the config's token or authentication" }
  }
  const host = url.hostname.replace(/^\[|\]$/g, "")
  if (isIP(host) !== 0 && isForbiddenAddress(host) && !hostAllowed(host, allow)) {
    return { _tag: "Refused", reason: forbidden(host, host) }
  }
  return { _tag: "Ok", url }
}

const forbidden = (host: string, address: string) =>
  `the push URL's host ${host} ${host === address ? "is" : `resolves to ${address}, which is`} a loopback, private, link-local or metadata address; the operator can allow it (serve --push-allow ${host})`

export class PushTargetRefused extends Error {
  override readonly name = "PushTargetRefused"
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | Array<LookupAddress>, family?: number) => void

/**
 * A `lookup` for `http.request` that refuses a connection to a forbidden address (unless the
 * host is allowed). Node calls it for every connection it opens to a host name.
 */
export const guardedLookup = (allow: ReadonlyArray<string>) =>
  (hostname: string, options: { readonly all?: boolean; readonly family?: number | string }, callback: LookupCallback) => {
    dnsLookup(hostname, { all: true, ...(options.family === undefined ? {} : { family: Number(options.family) || 0 }) }, (error, addresses) => {
      if (error !== null) return callback(error, [])
      if (!hostAllowed(hostname, allow)) {
        const bad = addresses.find((entry) => isForbiddenAddress(entry.address))
        if (bad !== undefined) return callback(new PushTargetRefused(forbidden(hostname, bad.address)), [])
      }
      if (options.all === true) return callback(null, addresses)
      const first = addresses[0]
      return first === undefined ? callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), []) : callback(null, first.address, first.family)
    })
  }

/** Resolves a URL's host now and says whether any address it has is forbidden (the early, clear refusal). */
export const resolveTarget = (url: URL, allow: ReadonlyArray<string>): Promise<string | undefined> =>
  new Promise((resolve) => {
    const host = url.hostname.replace(/^\[|\]$/g, "")
    if (isIP(host) !== 0 || hostAllowed(host, allow)) return resolve(undefined)
    dnsLookup(host, { all: true }, (error, addresses) => {
      if (error !== null) return resolve(`the push URL's host ${host} does not resolve (${error.code ?? error.message})`)
      const bad = addresses.find((entry) => isForbiddenAddress(entry.address))
      resolve(bad === undefined ? undefined : forbidden(host, bad.address))
    })
  })
