/**
 * The embedded launcher is exactly what its committed source builds: the base64 in
 * ExecLauncher.ts is no opaque binary but the gcc output of exec-launcher.c with the line its
 * header gives. Skipped, with a notice, where gcc is missing.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { launcherBytes } from "../../../src/shell/containment/ExecLauncher.js"

const source = new URL("../../../src/shell/containment/exec-launcher.c", import.meta.url).pathname
const gcc = (() => {
  try {
    execFileSync("gcc", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()
if (!gcc || process.arch !== "x64") console.warn("ExecLauncher reproducibility check skipped: it needs gcc on x86_64")

const dir = mkdtempSync(join(tmpdir(), "launcher-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the embedded exec launcher", () => {
  it.skipIf(!gcc || process.arch !== "x64")("is byte for byte what exec-launcher.c builds", () => {
    const line = /gcc (.*) -o exec-launcher exec-launcher\.c/.exec(readFileSync(source, "utf8").replace(/\\\n\s*\*\s*/g, ""))
    expect(line).not.toBeNull()
    const out = join(dir, "exec-launcher")
    execFileSync("gcc", [...line![1]!.split(/\s+/).filter((flag) => flag !== ""), "-o", out, source])
    expect(Buffer.compare(readFileSync(out), launcherBytes())).toBe(0)
  })
})
