/**
 * schema/murmur.schema.json and docs/manifest.md against the code: both are what
 * scripts/manifest-schema.mjs would write now, both name every key of ManifestKeys.ts (which its
 * own test holds to the readers), the schema describes no key the readers lack, and it accepts
 * every shipped example and every capsule manifest `new` writes, while refusing typos and
 * out-of-range values (so the acceptance means something).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { tmpdir } from "node:os"
import { parse } from "yaml"
import { describe, expect, it } from "vitest"
import { schemaModeline, templateFiles } from "../../src/cli/Templates.js"
import { MANIFEST_KEYS } from "../../src/project/manifest/ManifestKeys.js"
import { withKeyTable } from "../../src/project/manifest/ManifestReference.js"
import { manifestJsonSchema, manifestSchemaText, SCHEMA_PATH, schemaKeys } from "../../src/project/manifest/ManifestSchema.js"
import { schemaProblems } from "../lib/JsonSchemaCheck.js"

const repo = resolve(new URL("../..", import.meta.url).pathname)
const read = (path: string) => readFileSync(join(repo, path), "utf8")
const REGENERATE = "stale: run `npm run build && node scripts/manifest-schema.mjs` and commit the result"
const schema = manifestJsonSchema()
const schemaPaths = new Set(schemaKeys().map(({ path }) => path))
const tableKeys = Object.keys(MANIFEST_KEYS)

const problemsOf = (yamlText: string) => schemaProblems(schema, parse(yamlText))

describe("the checked-in files are current", () => {
  it("schema/murmur.schema.json is what the generator writes", () => {
    expect(read(SCHEMA_PATH) === manifestSchemaText(), REGENERATE).toBe(true)
  })

  it("docs/manifest.md's key table is what the generator writes", () => {
    const doc = read("docs/manifest.md")
    expect(withKeyTable(doc) === doc, REGENERATE).toBe(true)
  })

  it("package.json ships the schema", () => {
    expect(JSON.parse(read("package.json")).files).toContain("schema")
  })
})

describe("no drift between ManifestKeys.ts, the schema and the reference", () => {
  it("every key of ManifestKeys.ts is in the schema and in docs/manifest.md", () => {
    const doc = read("docs/manifest.md")
    expect(tableKeys.filter((key) => !schemaPaths.has(key))).toEqual([])
    expect(tableKeys.filter((key) => !doc.includes(`| \`${key}\` |`))).toEqual([])
  })

  it("the schema names no key the readers lack (deeper keys only inside blocks the reader takes whole)", () => {
    // A key of ManifestKeys.ts with no key below it there is one the reader reads as a whole value.
    const wholeValues = tableKeys.filter((key) => !tableKeys.some((other) => other.startsWith(`${key}.`)))
    const extra = [...schemaPaths].filter((path) => MANIFEST_KEYS[path] === undefined && !wholeValues.some((key) => path.startsWith(`${key}.`)))
    expect(extra).toEqual([])
  })

  it("every key has help text", () => {
    expect(schemaKeys().filter(({ node }) => typeof node["description"] !== "string").map(({ path }) => path)).toEqual([])
  })
})

describe("the schema accepts what runs", () => {
  const examples = readdirSync(join(repo, "examples")).filter((name) => existsSync(join(repo, "examples", name, "murmur.yaml")))

  it.each(examples)("examples/%s/murmur.yaml", (name) => {
    expect(problemsOf(read(`examples/${name}/murmur.yaml`))).toEqual([])
  })

  it.each(["agent", "script"] as const)("the %s template's manifest, which starts with a modeline that resolves", (kind) => {
    // A project that depends on the package: the modeline points into its node_modules, relatively.
    const project = mkdtempSync(join(tmpdir(), `manifest-schema-${kind}-`))
    mkdirSync(join(project, "node_modules", "capsule-runtime", "schema"), { recursive: true })
    writeFileSync(join(project, "node_modules", "capsule-runtime", SCHEMA_PATH), manifestSchemaText())
    const dir = join(project, "agents", `my-${kind}`)
    const modeline = schemaModeline(dir)
    const manifest = templateFiles(kind, `my-${kind}`, modeline).find(([path]) => path === "murmur.yaml")![1]
    expect(manifest.split("\n")[0]).toBe(modeline.trimEnd())
    expect(problemsOf(manifest)).toEqual([])
    const target = modeline.trimEnd().replace("# yaml-language-server: $schema=", "")
    expect(target).toBe(`../../node_modules/capsule-runtime/${SCHEMA_PATH}`)
    expect(readFileSync(resolve(dir, target), "utf8")).toBe(manifestSchemaText())
    rmSync(project, { recursive: true, force: true })
  })

  it("the modeline is never an absolute path: relative inside the package, else the published schema of this version", () => {
    expect(schemaModeline(join(repo, "my-agent"))).toBe(`# yaml-language-server: $schema=../${SCHEMA_PATH}\n`)
    const version = JSON.parse(read("package.json")).version
    expect(schemaModeline(join(dirname(repo), "elsewhere"))).toBe(`# yaml-language-server: $schema=https://unpkg.com/capsule-runtime@${version}/${SCHEMA_PATH}\n`)
  })

  it("and refuses a misspelled key, a wrong type, an out-of-range port and a refused key", () => {
    const base = "name: a\nversion: '1'\n"
    expect(problemsOf(`${base}capabilities:\n  shel:\n    allow: [echo]\n`)).toEqual(["$.capabilities.shel: unknown key"])
    expect(problemsOf(`${base}lifecycle:\n  task_acceptance: many\n`)).toEqual(["$.lifecycle.task_acceptance: \"many\" is not one of none, single, queue"])
    expect(problemsOf(`${base}network:\n  internal_port: 70000\n`)).toEqual(["$.network.internal_port: 70000 > 65535"])
    expect(problemsOf(`${base}config: {}\n`)).toEqual(["$.config: not allowed"])
    expect(problemsOf("version: '1'\n")).toEqual(["$: missing 'name'"])
  })
})
