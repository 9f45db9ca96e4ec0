/**
 * Test fixture components, built from source at test time and cached.
 *
 * Sources live in `test/fixtures/components/`: JS guests (`js/*.js`, built with componentize-qjs,
 * QuickJS) and hand-written core modules (`wat/*.wat`, turned into components in-process with
 * jco's wasm-tools: parse → componentEmbed → componentNew). Their worlds are in
 * `test/fixtures/components/fixtures.wit`, compiled together with the repo's `wit/` (the murmur
 * contracts) and jco's bundled WASI 0.2.12 WIT.
 *
 * Built components are cached in memory and on disk under
 * `.cache/components/<sha256 of sources + WIT + builder versions>.wasm` (written to a temp file
 * and renamed, with a lock file so concurrent vitest workers build each component once).
 *
 * QuickJS components come out of componentize-qjs with extended-const global initializers, which
 * Node 20 rejects without `--experimental-wasm-extended-const`; the build folds them
 * (see ./wasmConstExpr.ts), so every fixture runs on a stock Node 20 with no flags.
 *
 * Host-side notes for running these fixtures under jco (`transpile`, `instantiation: "async"`):
 * - QuickJS guests also export a root function `init` (componentize-qjs' Wizer entry) and
 *   import every WASI 0.2.12 interface the QuickJS runtime needs (cli, io, clocks, filesystem,
 *   random/insecure-seed), whatever their world says.
 * - A guest importing murmur:tool-registry/invoke also imports murmur:tool/run@0.1.0 (for the
 *   `use`d types) and jco reads its `run` function at instantiation: provide a stub `run`.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assembleWit, builderVersions } from "../../src/build/GuestWit.js"
import { buildQuickJs } from "../../src/build/QuickJsBuild.js"

// =============================================================================================
// Catalogue
// =============================================================================================

/** How one fixture is built. */
export interface FixtureSpec {
  readonly kind: "js" | "wat"
  /** Source file, relative to test/fixtures/components/. */
  readonly source: string
  /** World in fixtures.wit (package murmur-fixtures:components). */
  readonly world: string
  /** What the guest does (mirrors the reference's fixture catalogue, sandbox spec §7). */
  readonly behaviour: string
  /** JS modules it imports besides js/lib.js (part of its digest). */
  readonly helpers?: ReadonlyArray<string>
}

