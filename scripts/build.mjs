// `npm run build` (and so `npm start` / `npm test`): compiles the TypeScript only when a source
// or tsconfig changed since the last build (tsc is incremental; its state lives in dist/, so
// deleting dist/ rebuilds everything), then builds the shipped guests, skipping unchanged ones.
// Each slow step says so before it starts: a cold `npm start` is otherwise silent for ~15 s.
import { spawnSync } from "node:child_process"
import * as esbuild from "esbuild"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
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

// dist/main.js, the command line, is one bundle (with its dynamic imports split into chunks)
// over tsc's output of the same file: a process starts in ~0.8 s instead of ~1.9 s, most of
// which was resolving and compiling a thousand small modules (docs/benchmarks.md, "Start-up").
// Every CLI start pays it: `run`, `serve`, each delegated child. The library (dist/index.js)
// stays as tsc emits it, so an application shares its own copy of effect. Packages with native
// parts, files of their own or a size worth loading only on demand stay outside the bundle.
const bundleCli = () => {
  const chunks = join(root, "dist", "chunks")
  rmSync(chunks, { recursive: true, force: true })
  esbuild.buildSync({
    entryPoints: [join(root, "src", "main.ts")],
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outdir: join(root, "dist"),
    chunkNames: "chunks/[name]-[hash]",
    sourcemap: true,
    logLevel: "warning",
    // Bundled CommonJS (undici, ws) calls require: give the module one.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    // @grpc/grpc-js loads only with `serve --grpc-port` (src/grpc/GrpcServer.ts imports it
    // dynamically); outside the bundle, Node loads it as the CommonJS package it is.
    external: ["typescript", "gpt-tokenizer", "@bytecodealliance/*", "componentize-qjs", "@andreiltd/*", "@grpc/*"]
  })
  // The same entry over tsc's modules, for CPU profiles that name the runtime's files
  // (BENCH_AGENT_PROFILE=1 in bench/agent.mjs); nothing else runs it.
  esbuild.buildSync({ entryPoints: [join(root, "src", "main.ts")], format: "esm", platform: "node", outfile: join(root, "dist", "main-modules.js"), logLevel: "warning" })
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
  bundleCli()
  writeFileSync(stampFile, digest)
  process.stdout.write(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}
await import(pathToFileURL(join(root, "dist", "build", "main.js")).href)
