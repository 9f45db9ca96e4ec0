/**
 * The SSRF guard of push webhooks (../../../src/http/push/PushTarget.ts): which addresses are refused,
 * what an operator's allow-list lets through, and that a host name is checked on the addresses
 * it resolves to when a connection is made.
 */
import { describe, expect, it } from "vitest"
import { checkTarget, guardedLookup, hostAllowed, isForbiddenAddress, PushTargetRefused, resolveTarget } from "../../../src/http/push/PushTarget.js"

describe("isForbiddenAddress", () => {
  it.each([
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "::ffff:7f00:1", "ff02::1", "64:ff9b::a00:1", "2002:7f00:1::", "not-an-ip"
  ])("refuses %s", (address) => expect(isForbiddenAddress(address)).toBe(true))

  it.each(["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])(
    "lets %s through",
    (address) => expect(isForbiddenAddress(address)).toBe(false)
  )
})

describe("checkTarget", () => {
  it("takes http(s) URLs to public hosts and refuses the rest with the reason", () => {
    expect(checkTarget("https://hooks.example.com/a2a", [])._tag).toBe("Ok")
    for (const [url, reason] of [
      ["file:///etc/passwd", /must be http or https/],
      ["gopher://example.com/", /must be http or https/],
      ["not a url", /not an absolute URL/],
      ["http://user:pw@example.com/", /must not carry credentials/],
      ["http://127.0.0.1:8080/hook", /loopback, private.*--push-allow 127\.0\.0\.1/],
      ["http://[::1]/hook", /loopback/],
      ["http://169.254.169.254/latest/meta-data", /metadata/],
      [`https://example.com/${"x".repeat(2100)}`, /longer than 2048/]
    ] as const) {
      const check = checkTarget(url, [])
      expect(check._tag, url).toBe("Refused")
      if (check._tag === "Refused") expect(check.reason).toMatch(reason)
    }
  })

  it("lets an operator allow hosts by name, address, suffix or *", () => {
    expect(checkTarget("http://127.0.0.1:8080/hook", ["127.0.0.1"])._tag).toBe("Ok")
    expect(checkTarget("http://[::1]:8080/hook", ["::1"])._tag).toBe("Ok")
    expect(hostAllowed("hooks.internal.example", ["*.example"])).toBe(true)
    expect(hostAllowed("example", ["*.example"])).toBe(false)
    expect(hostAllowed("anything", ["*"])).toBe(true)
    expect(hostAllowed("Hooks.Example.com", ["hooks.example.com"])).toBe(true)
  })
})

describe("resolution", () => {
  it("refuses a name that resolves to loopback, now and at connection time, unless allowed", async () => {
    expect(await resolveTarget(new URL("http://localhost:1/x"), [])).toMatch(/localhost resolves to .*--push-allow localhost/)
    expect(await resolveTarget(new URL("http://localhost:1/x"), ["localhost"])).toBeUndefined()
    expect(await resolveTarget(new URL("http://no-such-host.invalid/x"), [])).toMatch(/does not resolve/)
    const connect = (allow: ReadonlyArray<string>) =>
      new Promise<unknown>((resolve) => guardedLookup(allow)("localhost", { all: true }, (error, addresses) => resolve(error ?? addresses)))
    expect(await connect([])).toBeInstanceOf(PushTargetRefused)
    expect(Array.isArray(await connect(["localhost"]))).toBe(true)
  })
})
