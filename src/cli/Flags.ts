/**
 * Flags and arguments whose bad values are one line naming the flag and what it accepts, with a
 * code (`error[E-CLI-001]: --port: '70000' is out of range; expected an integer from 0 to 65535`),
 * instead of @effect/cli's unnamed "'abc' is not a integer", "Path 'x' must exist" or a listen()
 * stack trace. main.ts turns the refusal into exit status 2. Each takes a description and a
 * value placeholder, so help reads `--port PORT  Port to bind …`, never a bare type name.
 */
import { Args, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"
import { statSync } from "node:fs"

const line = (subject: string, text: string) => `error[E-CLI-001]: ${subject}: ${text}`

const refuse = (name: string, text: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(line(`--${name}`, text))))

export interface IntegerFlag {
  readonly min: number
  readonly max?: number
  readonly description: string
  /** Shown in help as the value's name: `--port PORT`. */
  readonly placeholder: string
}

export const integerFlag = (name: string, spec: IntegerFlag) => {
  const max = spec.max ?? Number.MAX_SAFE_INTEGER
  const range = spec.max === undefined ? `an integer ≥ ${spec.min}` : `an integer from ${spec.min} to ${spec.max}`
  return Options.text(name).pipe(
    Options.withPseudoName(spec.placeholder),
    Options.withDescription(spec.description),
    Options.mapEffect((text) => {
      const value = /^-?[0-9]+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN
      if (Number.isNaN(value)) return refuse(name, `'${text}' is not an integer; expected ${range}`)
      if (value < spec.min || value > max) return refuse(name, `'${text}' is out of range; expected ${range}`)
      return Effect.succeed(value)
    })
  )
}

export const choiceFlag = <A extends string>(name: string, choices: ReadonlyArray<A>, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName(choices.join("|")),
    Options.withDescription(description),
    Options.mapEffect((text) =>
      (choices as ReadonlyArray<string>).includes(text)
        ? Effect.succeed(text as A)
        : refuse(name, `'${text}' is not one of ${choices.join(", ")}`)
    )
  )

/** Free text (an address, a task); nothing to refuse, but a placeholder and a description. */
export const textFlag = (name: string, placeholder: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(placeholder), Options.withDescription(description))

const kindOf = (path: string): "directory" | "file" | "missing" | "other" => {
  const info = statSync(path, { throwIfNoEntry: false })
  if (info === undefined) return "missing"
  return info.isDirectory() ? "directory" : info.isFile() ? "file" : "other"
}

/** A directory that may not exist yet (`--workdir DIR`); an existing file there is refused. */
export const directoryFlag = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("DIR"),
    Options.withDescription(description),
    Options.mapEffect((path) =>
      ["directory", "missing"].includes(kindOf(path)) ? Effect.succeed(path) : refuse(name, `'${path}' exists and is not a directory; expected a directory (it is made when missing)`)
    )
  )

const refuseArg = (name: string, text: string) => Effect.fail(HelpDoc.p(line(`<${name}>`, text)))

/** An existing directory or file argument (`<dir>`, `<file.wasm>`). */
export const existingArg = (name: string, kind: "directory" | "file", description: string) =>
  Args.text({ name }).pipe(
    Args.withDescription(description),
    Args.mapEffect((path) => {
      const found = kindOf(path)
      if (found === kind) return Effect.succeed(path)
      // A repeated argument takes what follows it, an unknown flag included: say which it is.
      if (found === "missing" && path.startsWith("-")) return refuseArg(name, `'${path}' is an unknown flag, not an existing ${kind}`)
      return refuseArg(name, found === "missing" ? `'${path}' does not exist; expected an existing ${kind}` : `'${path}' is not a ${kind}; expected an existing ${kind}`)
    })
  )

export const choiceArg = <A extends string>(name: string, choices: ReadonlyArray<A>, description: string) =>
  Args.text({ name }).pipe(
    Args.withDescription(description),
    Args.mapEffect((text) =>
      (choices as ReadonlyArray<string>).includes(text) ? Effect.succeed(text as A) : refuseArg(name, `'${text}' is not one of ${choices.join(", ")}`)
    )
  )
