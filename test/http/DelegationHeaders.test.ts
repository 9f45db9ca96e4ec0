/**
 * Door spec §8.2–8.3 as a property: whatever origin, trust and delegation headers a caller sends
 * (any case, padding, repeats), a task gets a delegation id only when its origin is `completion`;
 * a `peer` (or anything classified `event`) never carries one, and trust is `trusted` only for a
 * `peer`/`completion` that claims it exactly.
 */
import { FastCheck } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { describe, expect, it } from "vitest"
import { provenanceOf } from "../../src/http/CallContext.js"

const word = FastCheck.constantFrom("peer", "completion", "event", "user", "system", "PEER", "Completion", " peer ", "", "trusted", "untrusted")
const value = FastCheck.oneof(word, FastCheck.string({ maxLength: 12 }))
const headerValue = FastCheck.oneof(value, FastCheck.array(value, { minLength: 1, maxLength: 3 }))
const delegation = FastCheck.oneof(FastCheck.constant("dlg_0123abcd"), FastCheck.string({ maxLength: 20 }), FastCheck.constant("  dlg_x  "))

const headers = FastCheck.record({
  "x-murmur-task-origin": headerValue,
  "x-murmur-task-trust": headerValue,
  "x-murmur-delegation-id": FastCheck.oneof(delegation, FastCheck.array(delegation, { minLength: 1, maxLength: 2 }))
}, { requiredKeys: [] })

describe("origins and delegation ids at the door", () => {
  it("a delegation id is attached only to a completion; peers and events never get one (property)", () => {
    FastCheck.assert(FastCheck.property(headers, (sent) => {
      const provenance = provenanceOf(sent as IncomingHttpHeaders)
      if (provenance.origin !== "completion") expect(provenance.delegationId).toBeUndefined()
      if (provenance.origin === "peer") expect(provenance).not.toHaveProperty("delegationId")
      if (provenance.origin === "event") expect(provenance.trust).toBe("untrusted")
      if (provenance.trust === "trusted") expect(["peer", "completion"]).toContain(provenance.origin)
    }), { numRuns: 2000 })
  })

  it("a peer claiming a delegation id keeps its origin and loses the id", () => {
    const provenance = provenanceOf({ "x-murmur-task-origin": "peer", "x-murmur-task-trust": "trusted", "x-murmur-delegation-id": "dlg_0123abcd" })
    expect(provenance).toEqual({ origin: "peer", trust: "trusted" })
    expect(provenanceOf({ "x-murmur-task-origin": "completion", "x-murmur-delegation-id": "dlg_0123abcd" })).toEqual({ origin: "completion", trust: "untrusted", delegationId: "dlg_0123abcd" })
  })
})
