/**
 * What the process knows about its host: the environment guests' allowlists draw from (a
 * snapshot; the process's own environment is never changed), where compiled components are
 * cached, and the worker sandbox capsules from a directory run on. A host application provides
 * it once (`CapsuleRuntime.layerHost`), for every session it runs.
 */
import { homedir } from "node:os"
import { join } from "node:path"
import { Config, Context, Effect, Layer, Option } from "effect"
import { ComponentCache } from "../sandbox/component/ComponentCache.js"
import { Sandbox } from "../sandbox/Sandbox.js"

const optional = (name: string) => Effect.map(Config.option(Config.string(name)), Option.getOrUndefined)

/** `CAPSULE_RUNTIME_CACHE_DIR`, else `$XDG_CACHE_HOME/capsule-runtime`, else `~/.cache/capsule-runtime`. */
export const cacheBase: Effect.Effect<string, never> = Effect.gen(function*() {
  const configured = yield* optional("CAPSULE_RUNTIME_CACHE_DIR")
  return configured ?? join((yield* optional("XDG_CACHE_HOME")) ?? join(homedir(), ".cache"), "capsule-runtime")
}).pipe(Effect.orDie)

/** Where `build` keeps the components it built, by digest (src/build/BuildCache.ts). */
export const buildCacheDirectory: Effect.Effect<string, never> = Effect.map(cacheBase, (base) => join(base, "builds"))

export class HostEnvironment extends Context.Tag("capsule-runtime/layers/HostEnvironment")<HostEnvironment, {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cacheDirectory: string
}>() {
  /** Components are cached under ./cacheBase's `components/`. */
  static readonly layer = Layer.effect(HostEnvironment, Effect.map(cacheBase, (base) => ({ env: { ...process.env }, cacheDirectory: join(base, "components") })))
}

/** What a directory's session needs from its host. */
export type Host = HostEnvironment | ComponentCache | Sandbox

/**
 * The component cache and the worker sandbox, on the host's cache directory. A long-lived
 * session keeps `prestart` workers booted ahead of its runs; a one-shot run keeps none.
 */
export const SandboxLive = (prestart = 0) =>
  Layer.unwrapEffect(
    Effect.map(HostEnvironment, (host) => Layer.merge(ComponentCache.layer({ directory: host.cacheDirectory }), Sandbox.layer({ prestart })))
  )

/** The host, built once: its environment, the component cache and a sandbox with `prestart` workers booted ahead. */
export const layerHost = (prestart = 1): Layer.Layer<Host> => SandboxLive(prestart).pipe(Layer.provideMerge(HostEnvironment.layer))
