/**
 * The guest worker's start is on every run's path: loading `effect` there cost ~0.4 s and ~28 MiB
 * per worker (bench:sandbox). Its static import graph must stay free of it.
 */
import { readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const entry = resolve(dirname(fileURLToPath(import.meta.url)), "../../src/sandbox/host/GuestWorker.ts")

/** Every bare package a module reaches through relative imports (type-only imports excluded). */
const packagesReached = (file: string, seen = new Set<string>(), packages = new Set<string>()) => {
  if (seen.has(file)) return packages
  seen.add(file)
  const source = readFileSync(file, "utf8")
  for (const match of source.matchAll(/^import\s+(?!type\b)[^;]*?from\s+"([^"]+)"/gms)) {
    const specifier = match[1]!
    if (specifier.startsWith(".")) packagesReached(join(dirname(file), specifier.replace(/\.js$/, ".ts")), seen, packages)
    else packages.add(specifier)
  }
  return packages
}

describe("guest worker imports", () => {
  it("reach no Effect module (the worker starts on every guest run)", () => {
    const packages = [...packagesReached(entry)]
    expect(packages.length).toBeGreaterThan(0)
    expect(packages.filter((name) => name === "effect" || name.startsWith("effect/") || name.startsWith("@effect/"))).toEqual([])
  })
})
