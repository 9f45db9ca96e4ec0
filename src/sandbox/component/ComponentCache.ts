/**
 * Loads components: checks their world against what this runtime provides, transpiles them
 * with jco (in-process; once per content digest, kept on disk under the cache directory),
 * caps every core module's memory and tables to the grant's limits, and compiles the core
 * modules once (`WebAssembly.Module`s are shared with workers without recompiling). Loads are
 * memoised per digest and limits.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { transpile } from "@bytecodealliance/jco"
import { Context, Effect, Either, Layer } from "effect"
import { extendedConstSites, lowerExtendedConst } from "../wasm/ExtendedConst.js"
import { digestOf } from "../../project/Digest.js"
import { type ComponentWorld, readWorld, unsupported } from "./ComponentWorld.js"
import { glueScript } from "./GlueScript.js"
import type { LoadedGuest } from "../GuestJob.js"
import { instrumentGrow } from "../wasm/GrowProbe.js"
import { capCoreModule } from "../wasm/MemoryCap.js"
import { SandboxError } from "../SandboxError.js"

export interface Limits {
  readonly memoryBytes: number
  readonly tableElements: number
}

export interface CompiledComponent {
  readonly digest: string
  readonly world: ComponentWorld
  readonly guest: LoadedGuest
}

export interface ComponentCacheConfig {
  readonly directory: string
}

/** Bumped whenever the transpile options or the on-disk layout change. */
const layoutVersion = "jco-1.35.0-sync-4"

/** The glue rewritten as a classic script (GlueScript.ts). */
const SCRIPT = "component.script.js"

const message = (error: unknown) => error instanceof Error ? error.message : String(error)

export class ComponentCache extends Context.Tag("capsule-runtime/sandbox/ComponentCache")<ComponentCache, {
  /** What a component imports and exports; fails when this runtime cannot run it. */
  readonly inspect: (bytes: Uint8Array) => Effect.Effect<ComponentWorld, SandboxError>
  /**
   * Checks, transpiles (or reads the disk cache), caps and compiles a component. `label` names it
   * in a load failure (`tool 'greet' (/path/greet.wasm)`), so the person knows which file to fix.
   */
  readonly load: (bytes: Uint8Array, limits: Limits, label?: string) => Effect.Effect<CompiledComponent, SandboxError>
}>() {
  static readonly layer = (config: ComponentCacheConfig) => Layer.sync(ComponentCache, () => makeCache(config))
}

/**
 * componentize-qjs output initialises globals with extended constant expressions, which Node 20
 * refuses; they are folded here as the build does (../wasm/ExtendedConst.ts), so a component
 * `inspect` calls runnable loads whichever way it was built.
 */
export const foldExtendedConst = (bytes: Uint8Array): Either.Either<Uint8Array, string> => {
  if (extendedConstSites(bytes).length === 0) return Either.right(bytes)
  const lowered = lowerExtendedConst(bytes)
  const left = extendedConstSites(lowered)
  return left.length === 0
    ? Either.right(lowered)
    : Either.left(`it initialises globals with extended constant expressions this Node cannot compile (${left.slice(0, 3).join(", ")})`)
}

const makeCache = (config: ComponentCacheConfig) => {
  const worlds = new Map<string, ComponentWorld>()
  const loads = new Map<string, Promise<CompiledComponent>>()

  const checkedWorld = (digest: string, bytes: Uint8Array) =>
    Effect.gen(function*() {
      const world = worlds.get(digest) ?? (yield* readWorld(bytes))
      worlds.set(digest, world)
      const problems = unsupported(world)
      if (problems.length > 0) {
        return yield* new SandboxError({ reason: problems[0]!.reason, message: problems.map((p) => p.message).join("; ") })
      }
      return world
    })

  /** The transpiled files, from the disk cache or freshly written there (atomically). */
  const transpiled = async (digest: string, bytes: Uint8Array): Promise<string> => {
    const directory = join(config.directory, `${digest}-${layoutVersion}`)
    try {
      await readFile(join(directory, SCRIPT))
      return directory
    } catch {
      // not cached yet
    }
    const folded = foldExtendedConst(bytes)
    if (Either.isLeft(folded)) throw new Error(folded.left)
    const output = await transpile(folded.right, { name: "component", instantiation: "sync", noTypescript: true }) as {
      files: Record<string, Uint8Array>
    }
    const staging = `${directory}.tmp-${process.pid}-${Math.random().toString(16).slice(2)}`
    await mkdir(staging, { recursive: true })
    for (const [name, content] of Object.entries(output.files)) {
      if (name.includes("/")) continue
      await writeFile(join(staging, name), content)
    }
    // Written last: a directory with it is complete. Workers load this, not the ESM glue.
    const glue = new TextDecoder().decode(output.files["component.js"])
    await writeFile(join(staging, SCRIPT), glueScript(glue, join(directory, SCRIPT)))
    try {
      await rename(staging, directory)
    } catch {
      // Another process cached it first: use theirs.
      await rm(staging, { recursive: true, force: true })
    }
    return directory
  }

  const compile = async (directory: string, limits: Limits): Promise<LoadedGuest> => {
    const modules: Record<string, WebAssembly.Module> = {}
    for (const name of await readdir(directory)) {
      if (!name.endsWith(".wasm")) continue
      const capped = capCoreModule(await readFile(join(directory, name)), limits)
      if (Either.isLeft(capped)) {
        const reason = capped.left.reason === "MemoryLimit" || capped.left.reason === "TableLimit" ? capped.left.reason : "InvalidComponent"
        throw new SandboxError({ reason, message: capped.left.message })
      }
      // Records a growth the cap refuses, so the failure can be worded exactly; a module the
      // probe cannot rewrite (memory64, unknown opcodes) still runs capped, judged by evidence.
      const probed = Either.getOrElse(instrumentGrow(capped.right), () => capped.right)
      modules[name] = await WebAssembly.compile(probed as Uint8Array<ArrayBuffer>)
    }
    return { jsUrl: pathToFileURL(join(directory, "component.js")).href, scriptPath: resolve(directory, SCRIPT), modules }
  }

  const inspect = (bytes: Uint8Array) => checkedWorld(digestOf(bytes), bytes)

  const load = (bytes: Uint8Array, limits: Limits, label?: string) =>
    Effect.gen(function*() {
      const digest = digestOf(bytes)
      const world = yield* checkedWorld(digest, bytes)
      const key = `${digest}:${limits.memoryBytes}:${limits.tableElements}`
      let pending = loads.get(key)
      if (pending === undefined) {
        pending = transpiled(digest, bytes).then((directory) => compile(directory, limits)).then((guest) => ({ digest, world, guest }))
        loads.set(key, pending)
        pending.catch(() => loads.delete(key))
      }
      const promise = pending
      return yield* Effect.tryPromise({
        try: () => promise,
        catch: (error) =>
          error instanceof SandboxError
            ? error
            : new SandboxError({ reason: "InvalidComponent", message: `could not load ${label ?? "the component"}: ${message(error)}` })
      })
    }).pipe(Effect.withSpan("ComponentCache.load"))

  return ComponentCache.of({ inspect, load })
}
