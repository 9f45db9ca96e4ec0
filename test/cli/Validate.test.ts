/**
 * `validate <dir>` through @effect/cli's own parser (`Command.run` on the command; the
 * `node dist/main.js validate` wiring is the top-level CLI's): warnings and the error on stderr,
 * one JSON object with `--json`, exit status 1 on a refusal, `${VAR}` answered by the host
 * environment and never echoed.
 */
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { afterEach, assert, describe, it } from "@effect/vitest"
import { Console, Effect, Exit } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { validateCommand, validateManifest } from "../../src/cli/Validate.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  delete process.env.CAPSULE_RUNTIME_TEST_KEY
})

/** A capsule directory holding `manifest` as murmur.yaml (none when `undefined`). */
const capsule = (manifest: string | undefined) => {
  const dir = mkdtempSync(join(tmpdir(), "validate-"))
  dirs.push(dir)
  if (manifest !== undefined) writeFileSync(join(dir, "murmur.yaml"), manifest)
  // AGENT's driver, installed where a registry artifact lives (validate checks it is there).
  mkdirSync(join(dir, ".murmur", "artifacts", "d", "1.0.0"), { recursive: true })
  writeFileSync(join(dir, ".murmur", "artifacts", "d", "1.0.0", "d.wasm"), "")
  return dir
}

const AGENT = `name: demo
version: 0.1.0
artifacts: [{ name: d, version: 1.0.0, runtime: driver }]
capabilities: { network: { allow: ["http://127.0.0.1:11434"] } }
inference:
  endpoint: http://127.0.0.1:11434
  model: llama3
  driver: { artifact: d }
`

const validate = async (argv: ReadonlyArray<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const base = Effect.runSync(Console.consoleWith(Effect.succeed))
  const console: Console.Console = {
    ...base,
    log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(args.join(" "))),
    error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void err.push(args.join(" ")))
  }
  const cli = Command.run(validateCommand, { name: "capsule-runtime", version: "0" })
  const exit = await Effect.runPromiseExit(cli(["node", "main", ...argv]).pipe(Effect.withConsole(console), Effect.provide(NodeContext.layer)))
  const status = Exit.isSuccess(exit)
    ? 0
    : exit.cause._tag === "Fail" && (exit.cause.error as { _tag?: string })._tag === "ExitStatus"
    ? (exit.cause.error as unknown as { code: number }).code
    : -1
  return { status, out, err }
}

