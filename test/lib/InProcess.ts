/**
 * An in-process session's scaffolding for tests: a scope closed by the afterEach `cleanups`
 * (or earlier by `close`), and a Sandbox (one pre-started worker) over the host environment
 * `env` and the component cache shared with the CLI runs.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { join } from "node:path"
import { HostEnvironment, SandboxLive } from "../../src/layers/Host.js"
import { cliCacheDir } from "./CapsuleDirs.js"

const cacheDirectory = join(cliCacheDir, "components")

export const inProcessSandbox = async (env: Record<string, string>, cleanups: Array<() => Promise<void> | void>) => {
  const scope = Effect.runSync(Scope.make())
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  cleanups.push(close)
  const host = Layer.succeed(HostEnvironment, { env, cacheDirectory })
  const sandboxContext = await Effect.runPromise(Layer.buildWithScope(SandboxLive(1).pipe(Layer.provide(host)), scope))
  /** Builds a layer in the session's scope. */
  const build = <ROut, E>(layer: Layer.Layer<ROut, E>) => Effect.runPromise(Layer.buildWithScope(layer, scope))
  return { sandboxContext, build, close }
}
