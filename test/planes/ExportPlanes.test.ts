/**
 * Properties of the two planes, in process (src/planes/ExportPlanes.ts over a temporary workdir):
 * no request path, however encoded, serves a byte from outside the export root; any byte flipped
 * in a handle's payload, MAC or audience is the same 403 body; an expired handle is 410.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Effect, Layer, ManagedRuntime, Stream } from "effect"
import * as fc from "fast-check"
import { afterAll, describe, expect, it } from "vitest"
import { ExportPlanes } from "../../src/planes/ExportPlanes.js"
import { type PlaneResponse, ResourcePlanes } from "../../src/services/ResourcePlanes.js"
import { Trace } from "../../src/records/Trace.js"

const workdir = mkdtempSync(join(tmpdir(), "planes-"))
mkdirSync(join(workdir, "out", "a", "b"), { recursive: true })
writeFileSync(join(workdir, "secret.txt"), "SECRET")
writeFileSync(join(workdir, "out", "a", "b", "c.txt"), "inside")
writeFileSync(join(workdir, "out", "x.txt"), "x")
symlinkSync(join(workdir, "secret.txt"), join(workdir, "out", "a", "ln"))
const files = new Map([["a/b/c.txt", "inside"], ["x.txt", "x"]])

const layer = ExportPlanes.layer({
  workdir,
  exports: { files: { root: "out", mode: "read-only", maxBytes: 1024 }, peerFiles: { root: "out", maxBytes: 1024, maxTtlSecs: 60 } },
  sessionId: "ses_0123456789abcdef0123456789abcdef",
  containment: "advisory",
  maxTtlSecs: 60
}).pipe(Layer.provide(Trace.layer({ directory: join(workdir, ".trace"), sessionId: "ses_0123456789abcdef0123456789abcdef", capture: "meta" })))
const runtime = ManagedRuntime.make(layer)
afterAll(async () => {
  await runtime.dispose()
  rmSync(workdir, { recursive: true, force: true })
})

const bodyOf = (answer: PlaneResponse) =>
  typeof answer.body === "string"
    ? Effect.succeed(Buffer.from(answer.body))
    : Effect.map(Stream.runCollect(answer.body.stream), (chunks) => Buffer.concat(Chunk.toArray(chunks)))
const files_ = (path: string) =>
  runtime.runPromise(Effect.flatMap(ResourcePlanes, (planes) => Effect.flatMap(planes.files("GET", path), (answer) => Effect.map(bodyOf(answer), (body) => ({ answer, body })))))
const redeem = (token: string, audience: string) =>
  runtime.runPromise(Effect.flatMap(ResourcePlanes, (planes) => Effect.flatMap(planes.peer("GET", `/resources/peer/${token}`, audience), (answer) => Effect.map(bodyOf(answer), (body) => ({ answer, body })))))
const share = (path: string, audience: string, ttl?: number) => runtime.runPromise(Effect.flatMap(ResourcePlanes, (planes) => planes.share(path, audience, ttl)))

const segment = fc.oneof(
  fc.constantFrom("..", ".", "", "%2e%2e", "%2E%2e", "%2f", "%2F..", "%00", "%5c..", "a", "b", "c.txt", "x.txt", "secret.txt", "ln", "%ff", "é", "\u202e", "%", "%2", "...."),
  fc.string({ maxLength: 6 }).map(encodeURIComponent),
  fc.constant("y".repeat(300))
)
const relpath = fc.tuple(fc.constantFrom("", "/", "%2f"), fc.array(segment, { minLength: 0, maxLength: 6 }), fc.constantFrom("", "/"))
  .map(([lead, parts, tail]) => lead + parts.join("/") + tail)

describe("the resource plane never leaves its root", () => {
  it("random relpaths (.., %2e%2e, NUL, absolute, long, unicode): 200 only for a file under the root, and never a byte outside", async () => {
    await fc.assert(
      fc.asyncProperty(relpath, async (path) => {
        fc.pre(path !== "") // files/ is the listing
        const { answer, body } = await files_(`/resources/files/${path}`)
        expect(body.toString()).not.toContain("SECRET")
        expect(answer.status).not.toBe(500)
        if (answer.status === 200) {
          const decoded = decodeURIComponent(path).replace(/\/$/, "")
          expect(files.get(decoded)).toBe(body.toString())
        } else {
          expect([403, 404]).toContain(answer.status)
        }
      }),
      { numRuns: 400 }
    )
  })
})

describe("peer handles", () => {
  it("a byte flipped in the payload, the MAC or the audience is 403 handle_not_valid with identical bytes; the right one is 200", async () => {
    const audience = "reader@127.0.0.1:4000"
    const { handle } = await share("a/b/c.txt", audience)
    const ok = await redeem(handle, audience)
    expect([ok.answer.status, ok.body.toString()]).toEqual([200, "inside"])
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    const bodies = new Set<string>()
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(1, 2, 3), fc.nat(), fc.nat(alphabet.length - 1), async (part, at, replacement) => {
        const segments = handle.split(".")
        let token = handle
        let who = audience
        if (part === 3) {
          const index = at % who.length
          const swapped = who[index] === "z" ? "y" : "z"
          who = who.slice(0, index) + swapped + who.slice(index + 1)
        } else {
          const text = segments[part]!
          const index = at % text.length
          const swapped = alphabet[replacement] === text[index] ? (text[index] === "A" ? "B" : "A") : alphabet[replacement]!
          segments[part] = text.slice(0, index) + swapped + text.slice(index + 1)
          token = segments.join(".")
        }
        fc.pre(token !== handle || who !== audience)
        const { answer, body } = await redeem(token, who)
        // The last character of a base64url segment may carry padding bits: a flip there can
        // decode to the same bytes, which is the same handle.
        if (answer.status === 200) return
        if (answer.status === 400) return expect(JSON.parse(body.toString()).error).toBe("malformed_handle")
        expect(answer.status).toBe(403)
        bodies.add(body.toString())
      }),
      { numRuns: 300 }
    )
    expect([...bodies]).toEqual([JSON.stringify({ error: "handle_not_valid", message: "the handle is not valid for this capsule and audience" })])
  })

  it("any case or whitespace variant of an audience minting accepts redeems the handle; another audience does not", async () => {
    // Header values are visible ASCII; the padding is what an HTTP parser or a hand may leave.
    const visible = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code)), minLength: 1, maxLength: 16 })
    const pad = fc.string({ unit: fc.constantFrom(" ", "\t"), maxLength: 3 })
    const variant = (text: string, flips: ReadonlyArray<boolean>, lead: string, tail: string) =>
      lead + [...text].map((char, index) => flips[index % Math.max(1, flips.length)] ? char.toUpperCase() : char.toLowerCase()).join("") + tail
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(visible, visible).map(([name, host]) => `${name}@${host}`),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        pad, pad, pad, pad,
        async (audience, mintFlips, redeemFlips, a, b, c, d) => {
          const minted = await share("x.txt", variant(audience, mintFlips, a, b))
          expect(minted.audience).toBe(audience.toLowerCase())
          const ok = await redeem(minted.handle, variant(audience, redeemFlips, c, d))
          expect([ok.answer.status, ok.body.toString()]).toEqual([200, "x"])
          const other = await redeem(minted.handle, `${audience}x`)
          expect(other.answer.status).toBe(403)
        }
      ),
      { numRuns: 150 }
    )
  })

  it("expiry is 410 handle_expired; ttl only narrows max_ttl; missing audience 400; malformed 400; no listing", async () => {
    const audience = "reader@127.0.0.1:4000"
    const minted = await share("x.txt", audience, 1)
    expect(minted.expires_at_ms - Date.now()).toBeLessThanOrEqual(1_000)
    expect((await share("x.txt", audience, 10_000)).expires_at_ms - Date.now()).toBeLessThanOrEqual(60_000)
    await new Promise((resolve) => setTimeout(resolve, 1_050))
    const expired = await redeem(minted.handle, audience)
    expect([expired.answer.status, JSON.parse(expired.body.toString()).error]).toEqual([410, "handle_expired"])
    expect((await redeem(minted.handle, "  ")).answer.status).toBe(400)
    expect(JSON.parse((await redeem("mh2.a.b", audience)).body.toString()).error).toBe("malformed_handle")
    const listing = await runtime.runPromise(Effect.flatMap(ResourcePlanes, (planes) => planes.peer("GET", "/resources/peer/", undefined)))
    expect(listing.status).toBe(404)
  })

  it("share-file refuses what could never be served: outside the root, a link, a directory, a missing file", async () => {
    for (const [path, code] of [["../secret.txt", "outside_root"], ["a/ln", "symlink_refused"], ["a", "not_a_regular_file"], ["nope", "not_found"]] as const) {
      const refused = await runtime.runPromise(Effect.flip(Effect.flatMap(ResourcePlanes, (planes) => planes.share(path, "r@h:1", undefined))))
      expect(refused.code).toBe(code)
    }
  })
})

describe("launch checks of exports", () => {
  it("max_ttl: 1h by default; under after_task: sleep it must be declared and at most 15m (E-CAP-008)", async () => {
    const { effectiveMaxTtl } = await import("../../src/planes/PeerExport.js")
    const lifecycle = (afterTask: "exit" | "sleep") => ({ afterTask }) as any
    const peer = (maxTtlSecs?: number) => ({ peerFiles: { root: "out", maxBytes: 1, ...(maxTtlSecs === undefined ? {} : { maxTtlSecs }) } })
    expect(Effect.runSync(effectiveMaxTtl(peer(), lifecycle("exit")))).toBe(3600)
    expect(Effect.runSync(effectiveMaxTtl(peer(7200), lifecycle("exit")))).toBe(7200)
    expect(Effect.runSync(effectiveMaxTtl(peer(900), lifecycle("sleep")))).toBe(900)
    for (const ttl of [undefined, 901]) {
      const error = Effect.runSync(Effect.flip(effectiveMaxTtl(peer(ttl), lifecycle("sleep"))))
      expect(error.code).toBe("E-CAP-008")
    }
    expect(Effect.runSync(effectiveMaxTtl({}, lifecycle("sleep")))).toBe(3600)
  })

  it("an export root that is a link in the workdir refuses the launch (E-CAP-007)", async () => {
    const { checkExportRoots } = await import("../../src/planes/PeerExport.js")
    symlinkSync(tmpdir(), join(workdir, "outside"))
    const error = Effect.runSync(Effect.flip(checkExportRoots(workdir, { files: { root: "outside/x", mode: "read-only", maxBytes: 1 } })))
    expect(error.code).toBe("E-CAP-007")
    Effect.runSync(checkExportRoots(workdir, { files: { root: "out", mode: "read-only", maxBytes: 1 }, peerFiles: { root: "missing/dir", maxBytes: 1 } }))
  })
})
