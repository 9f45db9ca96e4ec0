/**
 * Interrupting a shell call at any moment of its start ends it (honest cancellation). Found by a
 * CI run where a cancel during the first sealed spawn waited out a 30 s `sleep`: the kill grace was
 * a timeout inside the interrupt handler (uninterruptible, so it waited for the pipes to close), and
 * a bwrap killed while the launcher changed uid left the command running without its parent-death
 * signal. Each delay here lands at a different step of bwrap's setup.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Layer } from "effect"
import { probeHostOnce } from "../../src/shell/containment/HostProbe.js"
import { type ShellContainment, shellContainment } from "../../src/shell/containment/ShellContainment.js"
import { Shell } from "../../src/shell/Shell.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"

const hostPath = process.env.PATH ?? "/usr/bin:/bin"
const host = await Effect.runPromise(probeHostOnce(hostPath))
const layer = Shell.layer().pipe(Layer.provideMerge(DetachedRegistry.layer))

const tiers: ReadonlyArray<[string, ShellContainment | undefined]> = [
  ["sealed", host.tier === "sealed" ? shellContainment(host, undefined, hostPath) : undefined],
  ["advisory", shellContainment({ tier: "advisory", reason: "this test asks for it" }, undefined, hostPath)]
]

/** Every process on the host whose command line has `marker` as an argument. */
const processesWith = (marker: string) =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(marker)
    } catch {
      return false
    }
  })

describe("interrupting a shell call while it starts", () => {
  it.live.each(tiers)("%s: at 0 to 40 ms after the call, the interrupt ends it and leaves no process", ([tier, containment]) =>
    Effect.gen(function*() {
      assert.isTrue(tier !== "sealed" || containment !== undefined, `this host has no sealed tier: ${host.tier === "advisory" ? host.reason : ""}`)
      const shell = yield* Shell
      for (const [index, delay] of [0, 1, 2, 3, 5, 8, 12, 20, 30, 40].entries()) {
        const dir = mkdtempSync(join(tmpdir(), "shell-interrupt-"))
        chmodSync(dir, 0o755)
        // A duration no other process has: what is left of this call is found by it.
        const marker = `29.${process.pid}${index}`
        const call = yield* Effect.fork(shell.run({
          binary: "sleep",
          command: marker,
          workdir: dir,
          allow: ["sleep"],
          hostEnv: { PATH: hostPath },
          baselineEnv: [],
          stripPatterns: [],
          runtimeVars: {},
          containment
        }))
        yield* Effect.sleep(delay)
        const began = performance.now()
        yield* Fiber.interrupt(call)
        const took = performance.now() - began
        // Far below the command's 29 s: the interrupt did not wait for it to end.
        assert.isBelow(took, 10_000, `interrupt at ${delay} ms took ${took.toFixed(0)} ms`)
        // A SIGKILLed process is gone once the kernel has delivered it; a survivor stays for 29 s.
        let left = processesWith(marker)
        for (let waited = 0; left.length > 0 && waited < 3_000; waited += 50) {
          yield* Effect.sleep(50)
          left = processesWith(marker)
        }
        assert.deepStrictEqual(left, [], `interrupt at ${delay} ms left a process`)
      }
    }).pipe(Effect.provide(layer)), 60_000)
})
