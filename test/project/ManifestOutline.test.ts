import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { readManifestOutline } from "../../src/project/ManifestOutline.js"

const file = (text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), "outline-")), "murmur.yaml")
  writeFileSync(path, text)
  return path
}

describe("readManifestOutline", () => {
  it("reads the top-level fields as written, unchecked", () => {
    const outline = readManifestOutline(file("name: hello\nversion: 1.2.0\nartifacts: [{ source: ./greet }]\nbogus: 3\n"))
    expect(outline).toEqual(Either.right({ name: "hello", version: "1.2.0", artifacts: [{ source: "./greet" }], bogus: 3 }))
  })

  it("is right undefined for YAML that is not a mapping", () => {
    expect(readManifestOutline(file("just text\n"))).toEqual(Either.right(undefined))
    expect(readManifestOutline(file(""))).toEqual(Either.right(undefined))
  })

  it("is left for a file that is not YAML or not there", () => {
    expect(Either.isLeft(readManifestOutline(file("name: [unclosed\n")))).toBe(true)
    expect(Either.isLeft(readManifestOutline(join(tmpdir(), "no-such-dir-outline", "murmur.yaml")))).toBe(true)
  })
})
