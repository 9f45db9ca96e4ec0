/**
 * docs/first-capsule.md as a reader follows it: every line of its `sh` blocks runs as written,
 * through `sh`, in a scratch directory whose `dist` is this build, in order. `serve` stays up
 * and its printed URL replaces `http://127.0.0.1:PORT/` in the lines after it (the one
 * substitution the page announces); `watch` follows in the background; `chat` gets a message on
 * stdin, then the end of input. A command that fails, or an answer that does not arrive, fails
 * the page. The guests `build` compiles are kept under .cache/first-capsule by their sources'
 * digest and copied in beforehand, so `build` runs for real but finds them up to date (its
 * stamps compare the sources, so a changed template rebuilds).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { cliCacheDir } from "../lib/CapsuleDirs.js"

const repo = new URL("../..", import.meta.url).pathname
const PLACEHOLDER = "http://127.0.0.1:PORT/"
const buildCache = join(repo, ".cache", "first-capsule")

/** The commands of the page's ```sh blocks, in order. */
const commands = (markdown: string): ReadonlyArray<string> =>
  [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((block) =>
    block[1]!.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))
  )

const scratch = mkdtempSync(join(tmpdir(), "first-capsule-"))
symlinkSync(join(repo, "dist"), join(scratch, "dist"))
const background: Array<ChildProcess> = []

afterAll(() => {
  for (const child of background) if (child.exitCode === null) child.kill("SIGKILL")
  rmSync(scratch, { recursive: true, force: true })
})

interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<number | null>
}

const start = (line: string, input?: string): Started => {
  // `exec`, so a signal reaches the command itself and not only the shell.
  const child = spawn("sh", ["-c", `exec ${line}`], {
    cwd: scratch,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir },
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
  })
  if (input !== undefined) child.stdin!.end(input)
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

const finished = async (line: string, input?: string) => {
  const run = start(line, input)
  const code = await run.exited
  expect(code, `${line}\n${run.output()}`).toBe(0)
  return run.output()
}

const until = async (ok: () => boolean, what: string, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** Each guest directory of the new capsule by its sources' digest, cached built or copied from cache. */
const guestCache = (capsule: string) =>
  readdirSync(join(capsule, "artifacts")).map((guest) => {
    const dir = join(capsule, "artifacts", guest)
    const outputs = [`${guest}.wasm`, `.${guest}.wasm.stamp`]
    const hash = createHash("sha256")
    for (const file of readdirSync(dir).filter((name) => !outputs.includes(name)).sort()) hash.update(file).update("\0").update(readFileSync(join(dir, file))).update("\0")
    return { dir, outputs, cached: join(buildCache, hash.digest("hex").slice(0, 16)) }
  })

it("docs/first-capsule.md's commands work as written", async () => {
  const lines = commands(readFileSync(join(repo, "docs", "first-capsule.md"), "utf8"))
  expect(lines.length).toBeGreaterThanOrEqual(7)
  let url: string | undefined
  let serve: Started | undefined
  let watch: Started | undefined
  const outputs: Array<readonly [string, string]> = []
  for (const written of lines) {
    // The serve line's comment shows the placeholder; only a command that uses it needs the URL.
    if (written.replace(/\s#.*$/, "").includes(PLACEHOLDER) && url === undefined) throw new Error(`'${written}' needs the URL serve prints, and no serve line came before it`)
    const line = url === undefined ? written : written.replaceAll(PLACEHOLDER, url)
    const command = line.match(/^node dist\/main\.js (\S+)/)?.[1]
    if (command === "build") {
      for (const guest of guestCache(join(scratch, "my-agent"))) {
        if (guest.outputs.every((file) => existsSync(join(guest.cached, file)))) {
          for (const file of guest.outputs) copyFileSync(join(guest.cached, file), join(guest.dir, file))
        }
      }
    }
    if (command === "serve") {
      serve = start(line)
      background.push(serve.child)
      await until(() => /serving at (http:\S+)/.test(serve!.output()), `serve's URL\n${serve.output()}`)
      url = serve.output().match(/serving at (http:\S+)/)![1]
    } else if (command === "watch") {
      watch = start(line)
      background.push(watch.child)
    } else if (command === "chat") {
      outputs.push([command, await finished(line, "Lin\n")])
    } else {
      outputs.push([command ?? line, await finished(line)])
    }
    if (command === "build") {
      for (const guest of guestCache(join(scratch, "my-agent"))) {
        mkdirSync(guest.cached, { recursive: true })
        for (const file of guest.outputs) copyFileSync(join(guest.dir, file), join(guest.cached, file))
      }
    }
  }
  const said = Object.fromEntries(outputs)
  expect(said["run"]).toMatch(/^status: {2}ok$/m)
  expect(said["send"]).toContain("shouted \"Grace\"")
  expect(said["chat"]).toContain("shouted \"Lin\"")
  expect(serve, "the page never starts serve").toBeDefined()
  expect(watch, "the page never starts watch").toBeDefined()
  serve!.child.kill("SIGTERM")
  // watch ends by itself at capsule-closed, having shown both conversations.
  expect(await watch!.exited, watch!.output()).toBe(0)
  expect(watch!.output()).toContain("shouted \"Grace\"")
  expect(watch!.output()).toContain("shouted \"Lin\"")
  expect(await serve!.exited).toBe(0)
}, 120_000)
