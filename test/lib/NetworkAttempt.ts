/**
 * The `capsule-network-attempt` fixture (a WAT guest that GETs env `TARGET_URL` and writes what
 * happened to `out/result.txt`) run in a real worker under a grant's network parts, for the tests
 * of the allowlist, the inference gateway and redirects.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ComponentCache } from "../../src/sandbox/component/ComponentCache.js"
import type { GuestGrant } from "../../src/sandbox/GuestJob.js"
import { Sandbox, silentHost } from "../../src/sandbox/Sandbox.js"
import { buildComponent } from "./components.js"

const limits = { memoryBytes: 64 * 1024 * 1024, tableElements: 100_000 }

export const networkAttemptRuntime = () =>
  ManagedRuntime.make(Layer.merge(ComponentCache.layer({ directory: new URL("../../.cache/cli-components", import.meta.url).pathname }), Sandbox.layer()))

/** Runs the fixture with TARGET_URL and the given grant parts; returns what it wrote. */
export const fetchAs = (
  runtime: ReturnType<typeof networkAttemptRuntime>,
  target: string,
  grant: Pick<GuestGrant, "network" | "gateway">
) =>
  runtime.runPromise(Effect.gen(function*() {
    const cache = yield* ComponentCache
    const sandbox = yield* Sandbox
    const component = yield* cache.load(yield* Effect.promise(() => buildComponent("capsule-network-attempt")), limits)
    const workdir = mkdtempSync(join(tmpdir(), "network-attempt-"))
    yield* sandbox.run({
      role: { kind: "capsule" },
      component,
      grant: { preopen: workdir, env: { TARGET_URL: target }, memoryBytes: limits.memoryBytes, instances: 1000, ...grant },
      deadlineSeconds: 30,
      allowlist: [],
      tools: {},
      inTask: false,
      sessionId: "ses_network_attempt",
      artifacts: [],
      host: silentHost
    })
    return readFileSync(join(workdir, "out", "result.txt"), "utf8")
  }))
