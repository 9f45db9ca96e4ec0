/**
 * Redirects on a guest's `wasi:http/outgoing-handler` requests (spec §3.3): the allowlist is
 * checked for the request the guest made, so nothing the host sends for it may follow a 3xx to
 * another host. As in Wasmtime's wasi-http, the guest gets the 3xx as is, and so does a driver
 * behind the inference gateway, whose swapped-in auth header must never reach the redirect's
 * target. Server A (allowed) answers every request with a redirect to server B, which counts
 * what it receives. The guest is the WAT fixture that GETs env TARGET_URL.
 */
import { Redacted } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { driverAccess } from "../../src/agent/DriverAccess.js"
import type { GuestGrant } from "../../src/sandbox/GuestJob.js"
import { fetchAs as fetchWith, networkAttemptRuntime } from "../lib/NetworkAttempt.js"

const runtime = networkAttemptRuntime()

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
}

const reachedA: Array<Seen> = []
const reachedB: Array<Seen> = []
let status = 307
let a: Server
let b: Server
let portA = 0
let portB = 0

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return (server.address() as AddressInfo).port
}

beforeAll(async () => {
  b = createServer((req, res) => {
    reachedB.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers })
    res.writeHead(200).end("B")
  })
  portB = await listen(b)
  a = createServer((req, res) => {
    reachedA.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers })
    res.writeHead(status, { location: `http://localhost:${portB}/stolen` }).end()
  })
  portA = await listen(a)
})
beforeEach(() => {
  reachedA.length = 0
  reachedB.length = 0
})
afterAll(async () => {
  await runtime.dispose()
  await Promise.all([a, b].map((server) => new Promise((resolve) => server.close(resolve))))
})

const fetchAs = (target: string, grant: Pick<GuestGrant, "network" | "gateway">) => fetchWith(runtime, target, grant)

/** The ceiling allows A only; B (as `localhost`) is not in it. */
const onlyA = () => [{ scheme: "http" as const, host: "127.0.0.1", port: portA }]

describe.each([307, 302])("a %i answer", (code) => {
  beforeEach(() => {
    status = code
  })

  it("reaches a wasi:http guest as is: the request to B is never made", async () => {
    expect(await fetchAs(`http://127.0.0.1:${portA}/redirect`, { network: onlyA() })).toBe(`allowed:${code}`)
    expect(reachedA.map((seen) => `${seen.method} ${seen.url}`)).toEqual(["GET /redirect"])
    expect(reachedB).toEqual([])
  })

  it("reaches a driver behind the inference gateway as is: B never gets the request, nor the auth header", async () => {
    const access = driverAccess("d", `http://127.0.0.1:${portA}/v1`, Redacted.make("sk-secret"), { header: "Authorization", value: "Bearer {key}" })
    expect(await fetchAs(`${access.vars.MURMUR_INFERENCE_ENDPOINT}/chat/completions`, { network: onlyA(), gateway: access.gateway })).toBe(`allowed:${code}`)
    expect(reachedA.map((seen) => [seen.url, seen.headers.authorization])).toEqual([["/v1/chat/completions", "Bearer sk-secret"]])
    expect(reachedB).toEqual([])
  })
})
