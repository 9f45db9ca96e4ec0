import { describe, expect, it } from "vitest"
import * as fc from "fast-check"
import { mintId, uuidv7Simple } from "../../src/services/Ids.js"

describe("ids", () => {
  it("are UUIDv7 in simple form: 32 lowercase hex, version 7, RFC 4122 variant, time first (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 47 }), (now) => {
        const id = uuidv7Simple(now)
        return /^[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/.test(id) && parseInt(id.slice(0, 12), 16) === now
      }),
      { numRuns: 5000 }
    )
  })

  it("do not repeat across many mints (the random pool refills)", () => {
    const ids = new Set(Array.from({ length: 20_000 }, () => mintId("tsk")))
    expect(ids.size).toBe(20_000)
    for (const id of ids) expect(id).toMatch(/^tsk_[0-9a-f]{32}$/)
  })
})
