/**
 * The architecture as written in docs/architecture.json: every import from one part of src/ into
 * another is an allowed arrow and none is a forbidden one, no import cycle exists among the files
 * of src/, and the public module's every export carries a `@since` doc comment. The file's
 * `allowList` names the violations still left; an entry that no longer occurs fails too, so the
 * list only shrinks.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"

const root = join(import.meta.dirname, "..")
const src = join(root, "src")

interface Architecture {
  readonly parts: Record<string, ReadonlyArray<string>>
  readonly may: Record<string, ReadonlyArray<string>>
  readonly never: Record<string, ReadonlyArray<string>>
  readonly allowList: ReadonlyArray<string>
}
const architecture: Architecture = JSON.parse(readFileSync(join(root, "docs", "architecture.json"), "utf8"))

const sources = readdirSync(src, { withFileTypes: true, recursive: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
  .map((entry) => relative(src, join(entry.parentPath, entry.name)))

const importPattern = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g

/** Every relative module a source imports or re-exports (types too), as a path under src/. */
const importsOf = (text: string, file: string): ReadonlyArray<string> =>
  [...text.matchAll(importPattern)].map((match) =>
    relative(src, resolve(dirname(join(src, file)), match[1] ?? match[2]!)).replace(/\.js$/, ".ts")
  )

const partOf = (file: string): string | undefined =>
  Object.entries(architecture.parts).find(([, prefixes]) =>
    prefixes.some((prefix) => prefix.endsWith("/") ? file.startsWith(prefix) : file === prefix)
  )?.[0]

const graph = new Map(sources.map((file) => [file, importsOf(readFileSync(join(src, file), "utf8"), file)]))

/** Cross-part imports the architecture does not allow, as `from -> to (Part -> Part)`. */
const violations = (): ReadonlyArray<string> =>
  [...graph].flatMap(([file, targets]) => {
    const from = partOf(file)!
    return targets.flatMap((target) => {
      const to = partOf(target)
      if (to === undefined || to === from) return []
      const allowed = architecture.may[from]?.includes(to) === true && architecture.never[from]?.includes(to) !== true
      return allowed ? [] : [`${file} -> ${target} (${from} -> ${to})`]
    })
  })

/** The strongly connected components of more than one file (Tarjan). */
const cycles = (): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const found: Array<Array<string>> = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!))
    }
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        component.push(member)
      } while (member !== node)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

describe("import rules (docs/architecture.json)", () => {
  it("every file of src/ belongs to a part, and every part's arrows name parts", () => {
    assert.deepStrictEqual(sources.filter((file) => partOf(file) === undefined), [])
    const names = Object.keys(architecture.parts)
    for (const arrows of [architecture.may, architecture.never]) {
      for (const [from, targets] of Object.entries(arrows)) {
        assert.include(names, from)
        for (const target of targets) assert.include(names, target)
      }
    }
  })

  it("no import crosses parts against the architecture, beyond the allow-list; every listed one still occurs", () => {
    const found = violations()
    assert.deepStrictEqual(found.filter((violation) => !architecture.allowList.includes(violation)), [])
    assert.deepStrictEqual(architecture.allowList.filter((entry) => !found.includes(entry)), [])
  })

  it("no import cycle among the files of src/", () => {
    assert.deepStrictEqual(cycles(), [])
  })

  it("the scan sees imports, type imports and dynamic imports", () => {
    const text = "import type { X } from \"../sandbox/GuestJob.js\"\nexport { Y } from '../agent/Trace.js'\nconst z = await import(\"./Z.js\")"
    assert.deepStrictEqual(importsOf(text, "services/A.ts"), ["sandbox/GuestJob.ts", "agent/Trace.ts", "services/Z.ts"])
  })

  it.each(["index.ts", "CapsuleRuntime.ts", "Door.ts"])("every export of the public module %s has a @since doc comment", (file) => {
    const text = readFileSync(join(src, file), "utf8")
    const statements = [...text.matchAll(/(\/\*\*(?:(?!\*\/)[\s\S])*\*\/)?\s*\nexport\b[^\n]*/g)]
    assert.isAbove(statements.length, 2)
    const undocumented = statements.filter((match) => match[1] === undefined || !match[1].includes("@since")).map((match) => match[0].trim())
    assert.deepStrictEqual(undocumented, [])
  })
})
