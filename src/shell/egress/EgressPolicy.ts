/**
 * The egress decision for a shell command's proxied connection, on the same rules and matcher as
 * a guest's outgoing HTTP (../NetworkMatch.ts): first the name (scheme, host, port) against
 * `network.allow`, then each address the name resolved to. A public address passes; an address in
 * a special range (./AddressRange.ts: loopback, private, link-local, …) passes only when some rule
 * names that address itself for this scheme and port, or, for loopback, when the name is
 * `localhost` (or `*.localhost`, RFC 6761) and allowed. The proxy connects to an address that
 * passed, never re-resolving the name.
 */
import { isIP } from "node:net"
import { allows, type NetworkRule } from "../../project/NetworkMatch.js"
import { specialRange } from "./AddressRange.js"
import type { EgressTarget } from "./EgressRequest.js"

/** The rules allow this scheme, host and port. */
export const nameAllowed = (rules: ReadonlyArray<NetworkRule>, target: EgressTarget): boolean => allows(rules, target)

/** The host as an address when it is an IP literal (IPv6 without brackets), else `undefined`. */
export const literalAddress = (host: string): string | undefined => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  return isIP(bare) === 0 ? undefined : bare
}

/** How `network.allow` spells an address: the WHATWG hostname (IPv6 compressed, in brackets). */
const ruleSpelling = (address: string): string => {
  try {
    return new URL(`http://${isIP(address) === 6 ? `[${address}]` : address}/`).hostname
  } catch {
    return address
  }
}

const isLocalhost = (host: string) => host === "localhost" || host.endsWith(".localhost")

/** `undefined` when `address` may be reached for `target`, else why not. */
export const addressRefusal = (rules: ReadonlyArray<NetworkRule>, target: EgressTarget, address: string): string | undefined => {
  const range = specialRange(address)
  if (range === undefined) return undefined
  if (range !== "invalid" && allows(rules, { ...target, host: ruleSpelling(address) })) return undefined
  if (range === "loopback" && isLocalhost(target.host) && allows(rules, target)) return undefined
  return `${target.host} resolves to ${address} (${range}), which capabilities.network.allow does not name`
}
