/**
 * The Sandbox service directly: one worker per run, the pre-started pool, interruption.
 */
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ComponentCache } from "../../src/sandbox/ComponentCache.js"
import { Sandbox, silentHost } from "../../src/sandbox/Sandbox.js"
import { buildComponent, type FixtureName } from "../lib/components.js"

const cacheDirectory = new URL("../../.cache/cli-components", import.meta.url).pathname
const limits = { memoryBytes: 64 * 1024 * 1024, tableElements: 100_000 }

const layer = (prestart: number) => Layer.merge(ComponentCache.layer({ directory: cacheDirectory }), Sandbox.layer({ prestart }))

const runOf = (fixture: FixtureName, deadlineSeconds = 30) =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    const sandbox = yield* Sandbox
    const component = yield* cache.load(yield* Effect.promise(() => buildComponent(fixture)), limits)
    return sandbox.run({
      role: { kind: "capsule" },
      component,
      grant: { preopen: mkdtempSync(join(tmpdir(), "sandbox-")), env: {}, network: [], memoryBytes: limits.memoryBytes, instances: 1000 },
      deadlineSeconds,
      allowlist: [],
      tools: {},
      inTask: false,
      sessionId: "ses_test",
      artifacts: [],
      host: silentHost
    })
  })

/** Polls an effect until it holds (real time: workers start on their own threads). */
const eventually = <A>(effect: Effect.Effect<A>, ok: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      if (ok(yield* effect)) return
      yield* Effect.sleep("25 millis")
    }
    expect.fail("condition not reached in 5 s")
  })

describe("Sandbox", () => {
  it("keeps the pool full: a pre-started worker serves one run and is replaced; closing terminates the idle ones", async () => {
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(layer(2), scope))
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      expect(yield* sandbox.idleWorkers()).toBe(2)
      const outcome = yield* Effect.flatten(runOf("capsule-spin-loop", 1)).pipe(Effect.exit)
      expect(Exit.isFailure(outcome)).toBe(true)
      expect(yield* sandbox.liveWorkers()).toBe(0)
      expect(yield* sandbox.idleWorkers()).toBe(2)
    })
    await Effect.runPromise(program.pipe(Effect.provide(context)))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect(Effect.runSync(Sandbox.pipe(Effect.flatMap((s) => s.idleWorkers()), Effect.provide(context)))).toBe(0)
  })

  it("interrupting a run terminates its worker at once, whatever the guest is doing", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const run = yield* runOf("capsule-spin-loop", 600)
      const fiber = yield* Effect.fork(run)
      yield* eventually(sandbox.liveWorkers(), (n) => n === 1)
      yield* Effect.sleep("200 millis")
      const before = Date.now()
      yield* Fiber.interrupt(fiber)
      const took = Date.now() - before
      expect(yield* sandbox.liveWorkers()).toBe(0)
      expect(took).toBeLessThan(2_000)
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })
})
