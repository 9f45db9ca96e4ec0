/**
 * `serve [dir]`: a long-lived session behind the door. Without a directory it serves the
 * embedded scripted capsule; with one, that script capsule (one task at a time: its tasks share
 * the workdir) or that agent capsule (../layers/AgentSession.ts). With `--json`, stdout carries exactly one
 * line once the door listens.
 */
import { Args, Command, Options } from "@effect/cli"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Console, Effect, Either, Layer, Option } from "effect"
import { type DoorCredentials, makeDoorCredentials } from "../http/DoorCredentials.js"
import { HostEnvironment } from "../layers/Host.js"
import { ScriptedSessionLive, type SessionOptions } from "../layers/Main.js"
import { scriptSession } from "../layers/ScriptSession.js"
import { loadAnyProject } from "../project/CapsuleProject.js"
import { defaultKeepSessions } from "../records/SessionRetention.js"
import { mintId } from "../services/Ids.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { agentSession } from "../layers/AgentSession.js"
import { bindFailureMessage, type DoorPort, doorPort } from "./DoorPort.js"
import { choiceFlag, directoryFlag, existingArg, integerFlag, textFlag } from "./Flags.js"
import { authToken, resolveAuthToken } from "./AuthToken.js"
import { reloadOnHangup, warnPublicDoor } from "./DoorAccess.js"
import { launching, reportLaunchFailure } from "./LaunchFailure.js"
import { keepNewest } from "./Retention.js"

const dir = existingArg("dir", "directory", "A capsule directory (script or agent); without one, the built-in scripted capsule").pipe(Args.optional)
const host = textFlag("host", "HOST", "Address to bind; without a token keep it on loopback (W-SEC-032) (default 127.0.0.1)").pipe(Options.withDefault("127.0.0.1"))
const tokensFile = textFlag(
  "auth-tokens-file",
  "PATH",
  "Named door tokens with scopes (mode 0600; docs/protocol.md, Authentication), re-read on SIGHUP"
).pipe(Options.optional)
const port = integerFlag("port", {
  min: 0,
  max: 65535,
  placeholder: "PORT",
  description: "Port to bind (0: any free port; default the manifest's network.internal_port, else 0)"
}).pipe(Options.optional)
const acceptance = choiceFlag("task-acceptance", ["none", "single", "queue"] as const, "none: no task starts; single: one task per session; queue: tasks wait in lanes (default queue)").pipe(
  Options.withDefault("queue" as const)
)
const queueDepth = integerFlag("queue-depth", { min: 0, placeholder: "N", description: "Most tasks waiting to start (default 32)" }).pipe(Options.withDefault(32))
const maxActive = integerFlag("max-active", { min: 1, placeholder: "N", description: "Most tasks running at once; a script capsule runs one (default 4)" }).pipe(Options.withDefault(4))
const maxBody = integerFlag("max-body-bytes", { min: 1, placeholder: "BYTES", description: "Largest request body (default 1048576)" }).pipe(Options.withDefault(1024 * 1024))
const retain = integerFlag("retain-tasks", { min: 0, placeholder: "N", description: "Finished tasks kept for tasks/get (default 1000)" }).pipe(Options.withDefault(1000))
const retainBytes = integerFlag("retain-bytes", {
  min: 0,
  placeholder: "BYTES",
  description: "Bytes of finished tasks kept for tasks/get (their text); the oldest are forgotten first (default 268435456)"
}).pipe(Options.withDefault(256 * 1024 * 1024))
const replayBytes = integerFlag("replay-bytes", {
  min: 0,
  placeholder: "BYTES",
  description: "Bytes of stream frames kept for Last-Event-ID replay, besides the 512-frame count (default 16777216)"
}).pipe(Options.withDefault(16 * 1024 * 1024))
const maxWatchers = integerFlag("max-watchers", {
  min: 1,
  placeholder: "N",
  description: "Most streams open at once (stream/watch, message/stream, tasks/resubscribe); more are refused (default 64)"
}).pipe(Options.withDefault(64))
const blockingTimeout = integerFlag("blocking-timeout", {
  min: 1,
  placeholder: "SECS",
  description: "Longest a blocking message/send waits; then it answers the task as it stands, saying why (default 20)"
}).pipe(Options.withDefault(20))
const workdir = directoryFlag("workdir", "Workdir of a capsule from a directory (default <dir>/workdir/<session>)").pipe(Options.optional)
const keepSessions = integerFlag("keep-sessions", {
  min: 1,
  placeholder: "N",
  description: `Session workdirs kept under <dir>/workdir/ without --workdir, this one included; older ones are deleted at start (default ${defaultKeepSessions})`
}).pipe(Options.withDefault(defaultKeepSessions))
const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON line when listening"))

