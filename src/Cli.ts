/**
 * The command line: `serve`, `run`, `ps`, `stop`, `cancel`, `new`, `build`, `inspect`, `validate`,
 * `watch`, `send`, `chat`.
 * The top-level help (no command, or `--help` alone) is ./cli/TopHelp.ts's; the rest is
 * @effect/cli's.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { buildCommand } from "./cli/Build.js"
import { cancelCommand } from "./cli/Cancel.js"
import { chatCommand } from "./cli/Chat.js"
import { inspectCommand } from "./cli/Inspect.js"
import { newCommand } from "./cli/New.js"
import { psCommand } from "./cli/Ps.js"
import { runCommand } from "./cli/Run.js"
import { sendCommand } from "./cli/Send.js"
import { serveCommand } from "./cli/Serve.js"
import { stopCommand } from "./cli/Stop.js"
import { asksTopLevelHelp, printTopLevelHelp } from "./cli/TopHelp.js"
import { validateCommand } from "./cli/Validate.js"
import { watchCommand } from "./cli/Watch.js"
import { packageVersion } from "./project/PackageRoot.js"

const program = { name: "capsule-runtime", version: packageVersion() }

const commands = [
  serveCommand,
  runCommand,
  psCommand,
  stopCommand,
  cancelCommand,
  newCommand,
  buildCommand,
  inspectCommand,
  validateCommand,
  watchCommand,
  sendCommand,
  chatCommand
] as const

const run = Command.make(program.name).pipe(Command.withSubcommands(commands), Command.run(program))

export const cli = (args: ReadonlyArray<string>) => Effect.suspend(() => asksTopLevelHelp(args) ? printTopLevelHelp(program, commands) : run(args))