export const fixtures = {
  "echo-tool": {
    kind: "js",
    source: "js/echo-tool.js",
    world: "echo-tool",
    behaviour: "exports murmur:tool/run@0.1.0: status passed, summary \"ok\", data = input.data"
  },
  "tool-flood-output": {
    kind: "js",
    source: "js/tool-flood-output.js",
    world: "tool-flood",
    behaviour: "input.data {\"mib\": n}: writes n MiB of \"x\" to stdout in 1 MiB writes; returns passed, data = n"
  },
  "scripted-driver": {
    kind: "js",
    source: "js/scripted-driver.js",
    world: "driver",
    behaviour: "a deterministic driver: replies from MURMUR_INFERENCE_DRIVER_CONFIG {replies, chunks}, picked by the number of " +
      "assistant messages; text blocks streamed as chunks when chunks is true; appends \"call <n>\\n\" to ./driver-calls.log and writes the request to ./driver-request-<n>.json; " +
      "a reply with spin: true never returns; _metadata becomes the result metadata; a request over max_request_bytes is " +
      "answered stop_reason error (\"context window exceeded\"), as a provider past its window"
  },
  "capsule-allowlisted": {
    kind: "js",
    source: "js/capsule-allowlisted.js",
    world: "capsule-invoke",
    behaviour: "invokes echo-tool with data \"hello\"; writes the result's summary (or the err) to ./out/result.txt"
  },
  "capsule-unlisted": {
    kind: "js",
    source: "js/capsule-unlisted.js",
    world: "capsule-invoke",
    behaviour: "invokes undeclared-tool; writes the err string to ./out/result.txt"
  },
  "capsule-env-echo": {
    kind: "js",
    source: "js/capsule-env-echo.js",
    world: "capsule-env-fs",
    behaviour: "writes GITHUB_TOKEN=<present:v|absent>\\nMURMUR_TEST_ALLOWED_VAR=<present:v|absent> to ./out/result.txt"
  },
  "capsule-fs-escape": {
    kind: "js",
    source: "js/capsule-fs-escape.js",
    world: "capsule-env-fs",
    behaviour: "tries ../../outside.txt, /tmp/capsule-escape-<env ESCAPE_ID|0>.txt, ./link-out/escape.txt and reading " +
      "/etc/hostname; writes one line per attempt (blocked|unexpected-ok) to ./out/result.txt, details to stderr"
  },
  "capsule-network-attempt": {
    kind: "wat",
    source: "wat/capsule-network-attempt.wat",
    world: "capsule-http",
    behaviour: "GET env TARGET_URL via wasi:http/outgoing-handler; writes denied | error:<code> | allowed " +
      "(AWAIT_RESPONSE=0) | allowed:<status> | allowed:error:<code> | error:bad-url to ./out/result.txt"
  },
  "capsule-spin-loop": {
    kind: "wat",
    source: "wat/capsule-spin-loop.wat",
    world: "capsule-bare",
    behaviour: "loops forever, imports nothing"
  },
  "capsule-memory-balloon": {
    kind: "wat",
    source: "wat/capsule-memory-balloon.wat",
    world: "capsule-bare",
    behaviour: "grows memory 8 MiB at a time (touching it) until memory.grow fails, then traps (unreachable)"
  },
  "chunks-tool": {
    kind: "js",
    source: "js/chunks-tool.js",
    world: "chunks-tool",
    behaviour: "emit-chunk \"one \", \"two \", \"three\", emit-thinking-chunk \"thinking about numbers\"; returns passed, data \"done\""
  },
  "request-input-tool": {
    kind: "js",
    source: "js/request-input-tool.js",
    world: "request-input-tool",
    behaviour: "request-input(input.data); returns passed, data \"user answered: <answer>\""
  },
  "capsule-calls-tool": {
    kind: "js",
    source: "js/capsule-calls-tool.js",
    world: "capsule-calls-tool",
    behaviour: "invokes env TOOL_NAME with data env TOOL_DATA, env CALLS times (default 1); writes each result's data " +
      "(else summary, else \"\") or the err to ./out/result.txt, joined by \",\""
  },
  "counter-tool": {
    kind: "js",
    source: "js/counter-tool.js",
    world: "echo-tool",
    behaviour: "a module-level counter: each run adds one and returns passed, summary \"ok\", data = the counter (\"1\" from a fresh instance)"
  },
  "capsule-send-message": {
    kind: "js",
    source: "js/capsule-send-message.js",
    world: "capsule-send-message",
    behaviour: "message/send(env PEER_URL, {messageId \"capsule-send-message-1\", contextId none, text env MESSAGE_TEXT}); " +
      "writes ok:<task-id>:<context-id>:<state> or err:<the err string> to ./out/result.txt"
  },
  "capsule-manage": {
    kind: "js",
    source: "js/capsule-manage.js",
    world: "capsule-manage",
    behaviour: "artifact-manager list(), describe(\"echo-tool\"), describe(\"nope\"), search(\"x\"), remove(\"x\"), " +
      "diagnostics(); writes one line per call (JSON of the value or err:<string>) to ./out/result.txt"
  },
  "capsule-bad-version": {
    kind: "wat",
    source: "wat/capsule-bad-version.wat",
    world: "capsule-bad-version",
    behaviour: "exports murmur:capsule/run@0.2.0 (must be refused)"
  },
  "tool-bad-import": {
    kind: "wat",
    source: "wat/tool-bad-import.wat",
    world: "tool-bad-import",
    behaviour: "exports murmur:tool/run@0.1.0, imports murmur:tool-registry/invoke@0.9.0 (must be refused)"
  },
  "capsule-trap": {
    kind: "wat",
    source: "wat/capsule-trap.wat",
    world: "capsule-stderr",
    behaviour: "writes \"about to trap\\n\" to stderr, then traps (unreachable)"
  },
  "capsule-plant-links": {
    kind: "js",
    source: "js/capsule-plant-links.js",
    world: "capsule-env-fs",
    helpers: ["js/fs-probe.js"],
    behaviour: "writes env RESULT (if set) to ./out/result.txt, then plants the symbolic links env PLANT names " +
      "(\"link=>target|…\"), one line each (ok | refused:<code>) to ./plant-report.txt; then env SAY (if set) to stderr"
  },
  "tool-plant-links": {
    kind: "js",
    source: "js/tool-plant-links.js",
    world: "driver",
    helpers: ["js/fs-probe.js"],
    behaviour: "input.data {\"plant\": [[link, target], …]}: plants each symbolic link in its preopen; returns passed, " +
      "data = one line each (ok | refused:<code>)"
  },
  "tool-state-probe": {
    kind: "js",
    source: "js/tool-state-probe.js",
    world: "driver",
    behaviour: "input.data {\"append\": text}: in the `state` preopen reads notes.txt, writes it back with the text appended, " +
      "then tries ../escape.txt from it; returns passed, data = JSON {preopens, before, escape}"
  },
  "capsule-ro-probe": {
    kind: "js",
    source: "js/capsule-ro-probe.js",
    world: "capsule-env-fs",
    helpers: ["js/fs-probe.js"],
    behaviour: "tries every change to the subtree env RO (default ro: keep.txt and an empty sub/): create, overwrite, append, " +
      "truncate, unlink, rename out and in, mkdir, symlink, rmdir, hard link, set-times, a normalised path, a link into it; " +
      "then a write outside; one line each (ok | refused:<code>) to ./out/result.txt"
  },
  "tool-ro-probe": {
    kind: "js",
    source: "js/tool-ro-probe.js",
    world: "driver",
    helpers: ["js/fs-probe.js"],
    behaviour: "the capsule-ro-probe steps from a tool, on the subtree input.data names (a JSON string, default ro); " +
      "the lines to ./ro-report.txt and as the result's data"
  },
  "tool-throws": {
    kind: "js",
    source: "js/tool-throws.js",
    world: "echo-tool",
    behaviour: "input.data containing \"throw\": throws a TypeError naming a config value (QuickJS prints it, the guest traps); else echoes"
  },
  "hook-probe": {
    kind: "js",
    source: "js/hook-probe.js",
    world: "hook-probe",
    behaviour: "a hook exporting all nine lifecycle functions; its config (answers, err, trap, spin, big, compact, infer, probe " +
      "by binding) picks what each call does; appends each binding to ./calls.log when it has a \".\" preopen"
  }
} as const satisfies Record<string, FixtureSpec>

