/**
 * The guests this repository ships as source and builds in `npm run build`: the drivers and
 * the examples' tools and hooks. Each lives in a directory with its own `murmur.yaml` (its name), a
 * `world.wit` and its JS; the component is written next to them as `<name>.wasm` (git-ignored)
 * with a stamp of everything it was built from (`.<name>.wasm.stamp`), so an unchanged guest is
 * not rebuilt, and is checked to be one this runtime's loader accepts (./GuestBuild.ts).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { parse } from "yaml"
import { type Built, buildGuestDir, type GuestBuilder, type GuestDir, quickJs, starlingMonkey } from "./GuestBuild.js"
import { repoRoot } from "./GuestWit.js"

export type { Built, GuestBuilder }

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
  { dir: "examples/script", entry: "capsule.js", world: "capsule", builder: quickJs },
  { dir: "examples/reopen/artifacts/verifier", entry: "hook.js", world: "hook", builder: quickJs },
  { dir: "examples/memory/artifacts/recall", entry: "hook.js", world: "hook", builder: quickJs },
  { dir: "examples/memory/artifacts/keep", entry: "hook.js", world: "hook", builder: quickJs },
  { dir: "drivers/openai", entry: "driver.js", world: "driver", builder: starlingMonkey }
]

export const shippedGuest = (dir: string): ShippedGuest => {
  const guest = shippedGuests.find((candidate) => candidate.dir === dir)
  if (guest === undefined) throw new Error(`no shipped guest in ${dir}`)
  return guest
}

/** A shipped guest as a guest directory: an artifact is `<name>.wasm`, a script capsule `capsule.wasm`. */
export const shippedGuestDir = (guest: ShippedGuest): GuestDir => {
  const dir = join(repoRoot, guest.dir)
  const own = parse(readFileSync(join(dir, "murmur.yaml"), "utf8")) as { name: string; runtime?: string }
  const isArtifact = own.runtime !== undefined
  return {
    dir,
    entry: guest.entry,
    world: guest.world,
    builder: guest.builder,
    output: isArtifact ? `${own.name}.wasm` : "capsule.wasm",
    role: own.runtime === "hook" ? "hook" : isArtifact ? "tool" : "capsule"
  }
}

export const buildGuest = (guest: ShippedGuest): Promise<Built> =>
  buildGuestDir(shippedGuestDir(guest)).catch((error: unknown) => {
    throw new Error(`${guest.dir}: ${error instanceof Error ? error.message : String(error)}`)
  })
