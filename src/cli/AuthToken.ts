/**
 * The door's bearer token for `serve`, `run` (the door they open) and `watch`, `send`, `chat`
 * (the door they call): `--auth-token-file PATH` (the first line of a file only its owner can
 * read) or `--auth-token TOKEN` (not both), else `$CAPSULE_RUNTIME_AUTH_TOKEN`. The flag still
 * works but warns: a command line is readable by every user of the host in `/proc/<pid>/cmdline`.
 * Redacted: the token never reaches a log line.
 */
import { Options } from "@effect/cli"
import { Config, Console, Effect, Either, Layer, Option, Redacted } from "effect"
import { Door } from "../index.js"
import { DoorClientLive } from "../layers/DoorClient.js"
import { exitWith } from "./Exit.js"

export const authToken = Options.all({
  flag: Options.redacted("auth-token").pipe(
    Options.withPseudoName("TOKEN"),
    Options.optional,
    Options.withDescription("Bearer token of the door, visible to every local user in /proc (W-RUN-041); prefer --auth-token-file or $CAPSULE_RUNTIME_AUTH_TOKEN")
  ),
  file: Options.text("auth-token-file").pipe(
    Options.withPseudoName("PATH"),
    Options.optional,
    Options.withDescription("A file (mode 0600) whose first line is the door's bearer token (default: $CAPSULE_RUNTIME_AUTH_TOKEN; none: no authentication)")
  )
})

export type AuthTokenFlags = typeof authToken extends Options.Options<infer A> ? A : never

export const argvTokenWarning =
  "warning[W-RUN-041]: --auth-token puts the token on the command line, where every user of this host can read it (/proc/<pid>/cmdline); " +
  "give it with --auth-token-file PATH (mode 0600) or $CAPSULE_RUNTIME_AUTH_TOKEN"

/** The token the flags, the file or the environment give, warning of one given on the command line. */
export const resolveAuthToken = (given: AuthTokenFlags) =>
  Effect.gen(function*() {
    if (Option.isSome(given.flag) && Option.isSome(given.file)) {
      yield* Console.error("error[E-CLI-001]: --auth-token, --auth-token-file: give the token one way, not both")
      return yield* exitWith(2)
    }
    if (Option.isSome(given.file)) {
      const read = Door.readTokenFile(given.file.value)
      if (Either.isLeft(read)) {
        yield* Console.error(`error[${read.left.code}]: ${read.left.message}`)
        return yield* exitWith(1)
      }
      return Option.some(read.right)
    }
    if (Option.isSome(given.flag)) {
      yield* Console.error(argvTokenWarning)
      return Option.some<Redacted.Redacted<string>>(given.flag.value)
    }
    // An empty variable sets no token (as an unset one), rather than a door whose token is "".
    const fromEnv = yield* Config.option(Config.redacted("CAPSULE_RUNTIME_AUTH_TOKEN")).pipe(Effect.orDie)
    return Option.filter(fromEnv, (token) => Redacted.value(token) !== "")
  })

/** The HTTP client of a command that calls a door, sending the token the flags give. */
export const doorClientFor = (given: AuthTokenFlags) =>
  Layer.unwrapEffect(Effect.map(resolveAuthToken(given), (token) => DoorClientLive(Option.getOrUndefined(token))))
