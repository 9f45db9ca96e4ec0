/**
 * The command line: `serve`, `run`, `new`, `build`, `inspect`, `validate`, `watch`.
 */
import { Command } from "@effect/cli"
import { buildCommand } from "./cli/Build.js"
import { inspectCommand } from "./cli/Inspect.js"
import { newCommand } from "./cli/New.js"
import { runCommand } from "./cli/Run.js"
import { serveCommand } from "./cli/Serve.js"
import { validateCommand } from "./cli/Validate.js"
import { watchCommand } from "./cli/Watch.js"

export const cli = Command.make("capsule-runtime").pipe(
  Command.withSubcommands([serveCommand, runCommand, newCommand, buildCommand, inspectCommand, validateCommand, watchCommand]),
  Command.run({ name: "capsule-runtime", version: "0.1.0" })
)
