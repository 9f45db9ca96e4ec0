/**
 * `serve --cluster postgres://… --runner-address HOST:PORT <dirs…>`: one runner of a fleet. Its
 * door answers for every session of the fleet at `/s/<session>/`; the cluster places each
 * session on one runner at a time (../layers/Fleet.ts). Every runner is started with the same
 * directories and the same database.
 */
import type { ServeError } from "@effect/platform/HttpServerError"
import { HttpServer } from "@effect/platform"
import { Console, Effect, Either, Layer, type Option } from "effect"
import { FleetSessions } from "../fleet/FleetSessions.js"
import { serverUrl } from "../layers/DoorServer.js"
import { fleetLayer, type FleetOptions } from "../layers/Fleet.js"
import { parseStore } from "../layers/Store.js"
import type { Options } from "../layers/Session.js"
import { bindFailureMessage, doorPort } from "./DoorPort.js"
import * as Flags from "./SessionFlags.js"

export interface FleetFlags {
  readonly cluster: string
  readonly runnerAddress: string
  readonly publicUrl: string | undefined
  readonly sessions: number
  readonly runnerCapacity: number
  readonly directories: ReadonlyArray<string>
  readonly port: Option.Option<number>
  readonly json: boolean
  /** `--store` or `MURMUR_STORE`, which a fleet does not take. */
  readonly store: string | undefined
}

/** `HOST:PORT` (an IPv6 host in brackets), or why not. */
export const parseRunnerAddress = (text: string): Either.Either<{ readonly host: string; readonly port: number }, string> => {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(text)
  const port = match === null ? Number.NaN : Number(match[2])
  if (match === null || !(port >= 1 && port <= 65535)) return Either.left(`--runner-address '${text}' is not HOST:PORT with a port from 1 to 65535`)
  return Either.right({ host: match[1]!.replace(/^\[|\]$/g, ""), port })
}

/** Why a `--cluster` value cannot be a fleet's store, if it cannot. */
export const clusterStoreRefusal = (url: string): string | undefined =>
  Either.getOrUndefined(parseStore(url))?._tag === "Postgres"
    ? undefined
    : `--cluster takes a PostgreSQL URL (postgres://…): a fleet's runners share one database, and ${url.startsWith("sqlite:") ? "a SQLite file is one process's store" : `'${url}' is not one`}`

export const serveFleet = (flags: FleetFlags, door: FleetOptions["door"], session: Options) =>
  Effect.gen(function*() {
    const refusal = clusterStoreRefusal(flags.cluster)
    if (refusal !== undefined) return yield* Flags.reportLaunchFailure("E-RUN-030", refusal, flags.json)
    const address = parseRunnerAddress(flags.runnerAddress)
    if (Either.isLeft(address)) return yield* Flags.reportLaunchFailure("E-RUN-010", address.left, flags.json)
    if (flags.publicUrl !== undefined && !/^https?:\/\/[^/]/.test(flags.publicUrl)) {
      return yield* Flags.reportLaunchFailure("E-RUN-010", `--public-url '${flags.publicUrl}' is not an http:// or https:// URL`, flags.json)
    }
    if (flags.store !== undefined && flags.store !== "" && flags.store !== flags.cluster) {
      return yield* Flags.reportLaunchFailure("E-RUN-030", "--store (or MURMUR_STORE) is not taken with --cluster: a fleet keeps everything in the --cluster database", flags.json)
    }
    const chosen = doorPort(flags.port, undefined)
    const runner = fleetLayer({
      store: flags.cluster,
      runnerAddress: address.right,
      publicUrl: flags.publicUrl,
      directories: flags.directories,
      sessionsPerDirectory: flags.sessions,
      runnerCapacity: flags.runnerCapacity,
      door: { ...door, port: chosen.port },
      session
    })
    return yield* Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const { all } = yield* FleetSessions
      const url = serverUrl(server.address)
      if (flags.json) {
        yield* Console.log(JSON.stringify({
          event: "listening",
          url,
          runner: flags.runnerAddress,
          sessions: all.map(({ capsuleName, sessionId, url }) => ({ session_id: sessionId, capsule: capsuleName, url }))
        }))
      } else {
        yield* Console.log(`fleet runner ${flags.runnerAddress}: door at ${url}, ${all.length} session(s)`)
        for (const one of all) yield* Console.log(`  ${one.capsuleName} ${one.sessionId} at ${one.url}`)
      }
      yield* Effect.logInfo("fleet runner listening").pipe(Effect.annotateLogs({ url, runner: flags.runnerAddress }))
      return yield* Effect.never
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.fresh(runner)),
      Effect.annotateLogs({ runner: flags.runnerAddress }),
      Effect.annotateSpans({ "murmur.runner": flags.runnerAddress }),
      Effect.catchTag("ServeError", (error) => Flags.reportLaunchFailure("E-RUN-010", bindFailureMessage(door.host ?? "127.0.0.1", chosen, error as ServeError), flags.json)),
      Effect.catchTag("SocketServerError", (error) =>
        Flags.reportLaunchFailure("E-RUN-010", `the runner cannot listen at ${flags.runnerAddress}: ${error.message}`, flags.json))
    )
  })
