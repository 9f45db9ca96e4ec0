/**
 * Builds one JS or TS guest directory (a `world.wit` beside its modules) into a component with
 * the pipeline the shipped guests use: StarlingMonkey when the world imports `wasi:http` (QuickJS
 * cannot link it), else QuickJS with its extended-const initializers folded; then the loader's own
 * checks. The output is stamped with a digest of everything it was built from, so an unchanged
 * guest is not rebuilt. `npm run build` (./ShippedGuests.ts) and `build <dir>` both come here.
 */
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { type BuildCache, cachedBuild } from "./BuildCache.js"
import { assembleWit, builderVersions } from "./GuestWit.js"
import { buildQuickJs, type GuestSource } from "./QuickJsBuild.js"
import { replaceFile } from "./ReplaceFile.js"
import { buildStarlingMonkey, starlingMonkeyVersion } from "./StarlingMonkeyBuild.js"
import { composeKit, KIT_FILE, pointAtKit, usesKit } from "./ToolKit.js"

export interface GuestBuilder {
  /** Shown in progress lines. */
  readonly label: "QuickJS" | "StarlingMonkey"
  /** The builder as the stamp records it (its version, when not in `builderVersions`). */
  readonly id: () => string
  readonly build: (source: GuestSource) => Promise<Uint8Array>
}

export const quickJs: GuestBuilder = { label: "QuickJS", id: () => "componentize-qjs", build: buildQuickJs }
export const starlingMonkey: GuestBuilder = { label: "StarlingMonkey", id: starlingMonkeyVersion, build: buildStarlingMonkey }

/** What a guest directory holds and becomes. */
export interface GuestDir {
  readonly dir: string
  /** Entry module file name in `dir`. */
  readonly entry: string
  readonly world: string
  readonly builder: GuestBuilder
  /** The component's file name in `dir` (`<name>.wasm`); its stamp is `.<file>.stamp`. */
  readonly output: string
  /** What it must be runnable as once built. */
  readonly role: "tool" | "capsule" | "hook"
}

export interface Built {
  readonly file: string
  readonly rebuilt: boolean
  /** Copied from the build cache rather than built. */
  readonly reused: boolean
  readonly ms: number
  readonly bytes: number
}

/** Bump when the build changes in a way the hashed inputs do not show. */
const BUILD_REVISION = "ShippedGuests/2"

const ENTRY_NAMES = ["tool", "driver", "hook", "capsule", "index", "main"]

/** The conventional entry module of a guest directory, `.ts` before `.js`. */
export const findEntry = (dir: string): string | undefined => {
  const names = new Set(readdirSync(dir))
  for (const stem of ENTRY_NAMES) {
    for (const ext of [".ts", ".js", ".mjs"]) if (names.has(stem + ext)) return stem + ext
  }
  return undefined
}

/** The worlds `world.wit` declares, each with the text of its body. */
const worldsOf = (wit: string): ReadonlyArray<{ readonly name: string; readonly body: string }> =>
  [...wit.matchAll(/^\s*world\s+([\w-]+)\s*\{([^}]*)\}/gm)].map((match) => ({ name: match[1]!, body: match[2]! }))

/**
 * The world to build (the one named after the role when there are several) and its builder:
 * componentize-qjs refuses every guest importing `wasi:http`, so those go to StarlingMonkey.
 */