const announce = (json: boolean, extra: Record<string, string>, credentials: DoorCredentials) =>
  Effect.gen(function*() {
    const identity = yield* SessionIdentity
    if (credentials.tokensFile !== undefined) yield* reloadOnHangup(credentials)
    yield* warnPublicDoor
    if (json) {
      yield* Console.log(JSON.stringify({ event: "listening", url: identity.url, session_id: identity.sessionId, ...extra }))
    } else {
      yield* Console.log(`capsule ${identity.capsule.name}@${identity.capsule.version} serving at ${identity.url}`)
      yield* Console.log(`session ${identity.sessionId}; agent card at ${identity.url}.well-known/agent-card.json`)
      yield* Console.log(`follow it with: node dist/main.js watch ${identity.url}`)
    }
    yield* Effect.logInfo("door listening").pipe(Effect.annotateLogs({ url: identity.url, session_id: identity.sessionId }))
    return yield* Effect.never
  }).pipe(Effect.scoped)

export const serveCommand = Command.make(
  "serve",
  { dir, host, port, acceptance, queueDepth, maxActive, maxBody, retain, retainBytes, replayBytes, maxWatchers, blockingTimeout, workdir, keepSessions, json, authToken, tokensFile },
  (options) => Effect.gen(function*() {
    const token = Option.getOrUndefined(yield* resolveAuthToken(options.authToken))
    const made = makeDoorCredentials({ operatorToken: token, tokensFile: Option.getOrUndefined(options.tokensFile) })
    if (Either.isLeft(made)) return yield* reportLaunchFailure(made.left.code, made.left.message, options.json)
    const credentials = made.right
    const session: SessionOptions = {
      door: {
        host: options.host,
        port: Option.getOrElse(options.port, () => 0),
        acceptance: options.acceptance,
        maxBodyBytes: options.maxBody,
        maxWatchers: options.maxWatchers,
        blockingTimeoutMs: options.blockingTimeout * 1000,
        authToken: token,
        credentials
      },
      registry: { queueDepth: options.queueDepth, maxActive: options.maxActive, retainTerminal: options.retain, retainBytes: options.retainBytes },
      eventLog: { capacityBytes: options.replayBytes }
    }
    const bindFailure = (chosen: DoorPort) => (error: ServeError) =>
      reportLaunchFailure("E-RUN-010", bindFailureMessage(options.host, chosen, error), options.json)
    if (Option.isNone(options.dir)) {
      return yield* announce(options.json, {}, credentials).pipe(
        Effect.provide(Layer.fresh(ScriptedSessionLive(session))),
        Effect.catchTag("ServeError", bindFailure(doorPort(options.port, undefined)))
      )
    }
    const directory = options.dir.value
    return yield* Effect.gen(function*() {
      const hostEnv = yield* HostEnvironment
      const loaded = yield* loadAnyProject(directory, hostEnv.env)
      const chosen = doorPort(options.port, loaded.project.manifest.network)
      const sessionId = mintId("ses")
      if (Option.isNone(options.workdir)) yield* keepNewest(loaded.project.directory, options.keepSessions, sessionId)
      if (loaded.kind === "agent") {
        const agent = yield* agentSession(loaded.project, {
          sessionId,
          host: options.host,
          port: chosen.port,
          maxBodyBytes: options.maxBody,
          retainTerminal: options.retain,
          limits: {
            retainBytes: options.retainBytes,
            replayBytes: options.replayBytes,
            maxWatchers: options.maxWatchers,
            blockingTimeoutMs: options.blockingTimeout * 1000
          },
          workdir: Option.getOrUndefined(options.workdir),
          hostEnv: hostEnv.env,
          authToken: token,
          credentials
        })
        for (const warning of agent.warnings) yield* Console.error(warning)
        return yield* announce(options.json, { workdir: agent.workdir, records: agent.records }, credentials).pipe(
          Effect.provide(Layer.fresh(agent.layer)),
          Effect.catchTags({
            ServeError: bindFailure(chosen),
            TraceWriteFailed: (error) => reportLaunchFailure(error.code, error.message, options.json, agent.workdir)
          })
        )
      }
      const script = yield* scriptSession(loaded.project, {
        ...session,
        door: { ...session.door, port: chosen.port },
        sessionId,
        workdir: Option.getOrUndefined(options.workdir),
        hostEnv: hostEnv.env
      })
      for (const warning of script.warnings) yield* Console.error(warning)
      return yield* announce(options.json, { workdir: script.workdir, records: script.records }, credentials).pipe(
        Effect.provide(Layer.fresh(script.layer)),
        Effect.catchTags({
          ServeError: bindFailure(chosen),
          TraceWriteFailed: (error) => reportLaunchFailure(error.code, error.message, options.json, script.workdir)
        })
      )
    }).pipe((effect) => launching(effect, options.json, 1))
  })
).pipe(Command.withDescription("Serve a capsule over the A2A door (the embedded scripted capsule without a directory)"))
