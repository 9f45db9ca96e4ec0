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
})
