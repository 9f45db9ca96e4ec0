/**
 * `--auth-token TOKEN`, else `CAPSULE_RUNTIME_AUTH_TOKEN`: the door's bearer token (`serve`
 * requires it of every request but the agent card; `watch` sends it). Redacted: it never
 * reaches a log line.
 */
import { Options } from "@effect/cli"
import { Config } from "effect"

export const authToken = Options.redacted("auth-token").pipe(
  Options.withPseudoName("TOKEN"),
  Options.withFallbackConfig(Config.redacted("CAPSULE_RUNTIME_AUTH_TOKEN")),
  Options.optional,
  Options.withDescription("Bearer token of the door (default: $CAPSULE_RUNTIME_AUTH_TOKEN; none: no authentication)")
)
