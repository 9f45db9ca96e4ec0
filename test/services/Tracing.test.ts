/**
 * `callerSpan`: a caller's W3C `traceparent` becomes the parent of a task's work (so outbound
 * calls continue the caller's trace) only when it is well formed; anything else is no parent.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { callerSpan } from "../../src/services/Tracing.js"

const hex = (length: number) => fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length })

describe("callerSpan", () => {
  it("reads a well-formed traceparent: trace id, span id and the sampled flag (property)", () => {
    fc.assert(fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 255 }), (traceId, spanId, flags) => {
      fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId))
      const span = callerSpan(`00-${traceId}-${spanId}-${flags.toString(16).padStart(2, "0")}`)
      return span !== undefined && span.traceId === traceId && span.spanId === spanId && span.sampled === ((flags & 1) === 1)
    }))
  })

  it("is no parent for anything else: any string, all-zero ids, wrong lengths (property)", () => {
    fc.assert(fc.property(fc.string(), (text) => {
      const span = callerSpan(text)
      return span === undefined || /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/i.test(text.trim())
    }))
    for (const bad of [undefined, "", "00-00000000000000000000000000000000-a1b2c3d4e5f60718-01", "00-5d2f0a6e1c3b4a8d9e7f6a5b4c3d2e1f-0000000000000000-01", "00-5d2f-a1b2-01"]) {
      assert.isUndefined(callerSpan(bad), String(bad))
    }
  })
})
