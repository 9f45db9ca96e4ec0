/**
 * `MURMUR_SPAWNER` (door spec §8.1): url and trust come together or not at all, the url is a
 * loopback http door, and anything else is the launch error "unreadable spawner handle".
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { encodeSpawnerHandle, parseSpawnerHandle } from "../../src/delegation/SpawnerHandle.js"

const ids = { session_id: "ses_0123abcd", context_id: "ctx_1", delegation_id: "dlg_0123abcd" }
const parse = (value: unknown) => parseSpawnerHandle(typeof value === "string" ? value : JSON.stringify(value))

describe("the spawner handle", () => {
  it("reads a handle with and without a completion address, and round-trips", () => {
    expect(parse(ids)).toEqual(Either.right({ sessionId: "ses_0123abcd", contextId: "ctx_1", delegationId: "dlg_0123abcd" }))
    const full = Either.getOrThrow(parse({ ...ids, url: "http://127.0.0.1:4000/", trust: "untrusted" }))
    expect(full.completion).toEqual({ url: "http://127.0.0.1:4000/", trust: "untrusted" })
    expect(Either.getOrThrow(parseSpawnerHandle(encodeSpawnerHandle(full)))).toEqual(full)
  })

  it("carries the chain's depth, its ceiling and where the task comes from, and round-trips them", () => {
    const deep = Either.getOrThrow(parse({ ...ids, url: "http://127.0.0.1:4000/", trust: "trusted", depth: 2, max_depth: 3, input: "stdin" }))
    expect(deep).toMatchObject({ depth: 2, maxDepth: 3, input: "stdin" })
    expect(Either.getOrThrow(parseSpawnerHandle(encodeSpawnerHandle(deep)))).toEqual(deep)
  })

  it.each([
    ["not JSON", "{", "not JSON"],
    ["url without trust", { ...ids, url: "http://127.0.0.1:4000/" }, "url and trust come together or not at all"],
    ["trust without url", { ...ids, trust: "trusted" }, "url and trust come together or not at all"],
    ["a remote url", { ...ids, url: "http://example.com/", trust: "trusted" }, "is not an http address on loopback"],
    ["https", { ...ids, url: "https://127.0.0.1:4000/", trust: "trusted" }, "is not an http address on loopback"],
    ["credentials in the url", { ...ids, url: "http://u:p@127.0.0.1:4000/", trust: "trusted" }, "is not an http address on loopback"],
    ["a bad delegation id", { ...ids, delegation_id: "../x" }, "delegation_id"],
    ["an unknown key", { ...ids, extra: 1 }, "extra"],
    ["a depth of 0", { ...ids, depth: 0 }, "depth"],
    ["a fractional ceiling", { ...ids, max_depth: 1.5 }, "max_depth"],
    ["another input", { ...ids, input: "argv" }, "input"]
  ])("refuses %s", (_, value, why) => {
    const parsed = parse(value)
    expect(Either.isLeft(parsed)).toBe(true)
    expect(Either.getLeft(parsed).pipe((option) => option._tag === "Some" ? option.value : "")).toMatch(/^unreadable spawner handle in MURMUR_SPAWNER: /)
    expect(Either.getLeft(parsed).pipe((option) => option._tag === "Some" ? option.value : "")).toContain(why)
  })
})
