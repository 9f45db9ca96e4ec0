/**
 * The console the command line prints through (src/main.ts). Help and errors are rendered with
 * ANSI styles, which piped into a file are noise, so they are dropped unless both streams are
 * terminals. And @effect/cli heads the help of every text flag and argument with its
 * primitive's generic "A user-defined piece of text."; each of ours has a description of its
 * own (./Flags.ts), so that line only repeats nothing and is dropped too.
 */
import type { Console } from "effect"

const ANSI = /\x1b\[[0-9;]*m/g
const GENERIC = /^ *A user-defined piece of text(?: that is confidential)?\.\n\n/gm

const tidy = (plain: boolean) => (args: ReadonlyArray<unknown>) =>
  args.map((arg) => {
    if (typeof arg !== "string") return arg
    const text = arg.replace(GENERIC, "")
    return plain ? text.replace(ANSI, "") : text
  })

export const cliConsole = (base: Console.Console, plain: boolean): Console.Console => {
  const clean = tidy(plain)
  return { ...base, log: (...args) => base.log(...clean(args)), error: (...args) => base.error(...clean(args)) }
}