describe("validate", () => {
  it("accepts a manifest: warnings on stderr (without a doubled 'warning:'), a summary on stdout, exit 0", async () => {
    const dir = capsule(`${AGENT}  temprature: 0.2\ntrace: { include_tool_output: true }\ncontext: { record: off }\n`)
    const { err, out, status } = await validate([dir])
    assert.strictEqual(status, 0)
    assert.deepStrictEqual(err.map((line) => line.slice(0, line.indexOf("]") + 1)), [
      "warning[W-SEC-019]",
      "warning[W-RETIRED-KEY]"
    ])
    assert.match(err[0]!, /^warning\[W-SEC-019\]: unrecognized key 'temprature' in inference — /)
    assert.strictEqual(err[1], "warning[W-RETIRED-KEY]: 'trace.include_tool_output: true' is retired; use 'trace.capture: content' instead")
    assert.deepStrictEqual(out, [`${join(dir, "murmur.yaml")}: ok, demo@0.1.0 (agent capsule)`])
  })

  it("refuses a manifest: error[CODE]: message on stderr, exit 1", async () => {
    const { err, out, status } = await validate([capsule(`${AGENT}  max_turns: 0\n`)])
    assert.strictEqual(status, 1)
    assert.deepStrictEqual(err, ["error[E-MAN-003]: murmur.yaml: invalid inference config for 'inference.max_turns': must be greater than 0"])
    assert.deepStrictEqual(out, [])
  })

  it("--json: one object on stdout, for an accepted and a refused manifest", async () => {
    const good = await validate([capsule(`${AGENT}lifecycle: { after_tsk: sleep }\n`), "--json"])
    assert.strictEqual(good.status, 0)
    assert.deepStrictEqual(good.err, [])
    assert.strictEqual(good.out.length, 1)
    const accepted = JSON.parse(good.out[0]!)
    assert.strictEqual(accepted.ok, true)
    assert.deepStrictEqual(accepted.errors, [])
    assert.deepStrictEqual(accepted.warnings.map((w: { code: string; path: string }) => [w.code, w.path]), [["W-SEC-019", "lifecycle.after_tsk"]])
    const bad = await validate(["--json", capsule("name: x\nversion: 1\ntrace: { capture: all }\n")])
    assert.strictEqual(bad.status, 1)
    assert.deepStrictEqual(JSON.parse(bad.out[0]!), {
      ok: false,
      errors: [{ code: "E-MAN-003", message: "murmur.yaml: invalid trace config for 'trace.capture': must be one of: none, meta, content; got 'all'" }],
      warnings: []
    })
  })

  it("a directory without murmur.yaml is E-IO-001", async () => {
    const dir = capsule(undefined)
    mkdirSync(join(dir, "sub"))
    const { err, status } = await validate([dir])
    assert.strictEqual(status, 1)
    assert.deepStrictEqual(err, [`error[E-IO-001]: murmur.yaml not found at ${join(dir, "murmur.yaml")}`])
  })

  it("resolves inference.api_key: ${VAR} from the host environment and never prints the key", async () => {
    const dir = capsule(`${AGENT}  api_key: \${CAPSULE_RUNTIME_TEST_KEY}\n`)
    const unset = await validate([dir, "--json"])
    assert.strictEqual(unset.status, 1)
    assert.strictEqual(
      JSON.parse(unset.out[0]!).errors[0].message,
      "murmur.yaml: inference.api_key references ${CAPSULE_RUNTIME_TEST_KEY} but the environment variable is not set"
    )
    process.env.CAPSULE_RUNTIME_TEST_KEY = "sk-do-not-print"
    const set = await validate([dir])
    assert.strictEqual(set.status, 0)
    assert.notInclude([...set.out, ...set.err].join("\n"), "sk-do-not-print")
  })

  it("validateManifest: the verdict without the file system", () => {
    assert.deepStrictEqual(validateManifest("name: s\nversion: 1\n", {}), { ok: true, errors: [], warnings: [], summary: "s@1 (script capsule)" })
    assert.deepStrictEqual(validateManifest("version: 1\n", {}), {
      ok: false,
      errors: [{ code: "E-MAN-001", message: "murmur.yaml: missing required field 'name'" }],
      warnings: []
    })
  })

  // Issue 12's frictions: each of these printed "ok" and exited 0, or reported the first only.
  describe("every problem in one pass", () => {
    const THREE_MISTAKES = `name: demo
version: 0.1.0
artifacts:
  - { name: openai, runtime: driver, source: ../../drivers/openai, local_source: true }
  - { name: greet, runtime: tool, source: artifacts/greet, local_source: true }
capabilites:
  shell: { allow: [echo] }
inference:
  endpoint: https://api.example.test/v1
  model: m
  driver: { artifact: openai }
`

    it("reports a misspelled top-level key, a missing source and an uncovered endpoint together; exit 1", async () => {
      const dir = capsule(THREE_MISTAKES)
      const { err, out, status } = await validate([dir])
      assert.strictEqual(status, 1)
      assert.deepStrictEqual(out, [])
      const codes = err.map((line) => line.slice(0, line.indexOf("]") + 1))
      assert.includeMembers(codes, ["warning[W-SEC-019]", "warning[W-VAL-001]", "error[E-VAL-001]"])
      assert.strictEqual(codes.filter((code) => code === "error[E-VAL-001]").length, 2)
      assert.match(err.find((line) => line.startsWith("warning[W-SEC-019]"))!, /'capabilites' at the top level — did you mean 'capabilities'/)
      assert.include(err.join("\n"), `source 'artifacts/greet' does not exist (resolved to ${join(dir, "artifacts/greet")})`)
      assert.include(err.join("\n"), "inference.endpoint https://api.example.test is not covered by capabilities.network.allow")
      assert.match(err.at(-1)!, /: 2 errors, 2 warnings$/)
    })

    it("--strict turns a warning alone into exit 1; without it the warning is printed and exit is 0", async () => {
      const dir = capsule(`${AGENT.replace("capabilities:", "capabilites:")}`)
      const lax = await validate([dir])
      assert.strictEqual(lax.status, 0)
      assert.match(lax.err[0]!, /^warning\[W-SEC-019\]: unrecognized key 'capabilites'/)
      const strict = await validate([dir, "--strict"])
      assert.strictEqual(strict.status, 1)
      assert.match(strict.err.at(-1)!, /: 2 warnings$/)
    })

    it("the endpoint in an error carries no credentials from its URL", async () => {
      const dir = capsule(AGENT.replace("endpoint: http://127.0.0.1:11434", "endpoint: https://user:sk-secret@api.example.test/v1"))
      const { err } = await validate([dir, "--strict"])
      assert.include(err.join("\n"), "https://api.example.test")
      assert.notInclude(err.join("\n"), "sk-secret")
    })

    it("a source directory not built yet says to run build", async () => {
      const dir = capsule(`name: demo\nversion: 0.1.0\nartifacts:\n  - { name: t, runtime: tool, source: t, local_source: true }\n`)
      mkdirSync(join(dir, "t"))
      writeFileSync(join(dir, "t", "world.wit"), "package x:t;\nworld tool { export murmur:tool/run@0.1.0; }\n")
      const { err, status } = await validate([dir])
      assert.strictEqual(status, 1)
      assert.deepStrictEqual(err, [`error[E-VAL-002]: artifact 't': ${join(dir, "t")} has sources but no component yet; run: capsule-runtime build ${dir}`])
    })
  })
})
