/**
 * The build cache (src/build/BuildCache.ts): the same digest builds once, across concurrent
 * builds too; a dead builder's lock is taken over; the directory stays within its bound, least
 * recently used first; an entry that is a link is never read through.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { cachedBuild, isCached, prune } from "../../src/build/BuildCache.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const cacheDir = (maxBytes = 1 << 20) => {
  const directory = mkdtempSync(join(tmpdir(), "build-cache-"))
  dirs.push(directory)
  return { directory, maxBytes }
}

/** A build that takes `ms` and counts its runs. */
const counted = (bytes: Uint8Array, ms = 0) => {
  const builder = {
    runs: 0,
    build: async () => {
      builder.runs++
      await new Promise((resolve) => setTimeout(resolve, ms))
      return bytes
    }
  }
  return builder
}

describe("the build cache", () => {
  it("builds a digest once: later builds of it are copies", async () => {
    const cache = cacheDir()
    const builder = counted(new Uint8Array([1, 2, 3]))
    expect(isCached(cache, "d1")).toBe(false)
    expect(await cachedBuild(cache, "d1", builder.build)).toEqual({ bytes: new Uint8Array([1, 2, 3]), reused: false })
    expect(isCached(cache, "d1")).toBe(true)
    expect(await cachedBuild(cache, "d1", builder.build)).toEqual({ bytes: new Uint8Array([1, 2, 3]), reused: true })
    expect(builder.runs).toBe(1)
    expect(await cachedBuild(cache, "d2", builder.build)).toMatchObject({ reused: false })
    expect(builder.runs).toBe(2)
  })

  it("two builds of one digest at once: the second waits for the first's lock and copies", async () => {
    const cache = cacheDir()
    const builder = counted(new Uint8Array([7]), 400)
    const both = await Promise.all([cachedBuild(cache, "same", builder.build), cachedBuild(cache, "same", builder.build)])
    expect(builder.runs).toBe(1)
    expect(both.map((one) => one.reused).sort()).toEqual([false, true])
    expect(both.every((one) => one.bytes[0] === 7)).toBe(true)
    expect(existsSync(join(cache.directory, "same.lock"))).toBe(false)
  })

  it("a lock left by a builder that died is taken over", async () => {
    const cache = cacheDir()
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString()
    writeFileSync(join(cache.directory, "orphan.lock"), dead)
    const builder = counted(new Uint8Array([9]))
    expect(await cachedBuild(cache, "orphan", builder.build)).toMatchObject({ reused: false })
    expect(builder.runs).toBe(1)
  })

  it("stays within its bound: the least recently used go, the one just built stays", async () => {
    const cache = cacheDir(10)
    const five = new Uint8Array(5)
    await cachedBuild(cache, "old", counted(five).build)
    await cachedBuild(cache, "used", counted(five).build)
    const past = new Date(Date.now() - 60_000)
    utimesSync(join(cache.directory, "old.wasm"), past, past)
    utimesSync(join(cache.directory, "used.wasm"), past, past)
    // A copy counts as a use.
    await cachedBuild(cache, "used", counted(five).build)
    await cachedBuild(cache, "new", counted(five).build)
    expect(["old", "used", "new"].filter((digest) => isCached(cache, digest))).toEqual(["used", "new"])
    prune({ ...cache, maxBytes: 0 }, join(cache.directory, "new.wasm"))
    expect(["used", "new"].filter((digest) => isCached(cache, digest))).toEqual(["new"])
  })

  it("never reads through a link in the cache: it builds, and replaces the link, not its target", async () => {
    const cache = cacheDir()
    const target = join(cache.directory, "..", `${cache.directory.split("/").at(-1)}-target`)
    dirs.push(target)
    writeFileSync(target, "not a component")
    symlinkSync(target, join(cache.directory, "linked.wasm"))
    const builder = counted(new Uint8Array([4]))
    expect(await cachedBuild(cache, "linked", builder.build)).toEqual({ bytes: new Uint8Array([4]), reused: false })
    expect(readFileSync(target, "utf8")).toBe("not a component")
    expect(readFileSync(join(cache.directory, "linked.wasm"))).toEqual(Buffer.from([4]))
  })

  it("without a cache, always builds", async () => {
    const builder = counted(new Uint8Array([1]))
    await cachedBuild(undefined, "x", builder.build)
    await cachedBuild(undefined, "x", builder.build)
    expect(builder.runs).toBe(2)
  })
})