export type FixtureName = keyof typeof fixtures

export const fixtureNames = Object.keys(fixtures) as ReadonlyArray<FixtureName>

// =============================================================================================
// Paths and versions
// =============================================================================================

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const fixturesDir = path.join(repoRoot, "test/fixtures/components")

/** Directory of the on-disk cache (git-ignored). */
export const cacheDir = path.join(repoRoot, ".cache/components")

/** Bump when the build pipeline changes in a way the hashed inputs do not show. */
const BUILDER_REVISION = "components.ts/1"

let builderVersionMemo: string | undefined
const builderVersion = (): string => (builderVersionMemo ??= `${BUILDER_REVISION} ${builderVersions()}`)

// =============================================================================================
// WIT
// =============================================================================================

let witMemo: string | undefined

/**
 * One WIT document with every package the fixtures need: fixtures.wit (root package
 * murmur-fixtures:components), the repo's wit/ murmur packages and jco's WASI 0.2.12 packages,
 * the latter two as nested package blocks.
 */
export const fixtureWitSource = (): string =>
  (witMemo ??= assembleWit(fs.readFileSync(path.join(fixturesDir, "fixtures.wit"), "utf8")))

// =============================================================================================
// Disk cache
// =============================================================================================

const sha256 = (...parts: ReadonlyArray<string | Uint8Array>): string => {
  const h = createHash("sha256")
  for (const p of parts) {
    h.update(typeof p === "string" ? p : Buffer.from(p))
    h.update("\0")
  }
  return h.digest("hex")
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Writes `bytes` to `file` atomically (temp file in the same directory, then rename). */
const writeAtomic = (file: string, bytes: Uint8Array | string): void => {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  fs.writeFileSync(tmp, bytes)
  fs.renameSync(tmp, file)
}

const LOCK_STALE_MS = 120_000
const LOCK_WAIT_MS = 300_000

/**
 * Returns the cached file, or runs `build` once across processes: the first caller takes
 * `<file>.lock` (O_EXCL), the others poll for `file`. A lock older than LOCK_STALE_MS is broken.
 */
const cachedFile = async (file: string, build: () => Promise<Uint8Array>): Promise<Uint8Array> => {
  const lock = `${file}.lock`
  const started = Date.now()
  for (;;) {
    if (fs.existsSync(file)) return new Uint8Array(fs.readFileSync(file))
    let fd: number | undefined
    try {
      fd = fs.openSync(lock, "wx")
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err
    }
    if (fd !== undefined) {
      try {
        fs.closeSync(fd)
        if (fs.existsSync(file)) return new Uint8Array(fs.readFileSync(file))
        const bytes = await build()
        writeAtomic(file, bytes)
        return bytes
      } finally {
        fs.rmSync(lock, { force: true })
      }
    }
    try {
      if (Date.now() - fs.statSync(lock).mtimeMs > LOCK_STALE_MS) fs.rmSync(lock, { force: true })
    } catch {
      // the lock went away: loop
    }
    if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`timed out waiting for ${lock}`)
    await sleep(100)
  }
}

