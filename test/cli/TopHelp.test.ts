/**
 * Issue 23 item 9, through `node dist/main.js`: the top-level help (no command, `--help` or `-h`
 * alone) lists the commands first, each with its arguments and its own description's first
 * sentence, then the options every command takes; every line fits the terminal's width
 * (`$COLUMNS` when piped, else 80), with no padding to the longest usage line.
 * (`npm run build` first.)
 */
import { describe, expect, it } from "vitest"
import { wrap } from "../../src/cli/TopHelp.js"
import { runCli } from "../lib/CapsuleDirs.js"

const COMMANDS = ["serve", "run", "ps", "stop", "cancel", "new", "build", "inspect", "validate", "watch", "send", "chat"]

const widest = (text: string) => Math.max(...text.split("\n").map((line) => line.length))

describe("top-level help", () => {
  it("commands first, then the generic options, within 80 columns; the same for no command, --help and -h", async () => {
    const [bare, long, short] = await Promise.all([runCli([]), runCli(["--help"]), runCli(["-h"])])
    for (const result of [bare, long, short]) expect(result.code, result.stderr).toBe(0)
    expect(long.stdout).toBe(bare.stdout)
    expect(short.stdout).toBe(bare.stdout)
    const help = bare.stdout
    expect(help.startsWith("capsule-runtime 0.1.0\n")).toBe(true)
    expect(help.indexOf("COMMANDS\n")).toBeGreaterThan(0)
    expect(help.indexOf("COMMANDS\n")).toBeLessThan(help.indexOf("OPTIONS\n"))
    expect(help.indexOf("OPTIONS\n")).toBeLessThan(help.indexOf("--log-level"))
    const listed = help.slice(help.indexOf("COMMANDS\n"), help.indexOf("OPTIONS\n")).split("\n").filter((line) => /^ {2}\S/.test(line))
    expect(listed.map((line) => line.trim().split(" ")[0])).toEqual(COMMANDS)
    expect(listed[0]).toMatch(/^ {2}serve <dir>\.\.\. \[options\] +Serve a capsule over the A2A door/)
    expect(help).toMatch(/^ {2}new <agent\|tool\|hook\|script> <dir> \[options\]\n {34}Create a capsule or tool from a/m)
    // A synopsis longer than the first column gets its summary on the next line, not a wider column.
    expect(help).toMatch(/^ {2}cancel <url\|session> <task> \[options\]\n {34}Cancel one task of a session/m)
    // Only the first sentence of a description: its example stays in the command's own help.
    expect(help).not.toContain("Example:")
    expect(widest(help)).toBeLessThanOrEqual(80)
    expect(help).not.toMatch(/ {8,}\S.* {8,}/)
  })

  it("wraps at $COLUMNS; too narrow for two columns, each summary goes under its command", async () => {
    const narrow = await runCli(["--help"], { COLUMNS: "50" })
    expect(narrow.code).toBe(0)
    expect(widest(narrow.stdout)).toBeLessThanOrEqual(50)
    expect(narrow.stdout).toContain("  serve <dir>... [options]\n      Serve a capsule over the A2A door")
    const wide = await runCli(["--help"], { COLUMNS: "200" })
    expect(wide.stdout).toMatch(/^ {2}serve <dir>\.\.\. \[options\] +Serve a capsule over the A2A door \(the built-in echo capsule without a directory\)$/m)
  })

  it("a command's own --help is unchanged: its options with their placeholders", async () => {
    const serve = await runCli(["serve", "--help"])
    expect(serve.code).toBe(0)
    expect(serve.stdout).toContain("--port PORT")
  })

  it("wrap breaks between words and keeps a longer word whole", () => {
    expect(wrap("one two three four", 9)).toEqual(["one two", "three", "four"])
    expect(wrap("a  verylongword b", 4)).toEqual(["a", "verylongword", "b"])
    expect(wrap("", 10)).toEqual([])
  })
})
