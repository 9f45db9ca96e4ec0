/**
 * Every command's help and every value flag's refusal, in process (no CLI spawn): help through
 * the console the binary prints with (src/cli/CliConsole.ts) has a description and a named
 * placeholder for every option and argument, never @effect/cli's "A user-defined piece of text",
 * and no ANSI when not on a terminal; a bad value for any flag or argument is one coded line
 * naming it and what it accepts, and a ValidationError (exit 2 in src/main.ts), never a defect.
 */
import { ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Cause, Console, Effect, Exit } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { cli } from "../../src/Cli.js"
import { cliConsole } from "../../src/cli/CliConsole.js"

interface Printed {
  readonly out: string
  readonly err: string
  readonly exit: Exit.Exit<unknown, unknown>
}

/** `capsule-runtime ...args` in this process, printing through the binary's console. */
const runCli = async (args: ReadonlyArray<string>, plain = true): Promise<Printed> => {
  const out: Array<string> = []
  const err: Array<string> = []
  const capture = (base: Console.Console): Console.Console =>
    cliConsole({
      ...base,
      log: (...items) => Effect.sync(() => void out.push(items.join(" "))),
      error: (...items) => Effect.sync(() => void err.push(items.join(" ")))
    }, plain)
  const exit = await Effect.runPromiseExit(
    Console.consoleWith((base) => Effect.withConsole(cli(["node", "capsule-runtime", ...args]), capture(base))).pipe(
      Effect.provide(NodeContext.layer)
    ) as Effect.Effect<unknown, unknown>
  )
  return { out: out.join("\n"), err: err.join("\n"), exit }
}

const COMMANDS = ["serve", "run", "ps", "stop", "cancel", "new", "build", "inspect", "validate", "watch", "send", "chat"]
const TYPE_NAMES = /^(?:text|integer|redacted|directory|file|path|float|date|choice)$/

/** Each option's or argument's header line and the paragraphs under it, from a help text. */
const entries = (help: string) => {
  const sections = help.split(/^(?=ARGUMENTS$|OPTIONS$|COMMANDS$)/m).filter((part) => /^(ARGUMENTS|OPTIONS)$/m.test(part.split("\n")[0]!))
  return sections.flatMap((section) =>
    section.split(/\n(?=[^ \n])/).slice(1).map((block) => {
      const [header, ...rest] = block.split("\n")
      const paragraphs = rest.map((line) => line.trim()).filter((line) => line !== "")
      return { header: header!, paragraphs }
    })
  )
}

const BOILERPLATE = /^This (?:setting is optional|option can be set from environment variables)\.$/

