/**
 * A shell command's output costs the runtime a bounded amount of memory whatever it prints
 * (issue 17, item 1: 400 MB of output took the runtime from 329 to 2,187 MiB). The Shell runs in
 * this process, so its peak resident set (VmHWM, reset just before the call) is the runtime's.
 * Real commands under each tier: sealed (bubblewrap), advisory, and no containment at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { chmodSync, mkdtempSync, readdirSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { probeHostOnce } from "../../src/shell/containment/HostProbe.js"
import { type ShellContainment, shellContainment } from "../../src/shell/containment/ShellContainment.js"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../../src/project/manifest/Capabilities.js"
import { Shell, type ShellRequest } from "../../src/shell/Shell.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"
import { peakRss, resetPeakRss } from "../lib/PeakRss.js"

const hostPath = process.env.PATH ?? "/usr/bin:/bin"
const host = await Effect.runPromise(probeHostOnce(hostPath))
const layer = Shell.layer().pipe(Layer.provideMerge(DetachedRegistry.layer))
const MiB = 1024 * 1024

const tiers: ReadonlyArray<[string, ShellContainment | undefined]> = [
  ["sealed", host.tier === "sealed" ? shellContainment(host, undefined, hostPath) : undefined],
  ["advisory", shellContainment({ tier: "advisory", reason: "this test asks for it" }, undefined, hostPath)],
  ["uncontained", undefined]
]

const request = (dir: string, command: string, containment: ShellContainment | undefined): ShellRequest => ({
  binary: "head",
  command,
  workdir: dir,
  allow: ["head"],
  hostEnv: { PATH: hostPath },
  baselineEnv: [],
  stripPatterns: [],
  runtimeVars: {},
  containment
})

describe("shell output and the runtime's memory", () => {
  it.live.each(tiers)("a command printing 1 GB (%s) raises the runtime's peak RSS by under 64 MiB; its log is capped", ([tier, containment]) =>
    Effect.gen(function*() {
      // The sealed row must not pass by quietly running uncontained.
      assert.isTrue(tier !== "sealed" || containment !== undefined, `this host has no sealed tier: ${host.tier === "advisory" ? host.reason : ""}`)
      const dir = mkdtempSync(join(tmpdir(), "shell-output-"))
      chmodSync(dir, 0o755)
      const shell = yield* Shell
      // What any first call costs (the sealed root's library closure, code paths) is not the output's.
      yield* shell.run(request(dir, "-c 10 /dev/zero", containment))
      const base = resetPeakRss()
      const outcome = yield* shell.run(request(dir, "-c 1000000000 /dev/zero", containment))
      const growth = peakRss() - base
      if (outcome._tag !== "Finished") return assert.fail("expected a finished command")
      assert.isBelow(growth, 64 * MiB, `peak RSS grew by ${(growth / MiB).toFixed(1)} MiB`)
      assert.strictEqual(outcome.exitCode, 137)
      assert.isAbove(outcome.stdoutBytes, DEFAULT_MAX_OUTPUT_BYTES)
      assert.strictEqual(outcome.droppedBytes, outcome.stdoutBytes - DEFAULT_MAX_OUTPUT_BYTES)
      assert.isBelow(Buffer.byteLength(outcome.result.data!), 20_000)
      // Only the log is left: the spills behind it were unlinked as they were made.
      assert.deepStrictEqual(readdirSync(join(dir, "logs")), [outcome.outputPath!.slice("logs/".length)])
      assert.isBelow(statSync(join(dir, outcome.outputPath!)).size, DEFAULT_MAX_OUTPUT_BYTES + 1024)
    }).pipe(Effect.provide(layer)))
})
