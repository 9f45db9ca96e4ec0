/**
 * The console the command line prints through (src/main.ts). Help and errors are rendered with
 * ANSI styles, which piped into a file are noise, so they are dropped unless both streams are
 * terminals. And @effect/cli heads the help of every text flag and argument with its
 * primitive's generic "A user-defined piece of text."; each of ours has a description of its
 * own (./Flags.ts), so that line only repeats nothing and is dropped too. The command-line
 * errors @effect/cli words itself (an unknown argument or subcommand, a missing one) get the
 * same code as ours (`E-CLI-001`, exit 2 in src/main.ts), so every usage error reads alike.
 */
import type { Console } from "effect"

const ANSI = /\x1b\[[0-9;]*m/g
const GENERIC = /^ *A user-defined piece of text(?: that is confidential)?\.\n\n/gm
const USAGE = /^(?:Received unknown argument|Missing argument|Invalid subcommand|Expected to find option|Missing command name|Expected a key\/value pair)/

const tidy = (plain: boolean) => (args: ReadonlyArray<unknown>) =>
  args.map((arg) => {
    if (typeof arg !== "string") return arg
    const text = arg.replace(GENERIC, "")
    return plain ? text.replace(ANSI, "") : text
  })

const coded = (args: ReadonlyArray<unknown>) =>
  args.map((arg) => (typeof arg === "string" && USAGE.test(arg.replace(ANSI, "")) ? `error[E-CLI-001]: ${arg}` : arg))

export const cliConsole = (base: Console.Console, plain: boolean): Console.Console => {
  const clean = tidy(plain)
  return { ...base, log: (...args) => base.log(...clean(args)), error: (...args) => base.error(...coded(clean(args))) }
}
