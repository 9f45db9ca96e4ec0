/**
 * The command line: `serve`, `run`, `new`, `build`, `inspect`, `validate`, `watch`, `send`, `chat`.
 */
import { Command } from "@effect/cli"
import { buildCommand } from "./cli/Build.js"
import { chatCommand } from "./cli/Chat.js"
import { inspectCommand } from "./cli/Inspect.js"
import { newCommand } from "./cli/New.js"
import { runCommand } from "./cli/Run.js"
import { sendCommand } from "./cli/Send.js"
import { serveCommand } from "./cli/Serve.js"
import { validateCommand } from "./cli/Validate.js"
import { watchCommand } from "./cli/Watch.js"

export const cli = Command.make("capsule-runtime").pipe(
  Command.withSubcommands([serveCommand, runCommand, newCommand, buildCommand, inspectCommand, validateCommand, watchCommand, sendCommand, chatCommand]),
  Command.run({ name: "capsule-runtime", version: "0.1.0" })
)
