/**
 * `serve [dir]`: a long-lived session behind the door. Without a directory it serves the
 * built-in echo capsule; with one, that script or agent capsule (../layers/Directory.ts). With
 * `--json`, stdout carries exactly one line once the door listens.
 */
import { Args, Command, Options } from "@effect/cli"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Console, Effect, Either, Layer, Option } from "effect"
import { CapsuleRuntime, Door, DoorAddress, SessionIdentity } from "../index.js"
import { prepareDirectory } from "../layers/Directory.js"
import { HostEnvironment } from "../layers/Host.js"
import { registerSession } from "../layers/LocalSessions.js"
import { serveFleet } from "./ServeFleet.js"
import { withStore } from "./StoreFlag.js"
import { parseStore, type StoreSpec } from "../layers/Store.js"
import { reloadOnHangup, warnPublicDoor } from "./DoorAccess.js"
import { bindFailureMessage, type DoorPort, doorPort, grpcBindFailureMessage } from "./DoorPort.js"
import { existingArg, integerFlag, textFlag } from "./Flags.js"
import { resolveAuthToken } from "./AuthToken.js"
import * as Flags from "./SessionFlags.js"

const dir = existingArg("dir", "directory", "A capsule directory (script or agent); without one, the built-in echo capsule; with --cluster, every directory the fleet serves").pipe(Args.repeated)
const cluster = textFlag("cluster", "URL", "Run as one runner of a fleet whose sessions, tasks and cluster state are in this PostgreSQL database (postgres://…)").pipe(Options.optional)
const runnerAddress = textFlag("runner-address", "HOST:PORT", "With --cluster: where the other runners reach this one (it listens there)").pipe(Options.optional)
const publicUrl = textFlag("public-url", "URL", "With --cluster: the base URL clients reach the fleet at; the cards say <url>s/<session>/ (default this runner's door)").pipe(Options.optional)
const runnerCapacity = integerFlag("runner-capacity", {
  min: 1,
  placeholder: "N",
  description: "With --cluster: the most tasks this runner runs at once across all its sessions (default 64)"
}).pipe(Options.withDefault(64))
const sessions = integerFlag("sessions", { min: 1, placeholder: "N", description: "With --cluster: sessions per capsule directory (default 1)" }).pipe(Options.withDefault(1))
const { authToken, cardSigningKey, cardSigningKid, grpcPort, host, json, keepSessions, port, pushAllow, store, tokensFile, workdir, acceptance } = Flags

