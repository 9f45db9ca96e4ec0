/**
 * The machine's own settings, for every capsule run on it: `$MURMUR_HOME/config.yaml`. Today it
 * holds one, the daily token budget shared by all sessions on the machine:
 *
 * ```yaml
 * spend:
 *   machine_tokens_per_day: 2000000
 * ```
 *
 * A missing file is no settings. A file that does not parse, a key this runtime does not know or a
 * value out of range refuses the launch (E-RUN-010) naming the file, rather than running without
 * the budget its owner wrote down.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Either, ParseResult, Schema } from "effect"
import { parse } from "yaml"
import { ProjectError } from "./ProjectError.js"

const Document = Schema.Struct({
  spend: Schema.optional(Schema.Struct({
    machine_tokens_per_day: Schema.optional(Schema.Int.pipe(Schema.positive()))
  }))
})

export interface MachineConfig {
  /** Tokens a UTC day for all sessions on this machine; absent: no budget. */
  readonly machineTokensPerDay: number | undefined
}

export const machineConfigPath = (murmurHome: string) => join(murmurHome, "config.yaml")

const refused = (path: string, detail: string) => new ProjectError({ code: "E-RUN-010", message: `${path}: ${detail}` })

export const readMachineConfig = (murmurHome: string): Effect.Effect<MachineConfig, ProjectError> =>
  Effect.suspend(() => {
    const path = machineConfigPath(murmurHome)
    if (!existsSync(path)) return Effect.succeed({ machineTokensPerDay: undefined })
    let raw: unknown
    try {
      raw = parse(readFileSync(path, "utf8")) ?? {}
    } catch (error) {
      return Effect.fail(refused(path, `not valid YAML: ${(error as Error).message.split("\n", 1)[0]}`))
    }
    const decoded = Schema.decodeUnknownEither(Document, { onExcessProperty: "error" })(raw)
    if (Either.isLeft(decoded)) return Effect.fail(refused(path, ParseResult.TreeFormatter.formatErrorSync(decoded.left)))
    return Effect.succeed({ machineTokensPerDay: decoded.right.spend?.machine_tokens_per_day })
  })
