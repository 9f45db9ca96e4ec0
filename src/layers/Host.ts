/**
 * What the process knows about its host, read once here (the only place that touches
 * `process.env`): the environment guests' allowlists draw from, and where compiled components
 * are cached.
 */
import { homedir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import { ComponentCache } from "../sandbox/component/ComponentCache.js"
import { Sandbox } from "../sandbox/Sandbox.js"

export class HostEnvironment extends Context.Tag("capsule-runtime/layers/HostEnvironment")<HostEnvironment, {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cacheDirectory: string
}>() {
  static readonly layer = Layer.sync(HostEnvironment, () => {
    const env = { ...process.env }
    const base = env.CAPSULE_RUNTIME_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "capsule-runtime")
    return { env, cacheDirectory: join(base, "components") }
  })
}

/**
 * The component cache and the worker sandbox, on the host's cache directory. A long-lived
 * session keeps `prestart` workers booted ahead of its runs; a one-shot run keeps none.
 */
export const SandboxLive = (prestart = 0) =>
  Layer.unwrapEffect(
    Effect.map(HostEnvironment, (host) => Layer.merge(ComponentCache.layer({ directory: host.cacheDirectory }), Sandbox.layer({ prestart })))
  )
