/**
 * The small checks the params decoders share (./Params1.ts, ./PushParams.ts, ./Attachments.ts,
 * ./RestRoute.ts): a JSON object, a refusal as `InvalidParams`, and an optional one-line string.
 */
import { Either } from "effect"
import { InvalidParams } from "./DoorErrors.js"

export type JsonObject = Record<string, unknown>

export const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

export const bad = (detail: string) => Either.left(new InvalidParams({ detail }))

/**
 * An optional string field: absent, `null` or `""` is `undefined`; otherwise a string of at most
 * `max` characters on one line (it may become a header value or a file name, where a line break
 * would start something else).
 */
export const optionalText = (value: unknown, name: string, max: number): Either.Either<string | undefined, InvalidParams> => {
  if (value === undefined || value === null || value === "") return Either.right(undefined)
  if (typeof value !== "string") return bad(`${name} must be a string`)
  if (value.length > max) return bad(`${name} is longer than ${max} characters`)
  if (/[\r\n\0]/.test(value)) return bad(`${name} must not contain line breaks`)
  return Either.right(value)
}
