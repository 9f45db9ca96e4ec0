/**
 * The bounds of attachments and output files, driven directly (../../src/agent/Attachments.ts,
 * ../../src/agent/OutputFiles.ts): a fetched file past 16 MiB is refused and leaves nothing; at
 * most 32 output files come back, the rest counted; a file over the export's max_bytes is named,
 * not served; names never collide.
 */
import { createServer, type Server } from "node:http"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { maxFetchedBytes, stageAttachments } from "../../src/agent/Attachments.js"
import { maxOutputFiles, outputFiles } from "../../src/agent/OutputFiles.js"

const cleanups: Array<() => void | Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const workdir = () => {
  const dir = mkdtempSync(join(tmpdir(), "stage-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe("attachment bounds", () => {
  it("a fetched file past the bound is refused and leaves no file; names do not collide", async () => {
    const server: Server = createServer((_request, response) => {
      response.writeHead(200)
      const chunk = Buffer.alloc(1024 * 1024, 1)
      let sent = 0
      const more = () => {
        while (sent <= maxFetchedBytes) {
          sent += chunk.length
          if (!response.write(chunk)) return void response.once("drain", more)
        }
        response.end()
      }
      more()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
    const port = (server.address() as { port: number }).port
    const dir = workdir()
    const rules = [{ host: "127.0.0.1", port }]
    const refused = await Effect.runPromise(Effect.either(stageAttachments(dir, [{ kind: "file", uri: `http://127.0.0.1:${port}/huge`, name: "huge.bin" }], rules)))
    expect(Either.isLeft(refused) && refused.left.message).toMatch(/larger than 16777216 bytes/)
    expect(existsSync(join(dir, "inputs", "huge.bin"))).toBe(false)
    const twice = await Effect.runPromise(stageAttachments(dir, [
      { kind: "file", bytes: "YQ==", name: "same.txt" },
      { kind: "file", bytes: "Yg==", name: "dir/same.txt" },
      { kind: "data", data: { n: 1 } }
    ], rules))
    expect(readdirSync(join(dir, "inputs")).sort()).toEqual(["data-1.json", "same-2.txt", "same.txt"])
    expect(twice).toContain("- inputs/same-2.txt (1 bytes)")
  }, 60_000)
})

describe("output file bounds", () => {
  it("at most 32 files come back, the rest counted; one over max_bytes is named, not served; older files are left out", () => {
    const dir = workdir()
    mkdirSync(join(dir, "out"))
    writeFileSync(join(dir, "out", "old.txt"), "before")
    const past = new Date(Date.now() - 60_000)
    utimesSync(join(dir, "out", "old.txt"), past, past)
    const since = Date.now() - 1_000
    for (let i = 0; i < 40; i++) writeFileSync(join(dir, "out", `f${String(i).padStart(2, "0")}.txt`), `file ${i}`)
    writeFileSync(join(dir, "out", "a-big.bin"), Buffer.alloc(200))
    const outputs = outputFiles(dir, { root: "out", maxBytes: 100 }, since, "http://127.0.0.1:9/")
    const lines = outputs.summary.split("\n")
    expect(lines).toHaveLength(maxOutputFiles + 1)
    expect(lines[0]).toBe("out/a-big.bin (200 bytes, not served: over exports.files.max_bytes)")
    expect(lines.at(-1)).toBe("… and 9 more under out")
    // The big one is named only: 31 parts for the 32 files listed.
    expect(outputs.files).toHaveLength(maxOutputFiles - 1)
    expect(outputs.files[0]).toEqual({ kind: "file", name: "f00.txt", bytes: Buffer.from("file 0").toString("base64") })
    expect(outputs.summary).not.toContain("old.txt")
  })
})
