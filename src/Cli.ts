/**
 * The command line: `serve`, `run`, `inspect` and `validate`.
 */
import { Command } from "@effect/cli"
import { inspectCommand } from "./cli/Inspect.js"
import { runCommand } from "./cli/Run.js"
import { serveCommand } from "./cli/Serve.js"
import { validateCommand } from "./cli/Validate.js"

export const cli = Command.make("capsule-runtime").pipe(
  Command.withSubcommands([serveCommand, runCommand, inspectCommand, validateCommand]),
  Command.run({ name: "capsule-runtime", version: "0.1.0" })
)
