/**
 * What a test file that runs the CLI keeps for itself: a list of cleanups run after its tests
 * (newest first; `serveCli` and friends push their kills here), and a `MURMUR_HOME` of its own,
 * removed last, as `env` for the processes it starts.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"

export const cliScratch = () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  const home = mkdtempSync(join(tmpdir(), "murmur-home-"))
  cleanups.push(() => rmSync(home, { recursive: true, force: true }))
  return { cleanups, home, env: { MURMUR_HOME: home } }
}