/** Serves `session` until interrupted, after the listening line(s); listed for `ps` meanwhile. */
const announce = <E, R>(
  session: Layer.Layer<CapsuleRuntime.Session | Door.DoorConfig | DoorAddress, E, R>,
  json: boolean,
  extra: Record<string, string>,
  credentials: Door.Credentials,
  directory: string | undefined
) =>
  Effect.gen(function*() {
    const identity = yield* SessionIdentity
    const { grpc } = yield* DoorAddress
    if (credentials.tokensFile !== undefined) yield* reloadOnHangup(credentials)
    yield* warnPublicDoor
    yield* registerSession({ command: "serve", directory })
    if (json) {
      yield* Console.log(JSON.stringify({ event: "listening", url: identity.url, ...(grpc === undefined ? {} : { grpc }), session_id: identity.sessionId, ...extra }))
    } else {
      yield* Console.log(`capsule ${identity.capsule.name}@${identity.capsule.version} serving at ${identity.url}`)
      if (grpc !== undefined) yield* Console.log(`A2A 1.0 over gRPC at ${grpc} (lf.a2a.v1.A2AService)`)
      yield* Console.log(`session ${identity.sessionId}; agent card at ${identity.url}.well-known/agent-card.json`)
      yield* Console.log(`follow it with: node dist/main.js watch ${identity.url}`)
      // `watch`, `send` and `chat` need the token too; say where they take it (never on argv).
      if (!credentials.open) yield* Console.log("the door wants a bearer token: give the client commands --auth-token-file PATH or $CAPSULE_RUNTIME_AUTH_TOKEN")
    }
    yield* Effect.logInfo("door listening").pipe(Effect.annotateLogs({ url: identity.url, ...(grpc === undefined ? {} : { grpc }), session_id: identity.sessionId }))
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(Layer.fresh(session)))

export const serveCommand = Command.make("serve", {
  dir,
  host,
  port,
  grpcPort,
  acceptance,
  ...Flags.limits,
  workdir,
  keepSessions,
  json,
  authToken,
  tokensFile,
  pushAllow,
  cardSigningKey,
  cardSigningKid,
  store,
  cluster,
  runnerAddress,
  publicUrl,
  sessions,
  runnerCapacity
}, (options) =>
  Effect.gen(function*() {
    const token = Option.getOrUndefined(yield* resolveAuthToken(options.authToken))
    const made = Door.makeCredentials({ operatorToken: token, tokensFile: Option.getOrUndefined(options.tokensFile) })
    if (Either.isLeft(made)) return yield* Flags.reportLaunchFailure(made.left.code, made.left.message, options.json)
    const credentials = made.right
    const signer = Option.isNone(options.cardSigningKey)
      ? Either.right(undefined)
      : Door.readCardSigner(options.cardSigningKey.value, Option.getOrUndefined(options.cardSigningKid))
    if (Either.isLeft(signer)) return yield* Flags.reportLaunchFailure(signer.left.code, signer.left.message, options.json)
    const door = {
      host: options.host,
      acceptance: options.acceptance,
      maxBodyBytes: options.maxBody,
      maxWatchers: options.maxWatchers,
      blockingTimeoutMs: options.blockingTimeout * 1000,
      authToken: token,
      credentials,
      pushAllow: options.pushAllow,
      cardSigner: signer.right
    }
    const session: CapsuleRuntime.Options = {
      tasks: { queueDepth: options.queueDepth, maxActive: options.maxActive, retainTerminal: options.retain, retainBytes: options.retainBytes, retainAgeMs: options.retainDays * 24 * 60 * 60 * 1000 },
      events: { capacityBytes: options.replayBytes }
    }
    // With --grpc-port, a gRPC server beside the HTTP one: the door serves A2A 1.0 on it too.
    const grpc: Layer.Layer<never, Door.GrpcBindError> = Option.match(options.grpcPort, {
      onNone: () => Layer.empty,
      onSome: (grpcPort) => Door.layerGrpc({ ...door, port: grpcPort })
    })
    const served = <E, R>(layer: Layer.Layer<CapsuleRuntime.Session, E, R>, chosen: DoorPort, extra: Record<string, string>, directory?: string) =>
      announce(Door.layer(layer, door).pipe(Layer.provide(Layer.merge(Door.layerServer({ ...door, port: chosen.port }), grpc))), options.json, extra, credentials, directory).pipe(
        Effect.catchTag("ServeError", (error) => Flags.reportLaunchFailure("E-RUN-010", bindFailureMessage(options.host, chosen, error as ServeError), options.json)),
        Effect.catchTag("GrpcBindError", (error) =>
          Flags.reportLaunchFailure("E-RUN-010", grpcBindFailureMessage(error as Door.GrpcBindError), options.json))
      )
    if (Option.isSome(options.cluster)) {
      if (Option.isNone(options.runnerAddress)) return yield* Flags.reportLaunchFailure("E-RUN-010", "--cluster needs --runner-address HOST:PORT: where the other runners reach this one", options.json)
      if (options.dir.length === 0) return yield* Flags.reportLaunchFailure("E-RUN-010", "--cluster needs the capsule directories the fleet serves (the same on every runner)", options.json)
      if (Option.isSome(options.grpcPort)) return yield* Flags.reportLaunchFailure("E-RUN-010", "--grpc-port is not served by a fleet runner yet: its gateway speaks JSON-RPC and HTTP+JSON", options.json)
      const fleet = serveFleet({
        cluster: options.cluster.value,
        runnerAddress: options.runnerAddress.value,
        publicUrl: Option.getOrUndefined(options.publicUrl),
        sessions: options.sessions,
        runnerCapacity: options.runnerCapacity,
        directories: options.dir,
        port: options.port,
        json: options.json,
        store: Option.getOrUndefined(options.store)
      }, door, session)
      return yield* Flags.launching(fleet, options.json, 1)
    }
    const [directory, ...more] = options.dir
    if (more.length > 0) return yield* Flags.reportLaunchFailure("E-RUN-010", "serve takes one capsule directory; several are served by a fleet (--cluster)", options.json)
    if (directory === undefined) return yield* served(CapsuleRuntime.layerEcho(session), doorPort(options.port, undefined), {})
    const spec = Option.match(options.store, { onNone: () => Either.right<StoreSpec>({ _tag: "Default" }), onSome: parseStore })
    if (Either.isLeft(spec)) return yield* Flags.reportLaunchFailure("E-RUN-030", spec.left, options.json)
    return yield* Effect.gen(function*() {
      const fromFlag = Option.getOrUndefined(options.workdir)
      const prepared = yield* prepareDirectory(directory, { ...session, workdir: fromFlag, keepSessions: fromFlag === undefined ? options.keepSessions : undefined })
      for (const note of prepared.notes) yield* Console.error(note)
      const chosen = doorPort(options.port, prepared.project.manifest.network)
      return yield* served(prepared.layer, chosen, { workdir: prepared.workdir, records: prepared.records }, directory).pipe(
        Effect.catchTag("TraceWriteFailed", (error) => Flags.reportLaunchFailure(error.code, error.message, options.json, prepared.workdir))
      )
    }).pipe(withStore(spec.right, directory), (effect) => Flags.launching(effect, options.json, 1))
  }).pipe(Effect.provide(HostEnvironment.layer))).pipe(Command.withDescription("Serve a capsule over the A2A door (the built-in echo capsule without a directory)"))