export const chooseWorld = (wit: string, preferred: string): { readonly world: string; readonly builder: GuestBuilder } | undefined => {
  const worlds = worldsOf(wit)
  const world = worlds.find((candidate) => candidate.name === preferred) ?? worlds[0]
  if (world === undefined) return undefined
  return { world: world.name, builder: /import\s+wasi:http\//.test(world.body) ? starlingMonkey : quickJs }
}

/** The body of the guest's world in its `world.wit`. */
const worldBodyOf = (guest: GuestDir): string =>
  worldsOf(readFileSync(join(guest.dir, "world.wit"), "utf8")).find((world) => world.name === guest.world)?.body ?? ""

/** A source file's name and text. */
type Source = readonly [name: string, text: string]

/** The tool kit composed for the guest, when one of its modules imports it (./ToolKit.ts). */
const kitFor = (guest: GuestDir, sources: ReadonlyArray<Source>): string | undefined =>
  sources.some(([name, text]) => name !== "world.wit" && usesKit(text))
    ? composeKit(worldBodyOf(guest), guest.builder === starlingMonkey)
    : undefined

/** Every source the component is made of, in a fixed order: the WIT and the modules, read once. */
const readSources = (dir: string): ReadonlyArray<Source> =>
  readdirSync(dir)
    .filter((name) => name === "world.wit" || /\.(m?js|ts)$/.test(name) && !name.endsWith(".d.ts"))
    .sort()
    .map((name) => [name, readFileSync(join(dir, name), "utf8")] as const)

export const stampFileOf = (guest: GuestDir): string => join(guest.dir, `.${guest.output}.stamp`)

/** The digest the stamp holds: the build's inputs, so any change to them rebuilds. */
export const guestDigest = (guest: GuestDir, wit: string): string => {
  const hash = createHash("sha256")
  for (const part of [BUILD_REVISION, builderVersions(), guest.builder.id(), guest.world, guest.role, wit]) hash.update(part).update("\0")
  const sources = readSources(guest.dir)
  for (const [name, text] of sources) hash.update(name).update("\0").update(text).update("\0")
  hash.update(kitFor(guest, sources) ?? "")
  return hash.digest("hex")
}

/** The digest of the guest's sources as they are now. */
export const currentDigest = (guest: GuestDir): string => guestDigest(guest, assembleWit(readFileSync(join(guest.dir, "world.wit"), "utf8")))

/** True when the component on disk was built from exactly the sources there now (whose digest is `digest`). */
export const isUpToDate = (guest: GuestDir, digest: string = currentDigest(guest)): boolean => {
  const file = join(guest.dir, guest.output)
  const stampFile = stampFileOf(guest)
  if (!existsSync(file) || !existsSync(stampFile)) return false
  return readFileSync(stampFile, "utf8") === digest
}

/** The built component must be one our loader accepts (murmur:* exact, wasi:*@0.2.x) and runs. */
const checkWorld = async (bytes: Uint8Array, guest: GuestDir) => {
  // jco and effect are loaded only when something is built: `npm start`'s up-to-date check skips them.
  const { componentWit } = await import("@bytecodealliance/jco")
  const { parseWorld, runnableAs, unsupported } = await import("../sandbox/component/ComponentWorld.js")
  const world = parseWorld(await componentWit(bytes))
  const problems = unsupported(world).map((problem) => problem.message)
  if (!runnableAs(world).includes(guest.role)) {
    const expected = guest.role === "hook" ? "murmur:hook/lifecycle@0.8.0" : `murmur:${guest.role === "capsule" ? "capsule" : "tool"}/run@0.1.0`
    problems.push(`it does not export ${expected} (world ${guest.world})`)
  }
  if (problems.length > 0) throw new Error(problems.join("; "))
}

/**
 * The sources as the builders take them: TypeScript transpiled (types erased, module by module)
 * and the tool kit written beside the modules that import it, in a scratch copy of the
 * directory, so both builders see plain ES modules with the same relative imports. A guest of
 * plain JS that does not use the kit is built from its own directory.
 */
const withBuildableSources = async <A>(guest: GuestDir, build: (dir: string) => Promise<A>): Promise<A> => {
  const sources = readSources(guest.dir)
  const kit = kitFor(guest, sources)
  const typed = sources.some(([name]) => name.endsWith(".ts"))
  if (kit === undefined && !typed) return build(guest.dir)
  const ts = typed ? (await import("typescript")).default : undefined
  const scratch = mkdtempSync(join(tmpdir(), "capsule-runtime-src-"))
  try {
    if (kit !== undefined) writeFileSync(join(scratch, KIT_FILE), kit)
    for (const [name, text] of sources) {
      if (name === "world.wit") {
        writeFileSync(join(scratch, name), text)
        continue
      }
      const plain = ts !== undefined && name.endsWith(".ts")
        ? ts.transpileModule(text, {
          fileName: name,
          compilerOptions: { target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: false }
        }).outputText
        : text
      writeFileSync(join(scratch, name.replace(/\.ts$/, ".js")), kit === undefined ? plain : pointAtKit(plain))
    }
    return await build(scratch)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

export const buildGuestDir = async (guest: GuestDir, cache?: BuildCache): Promise<Built> => {
  const started = Date.now()
  const file = join(guest.dir, guest.output)
  const stampFile = stampFileOf(guest)
  const wit = assembleWit(readFileSync(join(guest.dir, "world.wit"), "utf8"))
  const stamp = guestDigest(guest, wit)
  if (isUpToDate(guest, stamp)) {
    return { file, rebuilt: false, reused: false, ms: Date.now() - started, bytes: readFileSync(file).length }
  }
  const { bytes, reused } = await cachedBuild(cache, stamp, async () => {
    const built = await withBuildableSources(guest, (dir) => {
      const entry = join(dir, basename(guest.entry).replace(/\.ts$/, ".js"))
      return guest.builder.build({ entry, jsSource: readFileSync(entry, "utf8"), wit, world: guest.world })
    })
    await checkWorld(built, guest)
    return built
  })
  replaceFile(file, bytes)
  replaceFile(stampFile, stamp)
  return { file, rebuilt: true, reused, ms: Date.now() - started, bytes: bytes.length }
}
