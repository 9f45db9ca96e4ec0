/**
 * Step 1 of `npm run bench:sandbox` (run with vite-node, since the fixture builders are
 * TypeScript): builds the components the sandbox bench needs and writes their paths to
 * `.cache/bench/sandbox-fixtures.json`, so that step 2 (`bench/sandbox.mjs`) runs on plain Node
 * against dist/ with no TS loader in the measured process.
 *
 * Catalogue fixtures come from test/lib/components.ts (`componentPath`, cached there). The two
 * bench-only fixtures in bench/fixtures/ are built with the same toolchain and WIT: the WAT one
 * with jco's wasm-tools (parse → componentEmbed → componentNew), the JS one with componentize-qjs
 * plus the extended-const lowering (test/lib/wasmConstExpr.ts); their worlds (bench/fixtures/
 * bench.wit) are added to the fixtures' root package. Cached in .cache/components/ by digest.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { componentPath, fixtureWitSource } from "../test/lib/components.js"
import { buildQuickJs } from "../src/build/QuickJsBuild.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const benchFixtures = path.join(root, "bench/fixtures")
const cacheDir = path.join(root, ".cache/components")
const outFile = path.join(root, ".cache/bench/sandbox-fixtures.json")
/** A dependency's version, read from node_modules (jco's exports map hides its package.json). */
const version = (pkg: string) => (JSON.parse(fs.readFileSync(path.join(root, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version

/** The fixtures' WIT with the bench worlds inserted into its root package. */
const witSource = (): string => {
  const all = fixtureWitSource()
  const head = fs.readFileSync(path.join(root, "test/fixtures/components/fixtures.wit"), "utf8")
  if (!all.startsWith(head)) throw new Error("fixtureWitSource() no longer starts with fixtures.wit")
  return `${head}\n${fs.readFileSync(path.join(benchFixtures, "bench.wit"), "utf8")}\n${all.slice(head.length)}`
}

const bench = {
  "capsule-noop": { kind: "wat", source: "capsule-noop.wat", world: "bench-noop" },
  "capsule-invoke-loop": { kind: "js", source: "capsule-invoke-loop.js", world: "bench-invoke-loop" }
} as const

const buildBench = async (name: keyof typeof bench): Promise<string> => {
  const spec = bench[name]
  const wit = witSource()
  const source = fs.readFileSync(path.join(benchFixtures, spec.source), "utf8")
  const digest = createHash("sha256")
    .update(["bench-fixtures/1", version("@bytecodealliance/jco"), version("componentize-qjs"), process.version, spec.world, wit, source].join("\0"))
    .digest("hex")
  const file = path.join(cacheDir, `bench-${name}-${digest.slice(0, 32)}.wasm`)
  if (fs.existsSync(file)) return file
  let bytes: Uint8Array
  if (spec.kind === "wat") {
    const { componentEmbed, componentNew, parse } = await import("@bytecodealliance/jco")
    const core = await parse(source)
    bytes = await componentNew(await componentEmbed({ binary: core, witSource: wit, world: spec.world }), [])
  } else {
    bytes = await buildQuickJs({ entry: path.join(benchFixtures, spec.source), jsSource: source, wit, world: spec.world })
  }
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, bytes)
  fs.renameSync(tmp, file)
  return file
}

const started = Date.now()
fs.mkdirSync(cacheDir, { recursive: true })
fs.mkdirSync(path.dirname(outFile), { recursive: true })
const paths: Record<string, string> = {}
for (const name of ["echo-tool", "capsule-allowlisted", "capsule-spin-loop", "capsule-memory-balloon"] as const) {
  paths[name] = await componentPath(name)
}
for (const name of Object.keys(bench) as Array<keyof typeof bench>) paths[name] = await buildBench(name)
fs.writeFileSync(outFile, JSON.stringify(paths, null, 2))
console.error(`[bench fixtures] ${Object.keys(paths).length} components ready in ${Date.now() - started} ms → ${path.relative(root, outFile)}`)
