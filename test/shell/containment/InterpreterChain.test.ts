/**
 * A `shell.allow` name that is a script (`#!/usr/bin/env bash`, a version manager's shim): the
 * sealed root holds what it really runs (the interpreter `env` names, found on PATH), so it runs
 * sealed; a script whose `env` program is not on PATH is refused at start and by `validate`
 * (E-CAP-014), naming the program, instead of failing every call with "No such file or directory".
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { interpreterChain } from "../../../src/shell/containment/ComposedRoot.js"
import { call, driverRequest, endTurn, ofType, toolTurn, traceLines } from "../../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../../lib/CapsuleDirs.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const bin = mkdtempSync(join(tmpdir(), "shims-"))
dirs.push(bin)
const script = (name: string, text: string) => {
  writeFileSync(join(bin, name), text)
  chmodSync(join(bin, name), 0o755)
}
script("greeter", "#!/usr/bin/env bash\necho \"hello from $BASH_VERSION-land: $1\"\n")
script("broken", "#!/usr/bin/env no-such-interpreter-here\nprint('hi')\n")
const PATH = `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`

const capsule = async (name: string) => {
  const dir = await makeAgentCapsuleDir({
    driverConfig: { replies: [toolTurn(call("c1", name, { command: "there" })), endTurn("done")] },
    capabilities: `  shell:\n    allow: [${name}]\n  containment: sealed\n`
  })
  dirs.push(dir)
  return dir
}

describe("interpreter chains", () => {
  it("follows #!/usr/bin/env to the program it runs", () => {
    const chain = interpreterChain(join(bin, "greeter"), PATH)
    expect(chain.programs.slice(0, 2)).toEqual([join(bin, "greeter"), "/usr/bin/env"])
    expect(chain.programs[2]).toMatch(/\/bash$/)
    expect(interpreterChain(join(bin, "broken"), PATH)).toEqual({ programs: [join(bin, "broken"), "/usr/bin/env"], missing: "no-such-interpreter-here" })
  })

  it("a script run through env runs in the sealed root", async () => {
    const dir = await capsule("greeter")
    const run = await runCli(["run", dir, "--task", "go", "--json"], { PATH }, 60_000)
    expect(run.code, run.stderr).toBe(0)
    const exit = exitEvent(run)
    const tool = driverRequest(exit.workdir, 2).messages.find((m: { role: string }) => m.role === "tool")
    expect(tool.content[0].text).toMatch(/hello from \d.*-land: there/)
    expect(ofType(traceLines(exit.records), "session_start")[0]!.containment_achieved).toBe("sealed")
  }, 60_000)

  it("a script whose env program is not on PATH is refused at start and by validate, naming it", async () => {
    const dir = await capsule("broken")
    for (const args of [["run", dir, "--task", "go"], ["validate", dir]]) {
      const result = await runCli(args, { PATH }, 60_000)
      expect(result.code, args[0]).not.toBe(0)
      expect(result.stderr + result.stdout, args[0]).toContain("E-CAP-014")
      expect(result.stderr + result.stdout, args[0]).toContain("'no-such-interpreter-here' is not on PATH")
    }
  }, 60_000)
})
