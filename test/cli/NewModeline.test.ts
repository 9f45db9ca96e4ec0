/**
 * Issue 23 item 8 (part), through `node dist/main.js new`: the `yaml-language-server` modeline a
 * template's manifest starts with is never an absolute path of this installation (which means
 * nothing on another machine, or once the capsule is committed): a path relative to the capsule
 * when its tree holds the schema (a project's `node_modules/capsule-runtime/`), else the
 * published package's schema for this version. (`npm run build` first.)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCli } from "../lib/CapsuleDirs.js"

const repo = resolve(new URL("../..", import.meta.url).pathname)
const version = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version
const base = mkdtempSync(join(tmpdir(), "new-modeline-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const firstLine = (dir: string) => readFileSync(join(dir, "murmur.yaml"), "utf8").split("\n")[0]

describe("new writes a modeline that works away from this machine", () => {
  it("outside any project: the published schema of this version, and no path of the installation", async () => {
    const dir = join(base, "loose", "my-script")
    const made = await runCli(["new", "script", dir])
    expect(made.code, made.stderr).toBe(0)
    expect(firstLine(dir)).toBe(`# yaml-language-server: $schema=https://unpkg.com/capsule-runtime@${version}/schema/murmur.schema.json`)
    expect(readFileSync(join(dir, "murmur.yaml"), "utf8")).not.toContain(repo)
  }, 60_000)

  it("in a project that depends on the package: relative to the capsule, into its node_modules", async () => {
    const project = join(base, "project")
    mkdirSync(join(project, "node_modules", "capsule-runtime", "schema"), { recursive: true })
    writeFileSync(join(project, "node_modules", "capsule-runtime", "schema", "murmur.schema.json"), readFileSync(join(repo, "schema", "murmur.schema.json")))
    const dir = join(project, "capsules", "my-agent")
    const made = await runCli(["new", "agent", dir])
    expect(made.code, made.stderr).toBe(0)
    expect(firstLine(dir)).toBe("# yaml-language-server: $schema=../../node_modules/capsule-runtime/schema/murmur.schema.json")
  }, 60_000)
})
