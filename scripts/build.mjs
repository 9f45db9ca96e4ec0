// `npm run build` (and so `npm start` / `npm test`): compiles the TypeScript only when a source
// or tsconfig changed since the last build (tsc is incremental; its state lives in dist/, so
// deleting dist/ rebuilds everything), then builds the shipped guests, skipping unchanged ones.
// Each slow step says so before it starts: a cold `npm start` is otherwise silent for ~15 s.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const stampFile = join(root, "dist", ".sources.stamp")

const listFiles = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)]
  )

// Names, sizes and mtimes: a rename, a deletion or an edit each change it; reading no contents
// keeps the up-to-date check to a few milliseconds.
const sourcesDigest = () => {
  const hash = createHash("sha256")
  const files = [...listFiles(join(root, "src")), join(root, "tsconfig.json"), join(root, "tsconfig.build.json")].sort()
  for (const file of files) {
    const info = statSync(file)
    hash.update(`${file.slice(root.length)}\0${info.size}\0${info.mtimeMs}\n`)
  }
  return hash.digest("hex")
}

const digest = sourcesDigest()
const upToDate = existsSync(join(root, "dist", "main.js")) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === digest
if (!upToDate) {
  process.stdout.write("compiling TypeScript (incremental; ~15 s from scratch)…\n")
  const started = Date.now()
  const tsc = spawnSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.build.json")], {
    stdio: "inherit"
  })
  if (tsc.status !== 0) process.exit(tsc.status ?? 1)
  writeFileSync(stampFile, digest)
  process.stdout.write(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}
await import(pathToFileURL(join(root, "dist", "build", "main.js")).href)
