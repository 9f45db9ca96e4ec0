/**
 * `run <dir>`: runs a script capsule's `run()` once, like the reference's `mur run`: prints
 * `status:  ok` and `workdir: <path>` (exit 0), or the error code and message (exit 1). With
 * `--json`, the last stdout line is the `exit` event.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { HostEnvironment } from "../layers/Host.js"
import { loadProject } from "../sandbox/CapsuleProject.js"
import { prepareScript, runScript } from "../sandbox/ScriptLaunch.js"
import { mintId } from "../services/Ids.js"
import { launching, reportLaunchFailure } from "./LaunchFailure.js"

const dir = Args.directory({ name: "dir", exists: "yes" }).pipe(Args.withDescription("The capsule directory (holding murmur.yaml)"))
const workdir = Options.directory("workdir").pipe(Options.withDescription("Workdir (default <dir>/workdir/<session>)"), Options.optional)
const json = Options.boolean("json").pipe(Options.withDescription("End with one JSON exit event on stdout"))

export const runCommand = Command.make("run", { dir, workdir, json }, (options) =>
  Effect.gen(function*() {
    const hostEnv = yield* HostEnvironment
    const project = yield* loadProject(options.dir, hostEnv.env)
    const prepared = yield* prepareScript(project, { sessionId: mintId("ses"), workdir: Option.getOrUndefined(options.workdir), hostEnv: hostEnv.env })
    for (const warning of prepared.warnings) yield* Console.error(warning)
    const outcome = yield* runScript(prepared, {
      inTask: false,
      trust: "untrusted",
      host: {
        text: () => Effect.void,
        thinking: () => Effect.void,
        requestInput: () => Effect.fail({ message: "request-input is not available outside an A2A task context" })
      }
    }).pipe(Effect.either)
    if (outcome._tag === "Left") {
      return yield* reportLaunchFailure("E-RUN-001", outcome.left.message, options.json, prepared.workdir, outcome.left.stderr)
    }
    if (options.json) yield* Console.log(JSON.stringify({ event: "exit", status: "ok", workdir: prepared.workdir }))
    else yield* Console.log(`status:  ok\nworkdir: ${prepared.workdir}`)
  }).pipe((effect) => launching(effect, options.json))).pipe(Command.withDescription("Run a script capsule once"))
