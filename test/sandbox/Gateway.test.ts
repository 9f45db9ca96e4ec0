/**
 * The inference gateway (spec §3.3) in a real worker: a guest's request to
 * `http://127.0.0.1:9<path>` reaches the upstream with the auth header swapped in; the
 * upstream is still subject to the allowlist; without a gateway the placeholder is an
 * ordinary (denied) address. The guest is the WAT fixture that GETs env TARGET_URL.
 */
import { Redacted } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { driverAccess } from "../../src/agent/DriverAccess.js"
import type { GuestGrant } from "../../src/sandbox/GuestJob.js"
import { fetchAs as fetchWith, networkAttemptRuntime } from "../lib/NetworkAttempt.js"

const runtime = networkAttemptRuntime()

let server: Server
let port = 0
const seen: Array<{ readonly url: string; readonly headers: IncomingHttpHeaders }> = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers })
    res.writeHead(200).end("ok")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(async () => {
  await runtime.dispose()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const fetchAs = (target: string, grant: Pick<GuestGrant, "network" | "gateway">) => fetchWith(runtime, target, grant)

const upstream = () => ({ scheme: "http" as const, host: "127.0.0.1", port })

describe("inference gateway", () => {
  it("sends a placeholder request upstream with the rendered auth header, keeping path and query", async () => {
    const access = driverAccess("d", `http://127.0.0.1:${port}/v1`, Redacted.make("sk-secret"), { header: "Authorization", value: "Bearer {key}" })
    expect(access.vars).toEqual({ MURMUR_INFERENCE_ENDPOINT: "http://127.0.0.1:9/v1" })
    const before = seen.length
    const out = await fetchAs(`${access.vars.MURMUR_INFERENCE_ENDPOINT}/chat/completions?x=1`, { network: [upstream()], gateway: access.gateway })
    expect(out).toBe("allowed:200")
    expect(seen.length).toBe(before + 1)
    expect(seen.at(-1)!.url).toBe("/v1/chat/completions?x=1")
    expect(seen.at(-1)!.headers.authorization).toBe("Bearer sk-secret")
    expect(seen.at(-1)!.headers.host).toBe(`127.0.0.1:${port}`)
  })

  it("inserts no auth header when no key is configured", async () => {
    const access = driverAccess("d", `http://127.0.0.1:${port}`, undefined, { header: "x-api-key", value: "{key}" })
    expect(access.vars).toEqual({ MURMUR_INFERENCE_ENDPOINT: "http://127.0.0.1:9" })
    expect(await fetchAs("http://127.0.0.1:9/models", { network: [upstream()], gateway: access.gateway })).toBe("allowed:200")
    expect(seen.at(-1)!.url).toBe("/models")
    expect(seen.at(-1)!.headers["x-api-key"]).toBeUndefined()
  })

  it("still applies the allowlist to the upstream", async () => {
    const access = driverAccess("d", `http://127.0.0.1:${port}/v1`, Redacted.make("sk-secret"), { header: "Authorization", value: "Bearer {key}" })
    const before = seen.length
    expect(await fetchAs("http://127.0.0.1:9/v1/x", { network: [], gateway: access.gateway })).toBe("denied")
    expect(seen.length).toBe(before)
  })

  it("is not there for a guest without a gateway: the placeholder is an ordinary, denied address", async () => {
    expect(await fetchAs("http://127.0.0.1:9/v1/x", { network: [upstream()] })).toBe("denied")
  })

  it("gives a 0.2 driver (no inference_auth) the key in its environment, with a warning", () => {
    const access = driverAccess("legacy", "https://api.example.com/v1", Redacted.make("sk-1"), undefined)
    expect(access.vars).toEqual({ MURMUR_INFERENCE_API_KEY: "sk-1" })
    expect(access.gateway).toBeUndefined()
    expect(access.warning).toMatch(/W-RUN-025.*'legacy'.*inference_auth/)
    expect(driverAccess("legacy", "https://api.example.com/v1", undefined, undefined)).toEqual({ vars: {}, gateway: undefined, warning: undefined })
  })

  it("takes TLS from the upstream scheme", () => {
    const access = driverAccess("d", "https://api.openai.com/v1", Redacted.make("k"), { header: "Authorization", value: "Bearer {key}" })
    expect(access.gateway).toEqual({ scheme: "https", authority: "api.openai.com", header: "Authorization", value: "Bearer k" })
  })
})
