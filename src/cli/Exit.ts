/**
 * A command's exit status. The process exits with it once every finalizer has run (main.ts).
 */
import { Effect, Schema } from "effect"

export class ExitStatus extends Schema.TaggedError<ExitStatus>()("ExitStatus", { code: Schema.Int }) {}

export const exitWith = (code: number) => Effect.fail(new ExitStatus({ code }))
