/**
 * `run <dir>`: runs a script capsule's `run()` once, like the reference's `mur run`: prints
 * `status:  ok` and `workdir: <path>` (exit 0), or the error code and message (exit 1). With
 * `--json`, the last stdout line is the `exit` event. An agent capsule runs one task with its
 * door listening (../layers/RunOnce.ts); what it says is here (./RunPrinter.ts).
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { defaultKeepSessions, loadDirectory } from "../layers/Directory.js"
import { agentRun, defaultIdleTimeoutSecs, scriptRun } from "../layers/RunOnce.js"
import { doorPort } from "./DoorPort.js"
import { exitWith } from "./Exit.js"
import { runPrinter } from "./RunPrinter.js"
import { directoryFlag, existingArg, integerFlag, textFlag } from "./Flags.js"
import { authToken, resolveAuthToken } from "./AuthToken.js"
import { launching, reportLaunchFailure } from "./LaunchFailure.js"

const dir = existingArg("dir", "directory", "The capsule directory (holding murmur.yaml)")
const workdir = directoryFlag("workdir", "Workdir (default <dir>/workdir/<session>)").pipe(Options.optional)
const keepSessions = integerFlag("keep-sessions", {
  min: 1,
  placeholder: "N",
  description: `Session workdirs kept under <dir>/workdir/ without --workdir, this one included; older ones are deleted at start (default ${defaultKeepSessions})`
}).pipe(Options.withDefault(defaultKeepSessions))
const json = Options.boolean("json").pipe(Options.withDescription("End with one JSON exit event on stdout"))
const task = textFlag("task", "TEXT", "An agent capsule's task (else <workdir>/task.md, else the first A2A task)").pipe(Options.optional)
const host = textFlag("host", "HOST", "Address an agent capsule's door binds (default 127.0.0.1)").pipe(Options.withDefault("127.0.0.1"))
const port = integerFlag("port", {
  min: 0,
  max: 65535,
  placeholder: "PORT",
  description: "Port an agent capsule's door binds (0: any free port; default the manifest's network.internal_port, else 0)"
}).pipe(Options.optional)
const idleTimeout = integerFlag("idle-timeout", {
  min: 1,
  placeholder: "SECONDS",
  description: `Seconds an agent capsule waits for its first A2A task (default ${defaultIdleTimeoutSecs})`
}).pipe(Options.withDefault(defaultIdleTimeoutSecs))

export const runCommand = Command.make("run", { dir, workdir, keepSessions, json, task, host, port, idleTimeout, authToken }, (options) =>
  Effect.gen(function*() {
    const { hostEnv, loaded, notes, sessionId } = yield* loadDirectory(options.dir, {
      workdir: Option.getOrUndefined(options.workdir),
      keepSessions: options.keepSessions
    })
    for (const note of notes) yield* Console.error(note)
    if (loaded.kind === "agent") {
      const chosen = doorPort(options.port, loaded.project.manifest.network)
      const task = yield* agentRun(loaded.project, {
        sessionId,
        host: options.host,
        port: chosen.port,
        maxBodyBytes: 1024 * 1024,
        retainTerminal: 1000,
        workdir: Option.getOrUndefined(options.workdir),
        hostEnv,
        authToken: Option.getOrUndefined(yield* resolveAuthToken(options.authToken)),
        task: Option.getOrUndefined(options.task),
        idleTimeoutSecs: options.idleTimeout
      }, runPrinter({ json: options.json, host: options.host, port: chosen })).pipe(
        Effect.catchTag("RunFailure", (failure) => reportLaunchFailure(failure.code, failure.message, options.json, failure.workdir))
      )
      if (task.state !== "completed") return yield* exitWith(1)
      return
    }
    const ran = yield* scriptRun(loaded.project, { sessionId, workdir: Option.getOrUndefined(options.workdir), hostEnv }, Console.error).pipe(
      Effect.catchTag("RunFailure", (failure) => reportLaunchFailure(failure.code, failure.message, options.json, failure.workdir, failure.stderr))
    )
    if (options.json) yield* Console.log(JSON.stringify({ event: "exit", status: "ok", workdir: ran.workdir, records: ran.records }))
    else yield* Console.log(`status:  ok\nworkdir: ${ran.workdir}`)
  }).pipe((effect) => launching(effect, options.json))).pipe(Command.withDescription("Run a capsule once: a script capsule's run(), or one agent task"))
