/**
 * The command line: `serve` runs a session of the embedded scripted capsule behind the door.
 * With `--json`, stdout carries exactly one line once the door listens; logs go to stderr.
 */
import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import { inspectCommand } from "./cli/Inspect.js"
import { ScriptedSessionLive } from "./layers/Main.js"
import { SessionIdentity } from "./services/SessionIdentity.js"

const host = Options.text("host").pipe(Options.withDefault("127.0.0.1"), Options.withDescription("Address to bind"))
const port = Options.integer("port").pipe(Options.withDefault(0), Options.withDescription("Port to bind (0: any free port)"))
const acceptance = Options.choice("task-acceptance", ["none", "single", "queue"] as const).pipe(
  Options.withDefault("queue" as const),
  Options.withDescription("none: no task starts; single: one task per session; queue: tasks wait in lanes")
)
const queueDepth = Options.integer("queue-depth").pipe(Options.withDefault(32), Options.withDescription("Most tasks waiting to start"))
const maxActive = Options.integer("max-active").pipe(Options.withDefault(4), Options.withDescription("Most tasks running at once"))
const maxBody = Options.integer("max-body-bytes").pipe(Options.withDefault(1024 * 1024), Options.withDescription("Largest request body"))
const retain = Options.integer("retain-tasks").pipe(Options.withDefault(1000), Options.withDescription("Finished tasks kept for tasks/get"))
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON line when listening"))

const serve = Command.make(
  "serve",
  { host, port, acceptance, queueDepth, maxActive, maxBody, retain, json },
  (options) =>
    Effect.gen(function*() {
      const identity = yield* SessionIdentity
      if (options.json) {
        yield* Console.log(JSON.stringify({ event: "listening", url: identity.url, session_id: identity.sessionId }))
      } else {
        yield* Console.log(`capsule ${identity.capsule.name}@${identity.capsule.version} serving at ${identity.url}`)
        yield* Console.log(`session ${identity.sessionId}; agent card at ${identity.url}.well-known/agent-card.json`)
      }
      yield* Effect.logInfo("door listening").pipe(Effect.annotateLogs({ url: identity.url, session_id: identity.sessionId }))
      return yield* Effect.never
    }).pipe(
      Effect.provide(Layer.fresh(ScriptedSessionLive({
        door: { host: options.host, port: options.port, acceptance: options.acceptance, maxBodyBytes: options.maxBody },
        registry: { queueDepth: options.queueDepth, maxActive: options.maxActive, retainTerminal: options.retain }
      })))
    )
).pipe(Command.withDescription("Serve the embedded scripted capsule over the A2A door"))

export const cli = Command.make("capsule-runtime").pipe(
  Command.withSubcommands([serve, inspectCommand]),
  Command.run({ name: "capsule-runtime", version: "0.1.0" })
)