describe("help", () => {
  it.each([[""], ...COMMANDS.map((command) => [command])])("`%s --help` has a description and a placeholder for every option and argument, and no ANSI", async (command) => {
    const args = command === "" ? ["--help"] : [command, "--help"]
    const help = await runCli(args)
    expect(Exit.isSuccess(help.exit)).toBe(true)
    expect(help.out).not.toContain("A user-defined")
    expect(help.out).not.toMatch(/\x1b\[/)
    const listed = entries(help.out)
    if (command !== "") expect(listed.length).toBeGreaterThan(0)
    for (const { header, paragraphs } of listed) {
      const value = header.match(/^--[a-z-]+ (\S+)$/)?.[1]
      if (value !== undefined) expect(value, header).not.toMatch(TYPE_NAMES)
      expect(paragraphs.filter((line) => !BOILERPLATE.test(line)).length, `${command} ${header}`).toBeGreaterThan(0)
    }
  })

  it("on a terminal the styles stay, and the generic line is still gone", async () => {
    const help = await runCli(["serve", "--help"], false)
    expect(help.out).toMatch(/\x1b\[/)
    expect(help.out).not.toContain("A user-defined")
    expect(help.out).toContain("--port PORT")
  })
})

describe("a bad value is one coded line naming the flag", () => {
  const scratch = mkdtempSync(join(tmpdir(), "cli-flags-"))
  const aFile = join(scratch, "file.txt")
  writeFileSync(aFile, "not a directory")
  const missing = join(scratch, "missing")
  const capsule = "examples/hello"

  it.each([
    [["serve", "--port", "70000"], "--port: '70000' is out of range; expected an integer from 0 to 65535"],
    [["serve", "--port", "abc"], "--port: 'abc' is not an integer; expected an integer from 0 to 65535"],
    [["serve", "--task-acceptance", "bogus"], "--task-acceptance: 'bogus' is not one of none, single, queue"],
    [["serve", "--queue-depth", "-1"], "--queue-depth: '-1' is out of range; expected an integer ≥ 0"],
    [["serve", "--max-active", "0"], "--max-active: '0' is out of range; expected an integer ≥ 1"],
    [["serve", "--blocking-timeout", "0"], "--blocking-timeout: '0' is out of range; expected an integer ≥ 1"],
    [["serve", "--max-body-bytes", "1k"], "--max-body-bytes: '1k' is not an integer; expected an integer ≥ 1"],
    [["serve", "--retain-tasks", "x"], "--retain-tasks: 'x' is not an integer; expected an integer ≥ 0"],
    [["serve", "--retain-bytes", "x"], "--retain-bytes: 'x' is not an integer; expected an integer ≥ 0"],
    [["serve", "--replay-bytes", "1.5"], "--replay-bytes: '1.5' is not an integer; expected an integer ≥ 0"],
    [["serve", "--max-watchers", "0"], "--max-watchers: '0' is out of range; expected an integer ≥ 1"],
    [["serve", "--keep-sessions", "0"], "--keep-sessions: '0' is out of range; expected an integer ≥ 1"],
    [["serve", "--workdir", aFile], `--workdir: '${aFile}' exists and is not a directory; expected a directory (it is made when missing)`],
    [["serve", missing], `<dir>: '${missing}' does not exist; expected an existing directory`],
    [["run", missing], `<dir>: '${missing}' does not exist; expected an existing directory`],
    [["run", capsule, "--workdir", aFile], `--workdir: '${aFile}' exists and is not a directory; expected a directory (it is made when missing)`],
    [["run", capsule, "--keep-sessions", "x"], "--keep-sessions: 'x' is not an integer; expected an integer ≥ 1"],
    [["run", capsule, "--port", "-1"], "--port: '-1' is out of range; expected an integer from 0 to 65535"],
    [["run", capsule, "--idle-timeout", "0"], "--idle-timeout: '0' is out of range; expected an integer ≥ 1"],
    [["new", "plugin", missing], "<agent|tool|hook|script>: 'plugin' is not one of agent, tool, hook, script"],
    [["build", aFile], `<dir>: '${aFile}' is not a directory; expected an existing directory`],
    [["validate", missing], `<dir>: '${missing}' does not exist; expected an existing directory`],
    [["inspect", scratch], `<file.wasm>: '${scratch}' is not a file; expected an existing file`],
    [["watch", "http://127.0.0.1:9/", "--width", "abc"], "--width: 'abc' is not an integer; expected an integer ≥ 8"],
    [["watch", "http://127.0.0.1:9/", "--width", "3"], "--width: '3' is out of range; expected an integer ≥ 8"],
    [["watch", "http://127.0.0.1:9/", "--last-event-id", "-5"], "--last-event-id: '-5' is out of range; expected an integer ≥ 0"],
    [["watch", "http://127.0.0.1:9/", "--last-event-id", "x"], "--last-event-id: 'x' is not an integer; expected an integer ≥ 0"],
    // serve takes several directories (a fleet): an unknown flag after one is read as another.
    [["serve", capsule, "--bogus"], "<dir>: '--bogus' is an unknown flag, not an existing directory"],
    // @effect/cli's own usage errors, coded alike.
    [["run", capsule, "--bogus"], "Received unknown argument: '--bogus'"],
    [["run"], "Missing argument <dir>"],
    [["send"], "Missing argument <url>"],
    [["stop", "ses_0", "--timeout", "-1"], "--timeout: '-1' is out of range; expected an integer ≥ 0"],
    [["cancel", "http://127.0.0.1:9/"], "Missing argument <task>"],
    [["bogus"], "Invalid subcommand for capsule-runtime - use one of 'serve', 'run', 'ps', 'stop', 'cancel', 'new', 'build', 'inspect', 'validate', 'watch', 'send', 'chat'"]
  ])("%j", async (args, text) => {
    const result = await runCli(args)
    expect(result.err.trim()).toBe(`error[E-CLI-001]: ${text}`)
    expect(result.out).toBe("")
    expect(Exit.isFailure(result.exit)).toBe(true)
    if (Exit.isFailure(result.exit)) {
      expect(Cause.isFailType(result.exit.cause)).toBe(true)
      expect(ValidationError.isValidationError(Cause.squash(result.exit.cause))).toBe(true)
    }
  })
})
