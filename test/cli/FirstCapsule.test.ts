/**
 * docs/first-capsule.md as a reader follows it: every line of its `sh` blocks runs as written,
 * through `sh`, in a scratch directory whose `dist` is this build, in order. `serve` stays up
 * and its printed URL replaces `http://127.0.0.1:PORT/` in the lines after it (the one
 * substitution the page announces); `watch` follows in the background; `chat` gets a message on
 * stdin, then the end of input. A command that fails, or an answer that does not arrive, fails
 * the page. A `yaml` block whose first line is `# <path>` is written to that path when the page
 * reaches it; `python3 -m http.server` is the local server the page's fetch tool reads, started in
 * the background on a free port that replaces 8765 everywhere. `build` runs for real with the
 * suite's cache directory, so its build cache holds what an earlier run built (the fetch tool's
 * StarlingMonkey build is paid once per machine), and a changed template builds again.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { connect, createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { cliCacheDir } from "../lib/CapsuleDirs.js"

const repo = new URL("../..", import.meta.url).pathname
const PLACEHOLDER = "http://127.0.0.1:PORT/"
/** The local server's port as the page writes it. */
const PAGE_PORT = "8765"

type Step = { readonly kind: "sh"; readonly line: string } | { readonly kind: "file"; readonly path: string; readonly text: string }

/** The commands of the page's ```sh blocks and the files of its ```yaml blocks that name one, in order. */
const steps = (markdown: string): ReadonlyArray<Step> =>
  [...markdown.matchAll(/^```(sh|yaml)\n([\s\S]*?)^```$/gm)].flatMap((block): ReadonlyArray<Step> => {
    if (block[1] === "yaml") {
      const path = /^# (\S+)\n/.exec(block[2]!)?.[1]
      return path === undefined ? [] : [{ kind: "file", path, text: block[2]! }]
    }
    return block[2]!.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#")).map((line) => ({ kind: "sh", line }))
  })

/** Resolves once something accepts connections on the port (Python buffers its "Serving" line). */
const listening = async (port: number, output: () => string) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => (socket.destroy(), resolve(true)))
      socket.once("error", () => resolve(false))
    })
    if (up) return
    if (Date.now() > deadline) throw new Error(`the local server never listened on ${port}\n${output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

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

it("docs/first-capsule.md's commands work as written", async () => {
  const port = String(await freePort())
  const page = steps(readFileSync(join(repo, "docs", "first-capsule.md"), "utf8")).map((step): Step =>
    step.kind === "sh" ? { kind: "sh", line: step.line.replaceAll(PAGE_PORT, port) } : { ...step, text: step.text.replaceAll(PAGE_PORT, port) }
  )
  expect(page.filter((step) => step.kind === "sh").length).toBeGreaterThanOrEqual(12)
  let url: string | undefined
  let serve: Started | undefined
  let watch: Started | undefined
  let server: Started | undefined
  const outputs: Array<readonly [string, string]> = []
  for (const step of page) {
    if (step.kind === "file") {
      mkdirSync(dirname(join(scratch, step.path)), { recursive: true })
      writeFileSync(join(scratch, step.path), step.text)
      continue
    }
    const written = step.line
    // The serve line's comment shows the placeholder; only a command that uses it needs the URL.
    if (written.replace(/\s#.*$/, "").includes(PLACEHOLDER) && url === undefined) throw new Error(`'${written}' needs the URL serve prints, and no serve line came before it`)
    const line = url === undefined ? written : written.replaceAll(PLACEHOLDER, url)
    const command = line.match(/^node dist\/main\.js (\S+)/)?.[1]
    if (command === "serve") {
      serve = start(line)
      background.push(serve.child)
      await until(() => /serving at (http:\S+)/.test(serve!.output()), `serve's URL\n${serve.output()}`)
      url = serve.output().match(/serving at (http:\S+)/)![1]
    } else if (command === "watch") {
      watch = start(line)
      background.push(watch.child)
    } else if (command === "chat") {
      outputs.push([line, await finished(line, "Lin\n")])
    } else if (line.startsWith("python3 -m http.server")) {
      server = start(line)
      background.push(server.child)
      await listening(Number(port), () => server!.output())
    } else {
      outputs.push([line, await finished(line)])
    }
  }
  expect(server, "the page never starts the local server").toBeDefined()
  const said = (pattern: RegExp) => {
    // The last: the page builds my-agent twice, and the second holds the fetch tool.
    const found = [...outputs].reverse().find(([line]) => pattern.test(line))
    expect(found, `no command matching ${pattern}`).toBeDefined()
    return found![1]
  }
  const resultOf = (output: string) => readFileSync(join(output.match(/^workdir: (.+)$/m)![1]!, "out", "result.txt"), "utf8")
  expect(said(/ run my-agent --task Ada$/)).toMatch(/^status: {2}ok$/m)
  expect(said(/ send /)).toContain("shouted \"Grace\"")
  expect(said(/ chat /)).toContain("shouted \"Lin\"")
  // The fetch tool is StarlingMonkey's: built (saying it is still going every 5 s), or, built
  // before on this machine, copied from the build cache.
  const builtFetch = said(/ build my-agent$/)
  expect(builtFetch).toMatch(/reused tool fetch from the build cache|built tool fetch in \d+ ms/)
  const buildMs = Number(/built tool fetch in (\d+) ms/.exec(builtFetch)?.[1] ?? 0)
  if (buildMs > 6_000) expect(builtFetch).toContain("still building tool fetch (StarlingMonkey): 5 s")
  const fetched = said(/--task "fetch http:\/\/127\.0\.0\.1/)
  expect(fetched).toMatch(/^status: {2}ok$/m)
  expect(resultOf(fetched)).toContain("Hello from the local server")
  const refused = said(/--task "fetch http:\/\/example\.com/)
  expect(resultOf(refused)).toContain("\"code\":\"network-denied\"")
  expect(resultOf(refused)).toContain("capabilities.network.allow")
  expect(serve, "the page never starts serve").toBeDefined()
  expect(watch, "the page never starts watch").toBeDefined()
  serve!.child.kill("SIGTERM")
  // watch ends by itself at capsule-closed, having shown both conversations.
  expect(await watch!.exited, watch!.output()).toBe(0)
  expect(watch!.output()).toContain("shouted \"Grace\"")
  expect(watch!.output()).toContain("shouted \"Lin\"")
  expect(await serve!.exited).toBe(0)
}, 300_000)
