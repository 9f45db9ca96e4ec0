#!/usr/bin/env node
import { ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { cli } from "./Cli.js"
import { LoggingLive } from "./layers/Logging.js"

cli(process.argv).pipe(
  // A command's chosen exit status ends the process once every finalizer has run.
  Effect.catchTag("ExitStatus", (status) => Effect.sync(() => void (process.exitCode = status.code))),
  // @effect/cli has already printed what was wrong with the command line.
  Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => void (process.exitCode = 1))),
  Effect.provide(NodeContext.layer),
  Effect.provide(LoggingLive()),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
