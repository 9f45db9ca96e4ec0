/**
 * A JS guest built with componentize-qjs (QuickJS, the non-async runtime: the async one needs
 * JSPI, which Node 20 lacks), then folded so it loads on a stock Node 20 (../sandbox/wasm/ExtendedConst.ts).
 * Small (~1.6 MB) and quick to build (~1 s), but it can only import what componentize-qjs binds.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { extendedConstSites, lowerExtendedConst } from "../sandbox/wasm/ExtendedConst.js"

/** What a builder turns into a component. */
export interface GuestSource {
  /** Absolute path of the entry module. */
  readonly entry: string
  readonly jsSource: string
  /** The assembled WIT (./GuestWit.ts) and the world in it. */
  readonly wit: string
  readonly world: string
}

export const buildQuickJs = async (source: GuestSource): Promise<Uint8Array> => {
  const { componentize } = await import("componentize-qjs")
  const scratch = mkdtempSync(join(tmpdir(), "capsule-runtime-wit-"))
  try {
    const witPath = join(scratch, "guest.wit")
    writeFileSync(witPath, source.wit)
    const { component } = await componentize({
      witPath,
      jsSource: source.jsSource,
      jsPath: source.entry,
      moduleRoot: dirname(source.entry),
      world: source.world,
      sync: true
    })
    const lowered = lowerExtendedConst(new Uint8Array(component))
    const left = extendedConstSites(lowered)
    if (left.length > 0) throw new Error(`${source.entry}: extended-const expressions left: ${left.join(", ")}`)
    return lowered
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
