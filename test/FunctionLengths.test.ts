/**
 * No function in src/ has more than 100 lines of its own (scripts/function-lengths.mjs: a nested
 * function's lines count against it, not against the function around it).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"

const root = join(import.meta.dirname, "..")
const script = join(root, "scripts", "function-lengths.mjs")

interface LongFunction {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly lines: number
}

/** The checker's findings; it exits 1 when there are any, which is not a failure to run. */
const longFunctions = (...args: ReadonlyArray<string>): ReadonlyArray<LongFunction> => {
  try {
    return JSON.parse(execFileSync(process.execPath, [script, "--json", ...args], { encoding: "utf8" }))
  } catch (error) {
    const stdout = (error as { readonly stdout?: string }).stdout
    if (stdout === undefined || stdout === "") throw error
    return JSON.parse(stdout)
  }
}


describe("function lengths", () => {
  it("no function in src/ has more than 100 lines of its own", () => {
    const long = longFunctions()
    assert.deepStrictEqual(long.map((fn) => `${fn.file}:${fn.line} ${fn.name} (${fn.lines} lines)`), [])
  })

  it("counts a nested function's lines against it, not against the function around it", () => {
    const dir = mkdtempSync(join(tmpdir(), "function-lengths-"))
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i}`).join("\n")
    writeFileSync(
      join(dir, "sample.ts"),
      [
        "export const outer = () => {",
        body(30),
        "  const inner = () => {",
        body(60),
        "  }",
        "  return inner",
        "}",
        "export function plain() {",
        body(101),
        "}"
      ].join("\n")
    )
    const found = longFunctions("--max", "60", dir).map(({ lines, name }) => ({ name, lines }))
    assert.deepStrictEqual(found, [{ name: "outer > inner", lines: 62 }, { name: "plain", lines: 103 }])
  })
})
