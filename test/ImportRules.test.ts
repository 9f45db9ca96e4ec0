/**
 * The direction of flow (docs/design.md): domain services import neither the jco host
 * (src/sandbox), the agent loop (src/agent) nor the door (src/http), and the public module's
 * every export carries a `@since` doc comment. Scans the import lines of the sources.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"

const src = join(import.meta.dirname, "..", "src")

const sourcesUnder = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))

/** Every relative module a file imports or re-exports, as a path under src/. */
const importsOf = (file: string): ReadonlyArray<string> =>
  [...readFileSync(file, "utf8").matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g)]
    .map((match) => relative(src, resolve(dirname(file), match[1] ?? match[2]!)))

describe("import rules", () => {
  it("src/services imports neither src/sandbox, src/agent nor src/http", () => {
    const files = sourcesUnder(join(src, "services"))
    assert.isAbove(files.length, 10)
    const forbidden = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => /^(sandbox|agent|http)\//.test(target))
        .map((target) => `${relative(src, file)} imports ${target}`)
    )
    assert.deepStrictEqual(forbidden, [])
  })

  it("the scan sees a forbidden import when there is one", () => {
    const matched = [..."import type { X } from \"../sandbox/GuestJob.js\"\nexport { Y } from '../agent/Trace.js'".matchAll(
      /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']+)["']/g
    )].map((match) => match[1])
    assert.deepStrictEqual(matched, ["../sandbox/GuestJob.js", "../agent/Trace.js"])
  })

  it("every export of the public module has a @since doc comment", () => {
    const text = readFileSync(join(src, "index.ts"), "utf8")
    const statements = [...text.matchAll(/(\/\*\*(?:(?!\*\/)[\s\S])*\*\/)?\s*\nexport\b[^\n]*/g)]
    assert.isAbove(statements.length, 20)
    const undocumented = statements.filter((match) => match[1] === undefined || !match[1].includes("@since")).map((match) => match[0].trim())
    assert.deepStrictEqual(undocumented, [])
  })
})
