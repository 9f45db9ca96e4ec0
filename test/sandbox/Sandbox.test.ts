/**
 * The Sandbox service directly: one worker per run, the pre-started pool, warm pools of held
 * (pre-instantiated) workers, interruption.
 */
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Script } from "node:vm"
import { describe, expect, it } from "vitest"
import { ComponentCache } from "../../src/sandbox/component/ComponentCache.js"
import type { GuestGrant } from "../../src/sandbox/GuestJob.js"
import { type GuestTemplate, Sandbox, silentHost } from "../../src/sandbox/Sandbox.js"
import { toolMurmurImports } from "../../src/sandbox/host/MurmurImports.js"
import { wasiImports } from "../../src/sandbox/host/WasiImports.js"
import { buildComponent, type FixtureName } from "../lib/components.js"

const cacheDirectory = new URL("../../.cache/cli-components", import.meta.url).pathname
const limits = { memoryBytes: 64 * 1024 * 1024, tableElements: 100_000 }

const layer = (prestart: number) => Layer.merge(ComponentCache.layer({ directory: cacheDirectory }), Sandbox.layer({ prestart }))

const grantOf = (env: Record<string, string> = {}): GuestGrant =>
  ({ preopen: mkdtempSync(join(tmpdir(), "sandbox-")), env, network: [], memoryBytes: limits.memoryBytes, instances: 1000 })

