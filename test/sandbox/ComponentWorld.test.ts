/**
 * What a file that is not a component is told, before jco's decoder (whose messages dump byte
 * arrays over many lines) is asked.
 */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { readWorld } from "../../src/sandbox/component/ComponentWorld.js"
import { buildComponent } from "../lib/components.js"

const messageOf = async (bytes: Uint8Array) => {
  const read = await Effect.runPromise(Effect.either(readWorld(bytes)))
  return Either.isLeft(read) ? read.left.message : "read"
}

describe("readWorld on what is not a component", () => {
  it("names a non-wasm file, a core module and a damaged component in one line each", async () => {
    expect(await messageOf(new TextEncoder().encode("#!/bin/sh\necho hi\n"))).toBe("not a WebAssembly component: not a WebAssembly file (no \\0asm header)")
    expect(await messageOf(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]))).toMatch(/^not a WebAssembly component: a core WebAssembly module, not a component/)
    const component = await buildComponent("echo-tool")
    const damaged = await messageOf(component.slice(0, 200))
    expect(damaged).toMatch(/^not a WebAssembly component: /)
    expect(damaged).not.toContain("\n")
    expect(await messageOf(component)).toBe("read")
  })
})
