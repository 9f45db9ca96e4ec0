/**
 * What `build <dir>` builds: every guest of a capsule that comes as source (a directory with a
 * `world.wit` and a JS or TS entry): the script capsule itself (`capsule.wasm`), and each
 * artifact whose `source:` is such a directory (`<name>.wasm` beside its sources). A tool or
 * driver directory on its own (its `murmur.yaml` has `runtime:`) is built the same way.
 * Artifacts that come prebuilt (a `.wasm`, or a registry install) are left alone.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import { join, resolve } from "node:path"
import { Either } from "effect"
import { type ManifestOutline, readManifestOutline } from "../project/ManifestOutline.js"
import { chooseWorld, findEntry, type GuestDir } from "./GuestBuild.js"

export interface BuildTarget {
  /** How progress lines name it: `capsule hello`, `tool greet`. */
  readonly label: string
  readonly guest: GuestDir
}

/** A problem found while planning: its code, and the message naming the path. */
export interface BuildProblem {
  readonly code: string
  readonly message: string
}

export interface BuildPlan {
  readonly targets: ReadonlyArray<BuildTarget>
  readonly problems: ReadonlyArray<BuildProblem>
}

type Yaml = ManifestOutline

const readYaml = (file: string): Yaml | undefined => Either.getOrUndefined(readManifestOutline(file))

/** A directory with `world.wit` as one guest, or the problem that keeps it from building. */
const guestAt = (dir: string, name: string, role: "tool" | "driver" | "hook" | "capsule"): BuildTarget | BuildProblem => {
  const entry = findEntry(dir)
  if (entry === undefined) {
    return { code: "E-BUILD-002", message: `${dir}: world.wit but no entry module (expected tool, driver, hook, capsule or index, .ts or .js)` }
  }
  const chosen = chooseWorld(readFileSync(join(dir, "world.wit"), "utf8"), role === "capsule" ? "capsule" : role)
  if (chosen === undefined) return { code: "E-BUILD-002", message: `${join(dir, "world.wit")}: declares no world` }
  return {
    label: `${role} ${name}`,
    guest: {
      dir,
      entry,
      world: chosen.world,
      builder: chosen.builder,
      output: role === "capsule" ? "capsule.wasm" : `${name}.wasm`,
      role: role === "capsule" || role === "hook" ? role : "tool"
    }
  }
}

const roleOf = (runtime: unknown): "tool" | "driver" | "hook" => (runtime === "driver" || runtime === "hook" ? runtime : "tool")

const isTarget = (value: BuildTarget | BuildProblem): value is BuildTarget => "guest" in value

export const planCapsuleBuild = (directory: string): BuildPlan => {
  const root = resolve(directory)
  const manifestPath = join(root, "murmur.yaml")
  const manifest = readYaml(manifestPath)
  if (manifest === undefined) return { targets: [], problems: [{ code: "E-IO-001", message: `no readable murmur.yaml at ${manifestPath}` }] }
  const targets: Array<BuildTarget> = []
  const problems: Array<BuildProblem> = []
  const add = (found: BuildTarget | BuildProblem) => {
    if (!isTarget(found)) return void problems.push(found)
    if (!targets.some((target) => target.guest.dir === found.guest.dir)) targets.push(found)
  }
  const name = typeof manifest["name"] === "string" ? manifest["name"] : "capsule"
  const runtime = manifest["runtime"]
  if (typeof runtime === "string") {
    // An artifact directory of its own.
    if (existsSync(join(root, "world.wit"))) add(guestAt(root, name, roleOf(runtime)))
    else problems.push({ code: "E-BUILD-002", message: `${root}: no world.wit to build from` })
    return { targets, problems }
  }
  const artifacts = Array.isArray(manifest["artifacts"]) ? manifest["artifacts"] as ReadonlyArray<Yaml> : []
  for (const artifact of artifacts) {
    const source = artifact["source"]
    if (typeof source !== "string") continue
    const dir = resolve(root, source)
    const artifactName = typeof artifact["name"] === "string" ? artifact["name"] : source
    if (!existsSync(dir)) {
      problems.push({ code: "E-BUILD-003", message: `artifact '${artifactName}': source ${dir} does not exist` })
      continue
    }
    if (!statSync(dir).isDirectory() || !existsSync(join(dir, "world.wit"))) continue
    const own = readYaml(join(dir, "murmur.yaml"))
    const ownName = typeof own?.["name"] === "string" ? own["name"] : artifactName
    add(guestAt(dir, ownName, roleOf(artifact["runtime"])))
  }
  // A script capsule's own sources: the capsule component is built last, after its tools.
  if (existsSync(join(root, "world.wit"))) add(guestAt(root, name, "capsule"))
  return { targets, problems }
}
