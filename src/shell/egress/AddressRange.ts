/**
 * Which addresses a command's egress may not reach by a name alone: loopback, private, link-local
 * and every other range that is not a public unicast host (IANA special-purpose registries). A
 * name resolving into one of them is refused unless `network.allow` names the address itself (or
 * `localhost`, for loopback): see ./EgressPolicy.ts. That is what keeps a DNS answer (a rebinding
 * name, a stale record) from turning an allowed name into a door to the host or its network.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net"

/** Ranges by what they are, checked in this order. */
const RANGES: ReadonlyArray<readonly [string, ReadonlyArray<readonly [string, number, "ipv4" | "ipv6"]>]> = [
  ["loopback", [["127.0.0.0", 8, "ipv4"], ["::1", 128, "ipv6"]]],
  ["unspecified", [["0.0.0.0", 8, "ipv4"], ["::", 128, "ipv6"]]],
  ["private", [["10.0.0.0", 8, "ipv4"], ["172.16.0.0", 12, "ipv4"], ["192.168.0.0", 16, "ipv4"], ["fc00::", 7, "ipv6"]]],
  ["shared", [["100.64.0.0", 10, "ipv4"]]],
  ["link-local", [["169.254.0.0", 16, "ipv4"], ["fe80::", 10, "ipv6"]]],
  ["multicast", [["224.0.0.0", 4, "ipv4"], ["ff00::", 8, "ipv6"]]],
  ["reserved", [
    ["192.0.0.0", 24, "ipv4"],
    ["192.0.2.0", 24, "ipv4"],
    ["198.18.0.0", 15, "ipv4"],
    ["198.51.100.0", 24, "ipv4"],
    ["203.0.113.0", 24, "ipv4"],
    ["240.0.0.0", 4, "ipv4"],
    ["2001:db8::", 32, "ipv6"],
    ["100::", 64, "ipv6"]
  ]],
  // An IPv4 address carried in IPv6 (compatible, NAT64, 6to4) could be any of the above; a mapped
  // one (`::ffff:a.b.c.d`) is matched against the IPv4 ranges by BlockList itself.
  ["ipv4-in-ipv6", [["::", 96, "ipv6"], ["64:ff9b::", 96, "ipv6"], ["2002::", 16, "ipv6"]]]
]

const LISTS = RANGES.map(([name, subnets]) => {
  const list = new BlockList()
  for (const [network, prefix, family] of subnets) list.addSubnet(network, prefix, family)
  return [name, list] as const
})

/** The special range `address` falls in, `undefined` for a public unicast address; a non-IP string is `"invalid"`. */
export const specialRange = (address: string): string | undefined => {
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined
  if (family === undefined) return "invalid"
  for (const [name, list] of LISTS) {
    // BlockList also matches an IPv4 address against IPv6 rules through its mapped form.
    if (name === "ipv4-in-ipv6" && family === "ipv4") continue
    if (list.check(address, family)) return name
  }
  return undefined
}
