/**
 * The guests this repository ships as source and builds in `npm run build`: the drivers and
 * the examples' tools. Each lives in a directory with its own `murmur.yaml` (its name), a
 * `world.wit` and its JS; the component is written next to them as `<name>.wasm` (git-ignored)
 * with a stamp of everything it was built from, so an unchanged guest is not rebuilt.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parse } from "yaml"
import { assembleWit, builderVersions, repoRoot } from "./GuestWit.js"
import { buildQuickJs } from "./QuickJsBuild.js"

export interface ShippedGuest {
  /** Directory relative to the repository root. */
  readonly dir: string
  /** Entry module in `dir`. */
  readonly entry: string
  readonly world: string
  readonly build: (source: { readonly entry: string; readonly jsSource: string; readonly wit: string; readonly world: string }) => Promise<Uint8Array>
}

export const quickJsGuests: ReadonlyArray<ShippedGuest> = [
  { dir: "drivers/scripted", entry: "driver.js", world: "driver", build: buildQuickJs },
  { dir: "examples/hello/artifacts/greet", entry: "tool.js", world: "tool", build: buildQuickJs }
]

export interface Built {
  readonly file: string
  readonly rebuilt: boolean
  readonly ms: number
}

export const buildGuest = async (guest: ShippedGuest): Promise<Built> => {
  const started = Date.now()
  const dir = join(repoRoot, guest.dir)
  const name = (parse(readFileSync(join(dir, "murmur.yaml"), "utf8")) as { name: string }).name
  const file = join(dir, `${name}.wasm`)
  const stampFile = join(dir, `.${name}.wasm.stamp`)
  const entry = join(dir, guest.entry)
  const jsSource = readFileSync(entry, "utf8")
  const wit = assembleWit(readFileSync(join(dir, "world.wit"), "utf8"))
  const stamp = createHash("sha256").update([builderVersions(), guest.world, wit, jsSource].join("\0")).digest("hex")
  if (existsSync(file) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) {
    return { file, rebuilt: false, ms: Date.now() - started }
  }
  const bytes = await guest.build({ entry, jsSource, wit, world: guest.world })
  writeFileSync(`${file}.tmp`, bytes)
  renameSync(`${file}.tmp`, file)
  writeFileSync(stampFile, stamp)
  return { file, rebuilt: true, ms: Date.now() - started }
}
