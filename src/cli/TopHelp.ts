/**
 * The top-level help (`capsule-runtime`, `--help` or `-h` alone): the commands first, each with
 * its arguments and the first sentence of its own description, then the few options every
 * command takes, wrapped at the terminal's width (`TerminalWidth`, which src/main.ts sets from
 * the terminal or `$COLUMNS`; 80 otherwise). @effect/cli's own listed its generic flags first
 * and padded every command to its longest usage line, every option included. A command's own
 * `--help` is still @effect/cli's.
 */
import { CliConfig, Command, type HelpDoc } from "@effect/cli"
import type { Span } from "@effect/cli/HelpDoc/Span"
import { Console, Context, Effect, HashSet } from "effect"

/** Columns the help is wrapped to. */
export class TerminalWidth extends Context.Reference<TerminalWidth>()("capsule-runtime/cli/TopHelp/TerminalWidth", {
  defaultValue: () => 80
}) {}

/** Narrower than this, a command's summary goes under it instead of beside it. */
const MIN_SUMMARY_COLUMNS = 30

/** The widest a command's synopsis makes the first column. */
const MAX_TERM_COLUMNS = 30

/** The options @effect/cli gives every command, in our words. */
const BUILT_IN: ReadonlyArray<readonly [string, string]> = [
  ["-h, --help", "This help; <command> --help lists a command's own options, with their defaults"],
  ["--version", "Print the version"],
  ["--log-level LEVEL", "Least level logged: all, trace, debug, info, warning, error, fatal or none"],
  ["--completions SHELL", "Print a completion script for sh, bash, fish or zsh"],
  ["--wizard", "Build a command line by answering questions"]
]

const spanText = (span: Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

const blocksOf = (doc: HelpDoc.HelpDoc): ReadonlyArray<HelpDoc.HelpDoc> => doc._tag === "Sequence" ? [...blocksOf(doc.left), ...blocksOf(doc.right)] : [doc]

/** A command's name, its arguments and whether it has options of its own, and its description's first sentence. */
const entryOf = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>): readonly [string, string] => {
  const blocks = blocksOf(Command.getHelp(command, CliConfig.defaultConfig))
  let section = ""
  let description = ""
  const args: Array<string> = []
  let options = 0
  for (const block of blocks) {
    if (block._tag === "Header") section = spanText(block.value)
    else if (block._tag === "Paragraph" && section === "DESCRIPTION" && description === "") description = spanText(block.value)
    else if (block._tag === "DescriptionList") {
      const names = block.definitions.map(([span]) => spanText(span))
      if (section === "ARGUMENTS") args.push(...names)
      if (section === "OPTIONS") options += names.length
    }
  }
  const [name] = HashSet.toValues(Command.getNames(command))
  const summary = description.split(/\n| Example: /)[0]!.trim()
  return [[name, ...args, ...(options > BUILT_IN.length ? ["[options]"] : [])].join(" "), summary]
}

/** `text` in lines of at most `width` columns, broken between words (a longer word keeps a line of its own). */
export const wrap = (text: string, width: number): ReadonlyArray<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((word) => word !== "")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line === "" ? word : `${line} ${word}`
  }
  return line === "" ? lines : [...lines, line]
}

/**
 * Two columns when the terms leave room for the summaries, else each summary under its term. A
 * term longer than `MAX_TERM_COLUMNS` does not widen the first column: its summary starts on the
 * next line, in the second.
 */
const table = (rows: ReadonlyArray<readonly [string, string]>, width: number): ReadonlyArray<string> => {
  const column = 2 + Math.min(MAX_TERM_COLUMNS, Math.max(...rows.map(([term]) => term.length))) + 2
  const beside = width - column >= MIN_SUMMARY_COLUMNS
  return rows.flatMap(([term, summary]) => {
    if (!beside) return [`  ${term}`, ...wrap(summary, width - 6).map((line) => `      ${line}`)]
    const lines = wrap(summary, width - column).map((line) => " ".repeat(column) + line)
    if (term.length > column - 4) return [`  ${term}`, ...lines]
    const [first = "", ...rest] = lines
    return [`  ${term.padEnd(column - 2)}${first.trimStart()}`.trimEnd(), ...rest]
  })
}

/** The help text for `commands`, at `width` columns. */
export const topLevelHelp = (
  program: { readonly name: string; readonly version: string },
  commands: ReadonlyArray<Command.Command<any, any, any, any>>,
  width: number
): string =>
  [
    `${program.name} ${program.version}`,
    "",
    ...wrap("Runs Murmur capsules (WebAssembly agents) in isolation and serves each over an A2A door.", width),
    "",
    "USAGE",
    `  ${program.name} <command> [arguments] [options]`,
    "",
    "COMMANDS",
    ...table(commands.map(entryOf), width),
    "",
    "OPTIONS",
    ...table(BUILT_IN, width)
  ].join("\n")

/** The command line asks for the top-level help: nothing, or `--help` / `-h` alone. */
export const asksTopLevelHelp = (args: ReadonlyArray<string>): boolean => {
  const given = args.slice(2)
  return given.length === 0 || (given.length === 1 && (given[0] === "--help" || given[0] === "-h"))
}

/** Prints the top-level help at the terminal's width. */
export const printTopLevelHelp = (program: { readonly name: string; readonly version: string }, commands: ReadonlyArray<Command.Command<any, any, any, any>>) =>
  Effect.flatMap(TerminalWidth, (width) => Console.log(topLevelHelp(program, commands, width)))
