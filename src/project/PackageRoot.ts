import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const NAME = "capsule-runtime"

const isPackage = (directory: string): boolean => {
  const manifest = join(directory, "package.json")
  try {
    return existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name === NAME
  } catch {
    return false
  }
}

const find = (): string => {
  const start = dirname(fileURLToPath(import.meta.url))
  for (let directory = start; ; directory = dirname(directory)) {
    if (isPackage(directory)) return directory
    if (dirname(directory) === directory) throw new Error(`${NAME}: no package.json of ${NAME} above ${start}`)
  }
}

let root: string | undefined

/**
 * The package's own directory (where package.json, dist/, wit/ and drivers/ are). Found by
 * walking up rather than by a fixed `../..` because the same code runs from src/ under the test
 * runner, from dist/<folder>/ as compiled, and from the CLI bundle (dist/main.js and its chunks).
 */
export const packageRoot = (): string => (root ??= find())

/** A file of the package, by its path from the package's directory. */
export const packageFile = (...path: ReadonlyArray<string>): string => join(packageRoot(), ...path)

let version: string | undefined

/** The package's version, from its package.json. */
export const packageVersion = (): string =>
  (version ??= String((JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version?: unknown }).version))
