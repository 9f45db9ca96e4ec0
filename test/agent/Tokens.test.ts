import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { tokenCounter } from "../../src/agent/Tokens.js"

describe("token counts (cl100k_base)", () => {
  it("counts as cl100k does, and takes special-token strings as plain text", async () => {
    const count = await Effect.runPromise(tokenCounter)
    expect(count("hello world")).toBe(2)
    expect(count("")).toBe(0)
    expect(count(JSON.stringify({ role: "user", content: [{ type: "text", text: "hi" }] }))).toBeGreaterThan(5)
    expect(count("a <|endoftext|> b")).toBeGreaterThan(3)
    expect(await Effect.runPromise(tokenCounter)).toBe(count)
  })

  it("counts a hostile run of one character in bounded pieces (BPE is quadratic in a word's length)", async () => {
    const count = await Effect.runPromise(tokenCounter)
    const piece = count("x".repeat(256))
    expect(count("x".repeat(3_000_000))).toBe(11_718 * piece + count("x".repeat(192)))
    expect(count(`a ${"y".repeat(300)} b`)).toBe(count(`a ${"y".repeat(256)}`) + count(`${"y".repeat(44)} b`))
    expect(count("😀".repeat(1000))).toBeGreaterThan(0)
  })
})