/** A template for `fixture` run in `role` (the test's warm pools and runs share it). */
const templateOf = (fixture: FixtureName, role: GuestTemplate["role"], grant = grantOf()) =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    const component = yield* cache.load(yield* Effect.promise(() => buildComponent(fixture)), limits)
    return { role, component, grant, allowlist: [], tools: {}, inTask: false, sessionId: "ses_test", artifacts: [] } satisfies GuestTemplate
  })

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

  it("a warm pool holds a worker instantiated ahead; a matching run takes it with its input, the pool refills, closing terminates it", async () => {
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(layer(0), scope))
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const template = yield* templateOf("echo-tool", { kind: "tool", name: "echo-tool" })
      const pool = yield* Scope.make()
      yield* sandbox.warm(template, 1).pipe(Scope.extend(pool))
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      for (const data of ["hello", "again"]) {
        const outcome = yield* sandbox.run({ ...template, deadlineSeconds: 30, input: { data }, host: silentHost })
        expect(outcome.result?.data).toBe(data)
        expect(yield* sandbox.liveWorkers()).toBe(0)
        // Each held worker served one run; its replacement is instantiated for the next.
        yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      }
      yield* Scope.close(pool, Exit.void)
      expect(yield* sandbox.idleWorkers()).toBe(0)
      yield* sandbox.warm(template, 2)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 2)
    })
    await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(context)))
    expect(Effect.runSync(Sandbox.pipe(Effect.flatMap((s) => s.idleWorkers()), Effect.provide(context)))).toBe(0)
    // Shutdown terminates what a still-open warm scope holds.
    const again = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      yield* sandbox.warm(yield* templateOf("echo-tool", { kind: "tool", name: "echo-tool" }), 1)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      yield* Scope.close(scope, Exit.void)
      expect(yield* sandbox.idleWorkers()).toBe(0)
    })
    await Effect.runPromise(Effect.scoped(again).pipe(Effect.provide(context)))
  })

  it("a run that matches no warm pool gets a worker of its own and leaves the held one waiting", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const role = { kind: "tool", name: "echo-tool" } as const
      yield* sandbox.warm(yield* templateOf("echo-tool", role, grantOf({ A: "1" })), 1)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      const other = yield* templateOf("echo-tool", role, grantOf({ A: "2" }))
      const outcome = yield* sandbox.run({ ...other, deadlineSeconds: 30, input: { data: "mine" }, host: silentHost })
      expect(outcome.result?.data).toBe("mine")
      expect(yield* sandbox.idleWorkers()).toBe(1)
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })

  it("interrupting a run on a held worker terminates that worker at once; the pool refills", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const template = yield* templateOf("capsule-spin-loop", { kind: "capsule" })
      yield* sandbox.warm(template, 1)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      const fiber = yield* Effect.fork(sandbox.run({ ...template, deadlineSeconds: 600, host: silentHost }))
      yield* eventually(sandbox.liveWorkers(), (n) => n === 1)
      // It took the held worker: the replacement only starts once the run is over.
      expect(yield* sandbox.idleWorkers()).toBe(0)
      yield* Effect.sleep("200 millis")
      yield* Fiber.interrupt(fiber)
      expect(yield* sandbox.liveWorkers()).toBe(0)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })

  it("a held worker whose instantiation fails reports it to the run that takes it", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      // echo-tool needs more core instances than this grant allows: instantiation fails.
      const template = yield* templateOf("echo-tool", { kind: "tool", name: "echo-tool" }, { ...grantOf(), instances: 1 })
      yield* sandbox.warm(template, 1)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      const outcome = yield* sandbox.run({ ...template, deadlineSeconds: 30, input: {}, host: silentHost }).pipe(Effect.flip)
      expect(outcome.reason).toBe("InstanceLimit")
      expect(yield* sandbox.liveWorkers()).toBe(0)
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })
  it("the deadline ends a run, also one waiting in a host call (request-input nobody answers); its worker is gone", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const spin = yield* Effect.flatten(runOf("capsule-spin-loop", 1)).pipe(Effect.flip)
      expect(spin.reason).toBe("Deadline")
      expect(spin.message).toMatch(/^capsule execution exceeded its 1s deadline/)
      const template = yield* templateOf("request-input-tool", { kind: "tool", name: "request-input-tool" })
      const asked: Array<string> = []
      const waiting = { ...silentHost, requestInput: (prompt: string) => Effect.zipRight(Effect.sync(() => void asked.push(prompt)), Effect.never) }
      const outcome = yield* sandbox.run({ ...template, inTask: true, deadlineSeconds: 1, input: { data: "your name?" }, host: waiting }).pipe(Effect.flip)
      expect(asked).toEqual(["your name?"])
      expect(outcome.reason).toBe("Deadline")
      expect(outcome.message).toMatch(/^tool 'request-input-tool' exceeded its 1s/)
      expect(yield* sandbox.liveWorkers()).toBe(0)
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })

  it("every nested tool call gets a fresh instance: a tool counting in a global answers 1 each time, on a fresh or a held worker", async () => {
    const program = Effect.gen(function*() {
      const sandbox = yield* Sandbox
      const cache = yield* ComponentCache
      const counter = yield* cache.load(yield* Effect.promise(() => buildComponent("counter-tool")), limits)
      const capsule = (grant: GuestGrant) =>
        templateOf("capsule-calls-tool", { kind: "capsule" }, grant).pipe(Effect.map((template) => ({
          ...template,
          allowlist: ["counter-tool"],
          tools: { "counter-tool": { component: counter, grant: grantOf(), deadlineSeconds: 30 } }
        })))
      const env = { TOOL_NAME: "counter-tool", CALLS: "4" }
      const fresh = yield* capsule(grantOf(env))
      yield* sandbox.run({ ...fresh, deadlineSeconds: 30, host: silentHost })
      expect(readFileSync(join(fresh.grant.preopen!, "out", "result.txt"), "utf8")).toBe("1,1,1,1")
      const held = yield* capsule(grantOf(env))
      yield* sandbox.warm(held, 1)
      yield* eventually(sandbox.idleWorkers(), (n) => n === 1)
      yield* sandbox.run({ ...held, deadlineSeconds: 30, host: silentHost })
      expect(readFileSync(join(held.grant.preopen!, "out", "result.txt"), "utf8")).toBe("1,1,1,1")
      // A tool run on its own (held worker, then its replacement) starts from a fresh instance too.
      const tool = yield* templateOf("counter-tool", { kind: "tool", name: "counter-tool" })
      yield* sandbox.warm(tool, 1)
      for (let i = 0; i < 2; i++) {
        yield* eventually(sandbox.idleWorkers(), (n) => n === 2)
        expect((yield* sandbox.run({ ...tool, deadlineSeconds: 30, input: {}, host: silentHost })).result?.data).toBe("1")
      }
      // Control: the fixture does count. One instance whose run is called again answers 2.
      const glue = new Script(readFileSync(counter.guest.scriptPath, "utf8")).runInThisContext()()
      const sinks = { stdout: () => undefined, stderr: () => undefined }
      const channel = { post: () => undefined, call: () => undefined }
      const job = { inTask: false } as Parameters<typeof toolMurmurImports>[0]
      const root = glue.instantiate((name: string) => counter.guest.modules[name], { ...wasiImports(grantOf(), sinks), ...toolMurmurImports(job, channel) })
      const run = root["murmur:tool/run@0.1.0"].run
      expect([run({ data: undefined, logPath: undefined }).data, run({ data: undefined, logPath: undefined }).data]).toEqual(["1", "2"])
    })
    await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer(0)))))
  })
})
