/**
 * Reading a core module's sections in tests: ids and payloads, to check that a rewrite leaves
 * alone what it must not touch. Read with the runtime's one reader (src/sandbox/wasm/WasmReader.ts).
 */
import { readSections } from "../../src/sandbox/wasm/WasmReader.js"

export const sections = (bytes: Uint8Array): Array<{ id: number; body: Uint8Array }> =>
  readSections(bytes).map(({ end, id, start }) => ({ id, body: bytes.subarray(start, end) }))
