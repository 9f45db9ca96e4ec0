#!/usr/bin/env node
import { ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { cli } from "./Cli.js"
import { cliConsole } from "./cli/CliConsole.js"
import { TerminalWidth } from "./cli/TopHelp.js"
import { LoggingLive } from "./layers/Logging.js"
import { TelemetryLive } from "./layers/Telemetry.js"

const plain = !(process.stdout.isTTY && process.stderr.isTTY)
// The terminal's width, else $COLUMNS (piped output), else TerminalWidth's 80.
const columns = process.stdout.columns || Number(process.env.COLUMNS) || undefined

cli(process.argv).pipe(
  // A command's chosen exit status ends the process once every finalizer has run.
  Effect.catchTag("ExitStatus", (status) => Effect.sync(() => void (process.exitCode = status.code))),
  // @effect/cli has already printed what was wrong with the command line; 2 is a usage error.
  Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => void (process.exitCode = 2))),
  (effect) => Console.consoleWith((base) => Effect.withConsole(effect, cliConsole(base, plain))),
  (effect) => columns === undefined ? effect : Effect.provideService(effect, TerminalWidth, columns),
  Effect.provide(NodeContext.layer),
  Effect.provide(TelemetryLive()),
  Effect.provide(LoggingLive()),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
