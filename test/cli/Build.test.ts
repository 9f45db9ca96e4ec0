/**
 * `build`'s lines, in process (src/cli/Build.ts): a build that lasts says it is still going at
 * every interval (5 s by default; shorter here, on a real QuickJS build of the tool template);
 * the same sources in a second directory are copied from the build cache, not built; a third
 * build of the first is up to date.
 */
import { describe, expect, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { buildCapsule } from "../../src/cli/Build.js"
import { templateFiles } from "../../src/cli/Templates.js"

const scratch = mkdtempSync(join(tmpdir(), "build-lines-"))

const tool = (dir: string) => {
  for (const [path, text] of templateFiles("tool", "shout", "")) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

const lines = (effect: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const base = yield* Console.consoleWith(Effect.succeed)
    const console: Console.Console = { ...base, log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(args.join(" "))) }
    yield* Effect.withConsole(effect, console)
    return out.map((line) => line.split(" → ")[0])
  })

describe("build's lines", () => {
  it.live("progress while a build lasts, reuse for the same sources elsewhere, up to date after", () =>
    Effect.gen(function*() {
      const cache = { directory: join(scratch, "cache"), maxBytes: 1 << 30 }
      const first = yield* lines(buildCapsule(tool(join(scratch, "one")), { cache, progressEvery: "100 millis" }))
      expect(first[0]).toBe("building tool shout (QuickJS, world tool)…")
      expect(first.slice(1, -1).length).toBeGreaterThanOrEqual(1)
      first.slice(1, -1).forEach((line, i) => {
        const seconds = (i + 1) / 10
        expect(line).toBe(`  still building tool shout (QuickJS): ${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`)
      })
      expect(first.at(-1)).toMatch(/^built tool shout in \d+ ms \(1\.\d MiB\)$/)
      const second = yield* lines(buildCapsule(tool(join(scratch, "two")), { cache, progressEvery: "100 millis" }))
      expect(second).toHaveLength(1)
      expect(second[0]).toMatch(/^reused tool shout from the build cache, same sources \(1\.\d MiB\)$/)
      expect(yield* lines(buildCapsule(join(scratch, "one"), { cache }))).toEqual(["up to date tool shout"])
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(scratch, { recursive: true, force: true })))), 60_000)
})
