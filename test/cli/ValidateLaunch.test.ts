/**
 * Issue 23 item 8 (part), through `node dist/main.js`: `validate --strict` passed capsules that
 * `serve` warned about at start. Now validate says what a launch on this host would: the shell
 * without OS containment (`W-RUN-001`; bubblewrap made unusable here with `MURMUR_BWRAP`), a
 * tool's network entries the ceiling drops (`W-SEC-007`), a credential name in `env.allow`, the
 * API key handed to a driver without `inference_auth` (`W-RUN-025`), and a containment floor the
 * host cannot meet (`E-CAP-003`, which `serve` refuses). Every warning `serve` prints about the
 * capsule is one of validate's, and validate leaves no lockfile or workdir behind.
 * (`npm run build` first.)
 */
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { cliScratch } from "../lib/Scratch.js"
import { makeAgentCapsuleDir, runCli, serveCli, until } from "../lib/CapsuleDirs.js"

const { cleanups, home } = cliScratch()
const env = { MURMUR_HOME: home, MURMUR_BWRAP: "/nonexistent/bwrap", VALIDATE_TEST_KEY: "sk-not-printed" }

/** The agent fixture's directory, its manifest replaced by `manifest` (its installed artifacts kept). */
const capsule = async (manifest: string) => {
  const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [] }, tools: { greet: "echo-tool" } })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, "murmur.yaml"), manifest)
  return dir
}

const HEAD = `name: launch-check
version: 0.1.0
artifacts:
  - { name: scripted-driver, version: 0.1.0, runtime: driver }
  - name: greet
    version: 0.1.0
    runtime: tool
    capabilities: { network: { allow: ["https://elsewhere.example.test"] } }
inference:
  endpoint: http://127.0.0.1:9/v1
  model: scripted
  api_key: \${VALIDATE_TEST_KEY}
  driver: { artifact: scripted-driver, config: { replies: [] } }
`

const WARNED = `${HEAD}capabilities:
  network: { allow: ["http://127.0.0.1:9"] }
  shell: { allow: [echo] }
  env: { allow: [GITHUB_TOKEN] }
`

/** The text after `warning[CODE]: ` or `warning: `. */
const messageOf = (line: string) => line.replace(/^warning(?:\[[^\]]+\])?: /, "")

describe("validate says what serve would say at start", () => {
  it("every warning serve prints is one of validate's, and --strict fails on them", async () => {
    const dir = await capsule(WARNED)
    const checked = await runCli(["validate", dir, "--strict"], env)
    expect(checked.code).toBe(1)
    const codes = checked.stderr.split("\n").filter((line) => line.startsWith("warning[")).map((line) => line.slice(0, line.indexOf("]") + 1))
    expect(codes).toEqual(expect.arrayContaining(["warning[W-RUN-001]", "warning[W-SEC-007]", "warning[W-LAUNCH]", "warning[W-RUN-025]"]))
    expect(checked.stderr).not.toContain("sk-not-printed")
    // Nothing of a launch is left in the capsule directory.
    expect(existsSync(join(dir, "murmur.lock"))).toBe(false)
    expect(existsSync(join(dir, "workdir"))).toBe(false)

    const served = await serveCli(dir, env, cleanups)
    await until(() => served.stderr().includes("W-RUN-025"), "serve's warnings")
    const said = served.stderr().split("\n").filter((line) => line.startsWith("warning"))
    expect(said.length).toBeGreaterThanOrEqual(4)
    const validated = checked.stderr.split("\n").map(messageOf)
    for (const line of said) expect(validated, line).toContain(messageOf(line))
  }, 90_000)

  it("a containment floor this host cannot meet is the error serve refuses with", async () => {
    const dir = await capsule(`${HEAD}capabilities:\n  network: { allow: ["http://127.0.0.1:9"] }\n  containment: sealed\n  shell: { allow: [echo] }\n`)
    const checked = await runCli(["validate", dir], env)
    expect(checked.code).toBe(1)
    expect(checked.stderr).toMatch(/^error\[E-CAP-003\]: containment floor 'sealed' cannot be met/m)
    const served = await runCli(["serve", dir, "--json"], env)
    expect(served.code).toBe(1)
    expect(served.stdout + served.stderr).toContain("E-CAP-003")
  }, 90_000)

  it("a capsule with nothing to say still validates strictly", async () => {
    const dir = await capsule(HEAD.replace("  api_key: ${VALIDATE_TEST_KEY}\n", "").replace(/    capabilities: \{ network[^\n]*\n/, "") +
      "capabilities:\n  network: { allow: [\"http://127.0.0.1:9\"] }\n")
    const checked = await runCli(["validate", dir, "--strict"], env)
    expect(checked.code, checked.stderr).toBe(0)
  }, 60_000)
})
