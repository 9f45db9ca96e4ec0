#!/usr/bin/env node
import { ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { cli } from "./Cli.js"
import { LoggingLive } from "./layers/Logging.js"
import { TelemetryLive } from "./layers/Telemetry.js"

// Help and errors are rendered with ANSI styles; piped into a file they are noise.
const ANSI = /\x1b\[[0-9;]*m/g
const plain = (args: ReadonlyArray<unknown>) => args.map((arg) => typeof arg === "string" ? arg.replace(ANSI, "") : arg)
const consoleFor = (base: Console.Console): Console.Console =>
  process.stdout.isTTY && process.stderr.isTTY
    ? base
    : { ...base, log: (...args) => base.log(...plain(args)), error: (...args) => base.error(...plain(args)) }

cli(process.argv).pipe(
  // A command's chosen exit status ends the process once every finalizer has run.
  Effect.catchTag("ExitStatus", (status) => Effect.sync(() => void (process.exitCode = status.code))),
  // @effect/cli has already printed what was wrong with the command line; 2 is a usage error.
  Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => void (process.exitCode = 2))),
  (effect) => Console.consoleWith((base) => Effect.withConsole(effect, consoleFor(base))),
  Effect.provide(NodeContext.layer),
  Effect.provide(TelemetryLive()),
  Effect.provide(LoggingLive()),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