// =============================================================================================
// Builders
// =============================================================================================

/** JS modules the guests share (imported as "./lib.js"); part of every JS fixture's digest. */
const JS_HELPERS = ["js/lib.js"]

const buildJs = async (spec: FixtureSpec): Promise<Uint8Array> => {
  const entry = path.join(fixturesDir, spec.source)
  return buildQuickJs({ entry, jsSource: fs.readFileSync(entry, "utf8"), wit: fixtureWitSource(), world: spec.world })
}

const buildWat = async (spec: FixtureSpec): Promise<Uint8Array> => {
  const { componentEmbed, componentNew, parse } = await import("@bytecodealliance/jco")
  const core = await parse(fs.readFileSync(path.join(fixturesDir, spec.source), "utf8"))
  const embedded = await componentEmbed({ binary: core, witSource: fixtureWitSource(), world: spec.world })
  return componentNew(embedded, [])
}

const inputsDigest = (spec: FixtureSpec): string => {
  const files = spec.kind === "js" ? [spec.source, ...JS_HELPERS, ...(spec.helpers ?? [])] : [spec.source]
  return sha256(
    builderVersion(),
    spec.kind,
    spec.world,
    fixtureWitSource(),
    ...files.flatMap((f) => [f, fs.readFileSync(path.join(fixturesDir, f), "utf8")])
  )
}

// =============================================================================================
// API
// =============================================================================================

const memory = new Map<FixtureName, Promise<{ readonly file: string; readonly bytes: Uint8Array }>>()

const build = (name: FixtureName): Promise<{ readonly file: string; readonly bytes: Uint8Array }> => {
  const existing = memory.get(name)
  if (existing !== undefined) return existing
  const spec: FixtureSpec = fixtures[name]
  if (spec === undefined) return Promise.reject(new Error(`unknown fixture component: ${name}`))
  const promise = (async () => {
    fs.mkdirSync(cacheDir, { recursive: true })
    const file = path.join(cacheDir, `${inputsDigest(spec)}.wasm`)
    const bytes = await cachedFile(file, () => (spec.kind === "js" ? buildJs(spec) : buildWat(spec)))
    return { file, bytes }
  })()
  memory.set(name, promise)
  promise.catch(() => memory.delete(name))
  return promise
}

/** The fixture's component bytes (built on first use, then cached on disk and in memory). */
export const buildComponent = async (name: FixtureName): Promise<Uint8Array> => (await build(name)).bytes

/** Path of the fixture's cached `.wasm` (builds it first if needed). Do not modify the file. */
export const componentPath = async (name: FixtureName): Promise<string> => (await build(name)).file

/** Builds several fixtures, one at a time (each build already uses a core), keyed by name. */
export const buildComponents = async <N extends FixtureName>(
  names: ReadonlyArray<N> = fixtureNames as ReadonlyArray<N>
): Promise<Record<N, Uint8Array>> => {
  const out = {} as Record<N, Uint8Array>
  for (const name of names) out[name] = await buildComponent(name)
  return out
}

/** A component's world as jco prints it: `import`/`export` lines, versions included. */
export interface ComponentWorld {
  readonly imports: ReadonlyArray<string>
  readonly exports: ReadonlyArray<string>
  /** The full WIT text from jco's componentWit. */
  readonly wit: string
}

/** Reads a component's imports and exports (e.g. "murmur:capsule/run@0.1.0") with jco. */
export const componentWorld = async (bytes: Uint8Array): Promise<ComponentWorld> => {
  const { componentWit } = await import("@bytecodealliance/jco")
  const wit = await componentWit(bytes)
  const pick = (kw: string) =>
    wit.split("\n").map((l) => l.trim()).filter((l) => l.startsWith(`${kw} `)).map((l) =>
      l.slice(kw.length + 1).replace(/;$/, "")
    )
  return { imports: pick("import"), exports: pick("export"), wit }
}
