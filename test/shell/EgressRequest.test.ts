/**
 * The proxy's request parsing and address decision, as properties: whatever a command puts in
 * its request, a forwarded head names in its request line and `Host` exactly the target the
 * policy checks, carries none of the proxy's own headers and asks for `Connection: close`; and no
 * address in a special range passes on a name alone.
 */
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { specialRange } from "../../src/shell/egress/AddressRange.js"
import { addressRefusal } from "../../src/shell/egress/EgressPolicy.js"
import { headEnd, parseRequest } from "../../src/shell/egress/EgressRequest.js"
import { parseAllowList } from "../../src/project/NetworkPolicy.js"

// Not an `xn--` label: that prefix announces punycode, which the URL parser checks and may refuse
// (`xn--` alone is not a host), so the forward this property expects would not be right.
const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/).filter((text) => !text.startsWith("xn--"))
const hostName = fc.array(label, { minLength: 1, maxLength: 3 }).map((labels) => labels.join("."))
const headerName = fc.constantFrom("Host", "Connection", "Proxy-Connection", "Proxy-Authorization", "Keep-Alive", "Accept", "X-Thing", "Upgrade")
const headerValue = fc.stringMatching(/^[ -~]{0,20}$/).map((value) => value.replaceAll("\r", "").replaceAll("\n", ""))

const head = (text: string) => Buffer.from(text, "latin1")

describe("EgressRequest", () => {
  it("a forwarded head is origin-form, with Host the checked target, no proxy headers and Connection: close", () => {
    fc.assert(fc.property(
      hostName,
      fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
      fc.stringMatching(/^(\/[a-z0-9]{0,6}){0,3}(\?[a-z=&]{0,8})?$/),
      fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
      (host, port, path, headers) => {
        const authority = port === undefined ? host : `${host}:${port}`
        const text = `GET http://${authority}${path} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join("")}\r\n`
        const parsed = parseRequest(head(text))
        expect(parsed._tag).toBe("Forward")
        if (parsed._tag !== "Forward") return
        expect(parsed.target).toEqual({ scheme: "http", host, port: port ?? 80 })
        const lines = parsed.head.toString("latin1").split("\r\n")
        expect(lines[0]).toBe(`GET ${path.startsWith("/") ? path : `/${path}`} HTTP/1.1`)
        const names = lines.slice(1, -2).map((line) => line.slice(0, line.indexOf(":")).toLowerCase())
        expect(names.filter((name) => name === "host")).toHaveLength(1)
        expect(lines).toContain(`Host: ${port === undefined || port === 80 ? host : `${host}:${port}`}`)
        expect(names.filter((name) => name.startsWith("proxy-") || name === "keep-alive" || name === "upgrade")).toEqual([])
        expect(lines.filter((line) => line.toLowerCase().startsWith("connection:"))).toEqual(["Connection: close"])
        expect(lines.slice(-2)).toEqual(["", ""])
        expect(headEnd(parsed.head)).toBe(parsed.head.length)
      }
    ))
  })

  it("CONNECT needs host:port and is checked as https; anything but an absolute http:// or CONNECT is refused", () => {
    expect(parseRequest(head("CONNECT Example.COM:443 HTTP/1.1\r\nHost: x\r\n\r\n"))).toEqual({
      _tag: "Connect",
      method: "CONNECT",
      target: { scheme: "https", host: "example.com", port: 443 }
    })
    expect(parseRequest(head("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"))).toMatchObject({ target: { host: "[::1]", port: 8443 } })
    expect(parseRequest(head("CONNECT example.com HTTP/1.1\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 400 })
    expect(parseRequest(head("CONNECT user@example.com:443 HTTP/1.1\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 400 })
    expect(parseRequest(head("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 400 })
    expect(parseRequest(head("GET https://example.com/ HTTP/1.1\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 405 })
    expect(parseRequest(head("GET http://example.com/ HTTP/2.0\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 505 })
    expect(parseRequest(head("GET http://example.com/ HTTP/1.1\r\n folded\r\n\r\n"))).toMatchObject({ _tag: "Refused", status: 400 })
    // The shorthand a resolver would accept is compared in the form the allow list is written in.
    expect(parseRequest(head("GET http://0x7f.1:81/ HTTP/1.1\r\n\r\n"))).toMatchObject({ target: { host: "127.0.0.1", port: 81 } })
  })

  it("a body is bounded by its Content-Length; conflicting lengths are refused", () => {
    expect(parseRequest(head("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n"))).toMatchObject({ bodyBytes: 5 })
    expect(parseRequest(head("GET http://a.example/ HTTP/1.1\r\n\r\n"))).toMatchObject({ bodyBytes: 0 })
    expect(parseRequest(head("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"))).toMatchObject({ bodyBytes: undefined })
    expect(parseRequest(head("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"))).toMatchObject({ _tag: "Refused" })
  })
})

describe("EgressPolicy", () => {
  const rules = (...entries: Array<string>) => Either.getOrThrow(parseAllowList(entries))
  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join("."))

  it("no special-range address passes for a name unless a rule names that address for the target", () => {
    fc.assert(fc.property(ipv4, fc.integer({ min: 1, max: 65535 }), (address, port) => {
      const target = { scheme: "http" as const, host: "mirror.example", port }
      const byName = addressRefusal(rules(`mirror.example:${port}`), target, address)
      expect(byName === undefined).toBe(specialRange(address) === undefined)
      expect(addressRefusal(rules(`mirror.example:${port}`, `${address}:${port}`), target, address)).toBeUndefined()
      if (specialRange(address) !== undefined) {
        expect(addressRefusal(rules(`mirror.example:${port}`, `${address}:${port === 1 ? 2 : port - 1}`), target, address)).toBeDefined()
      }
    }))
  })

  it("loopback passes for localhost by name; other names and ranges do not", () => {
    const target = { scheme: "http" as const, host: "localhost", port: 8080 }
    expect(addressRefusal(rules("localhost:8080"), target, "127.0.0.1")).toBeUndefined()
    expect(addressRefusal(rules("localhost:8080"), target, "::1")).toBeUndefined()
    expect(addressRefusal(rules("localhost:8080"), target, "10.0.0.1")).toContain("(private)")
    expect(addressRefusal(rules("evil.example"), { ...target, host: "evil.example" }, "169.254.169.254")).toContain("(link-local)")
    expect(addressRefusal(rules("evil.example", "[::1]"), { ...target, host: "evil.example" }, "::1")).toBeUndefined()
    expect(addressRefusal(rules("evil.example"), { ...target, host: "evil.example" }, "::ffff:127.0.0.1")).toContain("(loopback)")
  })
})
