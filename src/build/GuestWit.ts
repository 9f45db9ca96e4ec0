/**
 * One WIT document for building guests: a root package's text (the worlds) with the repo's
 * `wit/` murmur packages and jco's bundled WASI 0.2.12 packages nested in as package blocks,
 * which is the single-file form componentize-qjs and jco's embed accept.
 */
import { readdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { packageRoot } from "../project/PackageRoot.js"

/** The repository root. */
export const repoRoot = packageRoot()

const require = createRequire(import.meta.url)
const jcoRoot = resolve(dirname(require.resolve("@bytecodealliance/jco")), "..")
const wasiWitDir = join(jcoRoot, "lib/wit/builtin/0.2.12")
const murmurWitDir = join(repoRoot, "wit")

const listWit = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listWit(join(dir, entry.name)) : entry.name.endsWith(".wit") ? [join(dir, entry.name)] : []
  ).sort()

/** Turns a single-package WIT file (`package x;` header) into a nested `package x { … }` block. */
const nestPackage = (file: string): string => {
  const text = readFileSync(file, "utf8")
  const header = /^\s*package\s+([^;{\s]+)\s*;/m.exec(text)
  if (header === null) throw new Error(`${file}: no package header`)
  return `package ${header[1]} {\n${text.replace(header[0], "")}\n}\n`
}

export const assembleWit = (rootPackage: string): string => {
  const parts = [rootPackage]
  for (const file of listWit(murmurWitDir)) parts.push(`// ${relative(repoRoot, file)}\n${nestPackage(file)}`)
  for (const file of listWit(wasiWitDir)) parts.push(`// jco builtin ${relative(wasiWitDir, file)}\n${nestPackage(file)}`)
  return parts.join("\n")
}

const qjsRoot = dirname(require.resolve("componentize-qjs"))

export const versionAt = (root: string): string => (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version

/** What a built guest depends on besides its sources: part of every build stamp. */
export const builderVersions = (): string => `jco@${versionAt(jcoRoot)} componentize-qjs@${versionAt(qjsRoot)} node@${process.version}`
