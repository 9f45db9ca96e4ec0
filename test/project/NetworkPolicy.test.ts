import { describe, expect, it } from "vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import { matchRequest, requestTarget, ruleMatches } from "../../src/project/NetworkMatch.js"
import {
  checkPeerUrl,
  covers,
  narrow,
  type NetworkRule,
  NetworkRuleError,
  parseAllowList,
  parseAllowRule,
  peerUrlTarget
} from "../../src/project/NetworkPolicy.js"

const rule = (entry: string): NetworkRule => Either.getOrThrow(parseAllowRule(entry))
const rules = (...entries: Array<string>): ReadonlyArray<NetworkRule> => entries.map(rule)
const errorOf = (entry: string): NetworkRuleError => {
  const parsed = parseAllowRule(entry)
  if (Either.isRight(parsed)) throw new Error(`expected '${entry}' to be refused`)
  return parsed.left
}

describe("parseAllowRule", () => {
  it.each([
    ["https://api.example.com", { scheme: "https", host: "api.example.com", port: 443 }],
    ["http://api.example.com", { scheme: "http", host: "api.example.com", port: 80 }],
    ["HTTP://Example.COM:8080", { scheme: "http", host: "example.com", port: 8080 }],
    ["https://example.com:443/", { scheme: "https", host: "example.com", port: 443 }],
    ["  https://example.com  ", { scheme: "https", host: "example.com", port: 443 }],
    ["https://[::1]:9000", { scheme: "https", host: "[::1]", port: 9000 }],
    ["example.com", { host: "example.com" }],
    ["Example.com:8443", { host: "example.com", port: 8443 }],
    ["127.0.0.1:3000", { host: "127.0.0.1", port: 3000 }],
    // The reference parses host entries as `http://<entry>`, so the http default port reads as unset.
    ["example.com:80", { host: "example.com" }],
    ["example.com/", { host: "example.com" }]
  ] as const)("%s", (entry, expected) => {
    expect(rule(entry)).toStrictEqual(expected)
  })

  it.each([
    ["", "", "entry must not be empty"],
    ["   ", "   ", "entry must not be empty"],
    ["ftp://files.example.com", "ftp://files.example.com", "unsupported URL scheme 'ftp' (expected http or https)"],
    ["WS://x.example", "WS://x.example", "unsupported URL scheme 'ws' (expected http or https)"],
    ["https://a.example/path", "https://a.example/path", "URL allow entries must not include path, query, or fragment"],
    ["https://a.example?q=1", "https://a.example?q=1", "URL allow entries must not include path, query, or fragment"],
    ["https://a.example/?", "https://a.example/?", "URL allow entries must not include path, query, or fragment"],
    ["https://a.example#top", "https://a.example#top", "URL allow entries must not include path, query, or fragment"],
    ["a.example/api", "a.example/api", "host allow entries must be host or host:port only"],
    ["a.example?x", "a.example?x", "host allow entries must be host or host:port only"],
    ["a.example#x", "a.example#x", "host allow entries must be host or host:port only"],
    [" https://", "https://", "invalid URL: empty host"],
    ["https://a.example:99999", "https://a.example:99999", "invalid URL: invalid port number"],
    ["a.example:http", "a.example:http", "invalid host allow entry: invalid port number"],
    ["bad host", "bad host", "invalid host allow entry: invalid domain character"]
  ])("refuses %j", (entry, reported, reason) => {
    const error = errorOf(entry)
    expect(error).toBeInstanceOf(NetworkRuleError)
    expect(error.entry).toBe(reported)
    expect(error.reason).toBe(reason)
    expect(error.message).toBe(`invalid network capability allow entry '${reported}': ${reason}`)
  })

  it("parseAllowList fails on the first bad entry", () => {
    const result = parseAllowList(["a.example", "ftp://b.example", ""])
    expect(Either.isLeft(result) && result.left.entry).toBe("ftp://b.example")
    expect(Either.getOrThrow(parseAllowList(["a.example", "https://b.example"]))).toHaveLength(2)
  })

  it("never throws, and every refusal is E-CAP-001 text naming the entry", () => {
    fc.assert(
      fc.property(anyEntry, (entry) => {
        const parsed = parseAllowRule(entry)
        if (Either.isLeft(parsed)) {
          expect(parsed.left.message.startsWith("invalid network capability allow entry '")).toBe(true)
        } else {
          expect(parsed.right.host).toBe(parsed.right.host.toLowerCase())
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("matchRequest", () => {
  const ceiling = rules("https://api.example.com", "registry.internal", "http://local.test:8080")

  it.each([
    [{ scheme: "https", authority: "api.example.com" }, true],
    [{ scheme: "HTTPS", authority: "API.Example.com:443" }, true],
    [{ scheme: "http", authority: "api.example.com" }, false],
    [{ scheme: "https", authority: "api.example.com:8443" }, false],
    [{ scheme: "https", authority: "sub.api.example.com" }, false],
    [{ scheme: "https", authority: "user@api.example.com" }, true],
    [{ scheme: "http", authority: "registry.internal:1234" }, true],
    [{ scheme: "ftp", authority: "registry.internal" }, true],
    [{ scheme: "http", authority: "local.test:8080" }, true],
    [{ scheme: "http", authority: "local.test" }, false],
    [{ scheme: undefined, authority: "api.example.com", useTls: true }, true],
    [{ scheme: undefined, authority: "api.example.com" }, false],
    [{ scheme: "https", authority: undefined }, false],
    [{ scheme: "https", authority: "" }, false]
  ])("%j → %s", (request, allowed) => {
    expect(matchRequest(ceiling, request)).toBe(allowed)
  })

  it("keeps IPv6 brackets and takes the port after them", () => {
    expect(requestTarget({ scheme: "http", authority: "[::1]:8080" })).toStrictEqual({ scheme: "http", host: "[::1]", port: 8080 })
    expect(matchRequest(rules("http://[::1]:8080"), { scheme: "http", authority: "[::1]:8080" })).toBe(true)
    expect(matchRequest(rules("[::1]"), { scheme: "https", authority: "[::1]" })).toBe(true)
  })

  it("an empty rule list denies everything", () => {
    expect(matchRequest([], { scheme: "https", authority: "api.example.com" })).toBe(false)
  })

  it("a rule always matches the request built from its own scheme, host and port", () => {
    fc.assert(
      fc.property(entryParts, fc.constantFrom("http", "https"), fc.boolean(), (parts, otherScheme, shout) => {
        const parsed = rule(parts.entry)
        const host = shout ? parts.host.toUpperCase() : parts.host
        const request = {
          scheme: parsed.scheme ?? otherScheme,
          authority: parsed.port === undefined ? host : `${host}:${parsed.port}`
        }
        expect(matchRequest([parsed], request)).toBe(true)
      }),
      { numRuns: 300 }
    )
  })

  it("no request without an authority is ever allowed", () => {
    fc.assert(
      fc.property(fc.array(entryParts, { maxLength: 4 }), fc.string(), (parts, scheme) => {
        expect(matchRequest(parts.map((p) => rule(p.entry)), { scheme })).toBe(false)
      })
    )
  })
})

describe("narrow", () => {
  const ceiling = rules("https://api.example.com", "https://other.example.com")

  it("absent declaration keeps the ceiling", () => {
    expect(Either.getOrThrow(narrow(ceiling, undefined, "t"))).toStrictEqual({ rules: ceiling, dropped: [], warnings: [] })
  })

  it("explicit [] denies everything", () => {
    const narrowed = Either.getOrThrow(narrow(ceiling, [], "t"))
    expect(narrowed.rules).toStrictEqual([])
    expect(matchRequest(narrowed.rules, { scheme: "https", authority: "api.example.com" })).toBe(false)
  })

  it("a subset narrows without warnings", () => {
    const narrowed = Either.getOrThrow(narrow(ceiling, ["https://api.example.com"], "t"))
    expect(matchRequest(narrowed.rules, { scheme: "https", authority: "api.example.com" })).toBe(true)
    expect(matchRequest(narrowed.rules, { scheme: "https", authority: "other.example.com" })).toBe(false)
    expect(narrowed.warnings).toStrictEqual([])
  })

  it("entries outside the ceiling are dropped with one W-SEC-007 line", () => {
    const narrowed = Either.getOrThrow(
      narrow(ceiling, ["https://api.example.com", "https://evil.example.com", "api.example.com"], "fetcher")
    )
    expect(narrowed.rules).toStrictEqual(rules("https://api.example.com"))
    expect(narrowed.dropped).toStrictEqual(["https://evil.example.com", "api.example.com"])
    expect(narrowed.warnings).toStrictEqual([
      "warning[W-SEC-007]: artifact 'fetcher' declares capabilities.network.allow entries the capsule-wide " +
      "ceiling does not allow (https://evil.example.com, api.example.com) — they are dropped, not granted, " +
      "because per-artifact capabilities can only narrow " +
      "(https://docs.murmur.nexus/murmur-nexus/murmur/reference/diagnostics/#w-sec-007)"
    ])
  })

  it("a malformed declared entry fails with E-CAP-001", () => {
    const result = narrow(ceiling, ["ftp://x.example"], "t")
    expect(Either.isLeft(result) && result.left.reason).toBe("unsupported URL scheme 'ftp' (expected http or https)")
  })

  // The reference's own coverage table (spawn_envelope.rs COVERAGE_CASES).
  it.each([
    ["example.com", "https://example.com", true],
    ["https://example.com", "example.com", false],
    ["example.com", "example.com", true],
    ["https://example.com", "https://example.com", true],
    ["https://example.com", "http://example.com", false],
    ["example.com:8443", "example.com:8443", true],
    ["example.com:8443", "example.com:9000", false],
    ["example.com", "other.example.com", false]
  ])("ceiling %s covers %s: %s", (ceilingEntry, candidate, expected) => {
    expect(covers(rule(ceilingEntry), rule(candidate))).toBe(expected)
    expect(Either.getOrThrow(narrow([rule(ceilingEntry)], [candidate], "t")).dropped.length === 0).toBe(expected)
  })

  it("narrowing never adds access: anything the narrowed list allows, the ceiling allows", () => {
    fc.assert(
      fc.property(fc.array(poolEntry, { maxLength: 5 }), fc.array(poolEntry, { maxLength: 5 }), poolRequest, (c, d, request) => {
        const ceilingRules = c.map(rule)
        const narrowed = Either.getOrThrow(narrow(ceilingRules, d, "t"))
        if (matchRequest(narrowed.rules, request)) expect(matchRequest(ceilingRules, request)).toBe(true)
        expect(narrowed.rules.length + narrowed.dropped.length).toBe(d.length)
        expect(narrowed.warnings.length).toBe(narrowed.dropped.length === 0 ? 0 : 1)
      }),
      { numRuns: 500 }
    )
  })

  it("covers is sound: a covered rule matches nothing its coverer does not", () => {
    fc.assert(
      fc.property(poolEntry, poolEntry, poolRequest, (a, b, request) => {
        const target = requestTarget(request)
        if (covers(rule(a), rule(b)) && target !== undefined && ruleMatches(rule(b), target)) {
          expect(ruleMatches(rule(a), target)).toBe(true)
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("message/send peer URLs", () => {
  it.each([
    ["localhost:8080", { scheme: "http", host: "localhost", port: 8080 }],
    ["peer.local", { scheme: "http", host: "peer.local", port: 80 }],
    ["https://Peer.Example/a2a?x=1", { scheme: "https", host: "peer.example", port: 443 }],
    ["HTTP://127.0.0.1:9000/", { scheme: "http", host: "127.0.0.1", port: 9000 }]
  ])("%s", (url, target) => {
    expect(Either.getOrThrow(peerUrlTarget(url))).toStrictEqual(target)
  })

  it("a peer URL without a scheme is matched as http", () => {
    const ceiling = rules("http://localhost:8080", "https://secure.peer")
    expect(Either.isRight(checkPeerUrl(ceiling, "localhost:8080"))).toBe(true)
    expect(checkPeerUrl(ceiling, "secure.peer")).toStrictEqual(
      Either.left("network policy: 'secure.peer' not in capabilities.network.allow")
    )
    expect(Either.isRight(checkPeerUrl(ceiling, "https://secure.peer/rpc"))).toBe(true)
  })

  it("names the field it was checked against", () => {
    expect(checkPeerUrl([], "a.example", "capabilities.peer_fetch.allow")).toStrictEqual(
      Either.left("network policy: 'a.example' not in capabilities.peer_fetch.allow")
    )
  })

  it("refuses a URL with no usable authority", () => {
    expect(peerUrlTarget("")).toStrictEqual(Either.left("invalid peer URL ''"))
    expect(peerUrlTarget("http:///path")).toStrictEqual(Either.left("invalid peer URL 'http:///path'"))
    expect(peerUrlTarget("host:port")).toStrictEqual(Either.left("invalid peer URL 'host:port': invalid port number"))
    expect(peerUrlTarget("a b")).toStrictEqual(Either.left("invalid peer URL 'a b': invalid uri character"))
  })
})

// --- arbitraries -------------------------------------------------------------------------------

const anyEntry = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ maxLength: 20, unit: "binary" }),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.tuple(fc.constantFrom("", "http://", "https://", "HTTPS://", "ftp://"), fc.domain(), fc.string({ maxLength: 8 }))
    .map(([scheme, host, tail]) => `${scheme}${host}${tail}`)
)

const label = fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/)
const hostName = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => labels.join(".")),
  fc.ipV4()
)

/** A well-formed allow entry and the host it names. */
const entryParts = fc
  .record({
    scheme: fc.constantFrom(undefined, "http", "https"),
    host: hostName,
    port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })
  })
  .map(({ host, port, scheme }) => ({
    host,
    entry: `${scheme === undefined ? "" : `${scheme}://`}${host}${port === undefined ? "" : `:${port}`}`
  }))

/** Entries drawn from a small pool, so ceilings and declarations overlap often. */
const poolEntry = fc
  .tuple(
    fc.constantFrom("", "http://", "https://"),
    fc.constantFrom("a.example", "B.example", "c.example"),
    fc.constantFrom("", ":80", ":443", ":8080")
  )
  .map(([scheme, host, port]) => `${scheme}${host}${port}`)

const poolRequest = fc.record({
  scheme: fc.constantFrom(undefined, "http", "https", "HTTPS", "ftp"),
  authority: fc.option(
    fc
      .tuple(fc.constantFrom("a.example", "b.example", "C.EXAMPLE"), fc.constantFrom("", ":80", ":443", ":8080"))
      .map(([host, port]) => `${host}${port}`),
    { nil: undefined }
  ),
  useTls: fc.boolean()
})

describe("the scheme a guest request is checked under", () => {
  it("is the one preview2-shim will use: https when the request names none", async () => {
    const { schemeOf } = await import("../../src/sandbox/host/WasiImports.js")
    expect(schemeOf(undefined)).toBe("https")
    expect(schemeOf({ tag: "HTTP" })).toBe("http")
    expect(schemeOf({ tag: "HTTPS" })).toBe("https")
    expect(schemeOf({ tag: "other", val: "FTP" })).toBe("ftp")
  })
})
