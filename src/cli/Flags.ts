/**
 * Value flags whose bad values are one line naming the flag and what it accepts, with a code
 * (`error[E-CLI-001]: --port: '70000' is out of range; expected an integer from 0 to 65535`),
 * instead of @effect/cli's unnamed "'abc' is not a integer" or a listen() stack trace.
 * main.ts turns the refusal into exit status 2.
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"

const refuse = (name: string, text: string) =>
  Effect.fail(ValidationError.invalidValue(HelpDoc.p(`error[E-CLI-001]: --${name}: ${text}`)))

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
