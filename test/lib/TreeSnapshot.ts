/**
 * Every file under a directory with its bytes (links as `-> target`, never followed), for tests
 * asserting that nothing in a tree changed. `withMtime` adds each file's mtime, so a rewrite with
 * the same bytes shows too.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { join } from "node:path"

export const snapshot = (root: string, options: { readonly withMtime?: boolean } = {}): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name)
      const stats = lstatSync(path)
      if (stats.isSymbolicLink()) out[prefix + name] = `-> ${readlinkSync(path)}`
      else if (stats.isDirectory()) walk(path, `${prefix}${name}/`)
      else out[prefix + name] = options.withMtime === true ? `${readFileSync(path, "utf8")} @${stats.mtimeMs}` : readFileSync(path, "utf8")
    }
  }
  walk(root, "")
  return out
}
