/**
 * The guests this repository ships as source and builds in `npm run build`: the drivers and
 * the examples' tools. Each lives in a directory with its own `murmur.yaml` (its name), a
 * `world.wit` and its JS; the component is written next to them as `<name>.wasm` (git-ignored)
 * with a stamp of everything it was built from (`.<name>.wasm.stamp`), so an unchanged guest is
 * not rebuilt, and is checked to be one this runtime's loader accepts.
 */
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { componentWit } from "@bytecodealliance/jco"
import { parse } from "yaml"
import { parseWorld, unsupported } from "../sandbox/ComponentWorld.js"
import { assembleWit, builderVersions, repoRoot } from "./GuestWit.js"
import { buildQuickJs, type GuestSource } from "./QuickJsBuild.js"
import { buildStarlingMonkey, starlingMonkeyVersion } from "./StarlingMonkeyBuild.js"

export interface GuestBuilder {
  /** The builder as the stamp records it (its version, when not in `builderVersions`). */
  readonly id: () => string
  readonly build: (source: GuestSource) => Promise<Uint8Array>
}

const quickJs: GuestBuilder = { id: () => "componentize-qjs", build: buildQuickJs }
const starlingMonkey: GuestBuilder = { id: starlingMonkeyVersion, build: buildStarlingMonkey }

export interface ShippedGuest {
  /** Directory relative to the repository root. */
  readonly dir: string
  /** Entry module in `dir`. */
  readonly entry: string
  readonly world: string
  readonly builder: GuestBuilder
}

/** Quick QuickJS builds first; the StarlingMonkey one (~20 s when rebuilt) last. */
export const shippedGuests: ReadonlyArray<ShippedGuest> = [
  { dir: "drivers/scripted", entry: "driver.js", world: "driver", builder: quickJs },
  { dir: "examples/hello/artifacts/greet", entry: "tool.js", world: "tool", builder: quickJs },
  { dir: "drivers/openai", entry: "driver.js", world: "driver", builder: starlingMonkey }
]

export const shippedGuest = (dir: string): ShippedGuest => {
  const guest = shippedGuests.find((candidate) => candidate.dir === dir)
  if (guest === undefined) throw new Error(`no shipped guest in ${dir}`)
  return guest
}

export interface Built {
  readonly file: string
  readonly rebuilt: boolean
  readonly ms: number
  readonly bytes: number
}

/** Bump when the build changes in a way the hashed inputs do not show. */
const BUILD_REVISION = "ShippedGuests/2"

/** Every source the component is made of, in a fixed order: the WIT and the JS modules. */
const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir).filter((name) => name === "world.wit" || name.endsWith(".js") || name.endsWith(".mjs")).sort()

/** The built component must be one our loader accepts (murmur:* exact, wasi:*@0.2.x). */
const checkWorld = async (bytes: Uint8Array, dir: string) => {
  const problems = unsupported(parseWorld(await componentWit(bytes)))
  if (problems.length > 0) throw new Error(`${dir}: ${problems.map((problem) => problem.message).join("; ")}`)
}

export const buildGuest = async (guest: ShippedGuest): Promise<Built> => {
  const started = Date.now()
  const dir = join(repoRoot, guest.dir)
  const name = (parse(readFileSync(join(dir, "murmur.yaml"), "utf8")) as { name: string }).name
  const file = join(dir, `${name}.wasm`)
  const stampFile = join(dir, `.${name}.wasm.stamp`)
  const entry = join(dir, guest.entry)
  const wit = assembleWit(readFileSync(join(dir, "world.wit"), "utf8"))
  const hash = createHash("sha256")
  for (const part of [BUILD_REVISION, builderVersions(), guest.builder.id(), guest.world, wit]) hash.update(part).update("\0")
  for (const source of sourceFiles(dir)) hash.update(source).update("\0").update(readFileSync(join(dir, source))).update("\0")
  const stamp = hash.digest("hex")
  if (existsSync(file) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) {
    return { file, rebuilt: false, ms: Date.now() - started, bytes: readFileSync(file).length }
  }
  const bytes = await guest.builder.build({ entry, jsSource: readFileSync(entry, "utf8"), wit, world: guest.world })
  await checkWorld(bytes, guest.dir)
  // Concurrent builds (a test run beside `npm run build`) each write their own temp file; the
  // renames are atomic, so a reader sees one whole component or the previous one.
  const unique = `${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  try {
    writeFileSync(`${file}.${unique}`, bytes)
    renameSync(`${file}.${unique}`, file)
    writeFileSync(`${stampFile}.${unique}`, stamp)
    renameSync(`${stampFile}.${unique}`, stampFile)
  } finally {
    rmSync(`${file}.${unique}`, { force: true })
    rmSync(`${stampFile}.${unique}`, { force: true })
  }
  return { file, rebuilt: true, ms: Date.now() - started, bytes: bytes.length }
}
