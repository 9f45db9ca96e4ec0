/**
 * Composition only: one runner of a fleet (`serve --cluster`). Its door is a gateway for every
 * session of the fleet (../fleet/Gateway.ts); the sessions the cluster places here are built as
 * entities from the capsule directories every runner is given (./FleetEntity.ts); the store and
 * the cluster's tables are one PostgreSQL database.
 */
import { realpathSync } from "node:fs"
import { Sharding } from "@effect/cluster"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Scope } from "effect"
import type { DoorSettings } from "../http/DoorConfig.js"
import { clusterRetention } from "../fleet/ClusterRetention.js"
import { type FleetSession, FleetSessions, sessionUrl } from "../fleet/FleetSessions.js"
import { makeGateway } from "../fleet/Gateway.js"
import { LocalSessions } from "../fleet/LocalSessions.js"
import { reconcile } from "../fleet/Reconciler.js"
import { ShardWatch } from "../fleet/ShardWatch.js"
import { loadAnyProject } from "../project/CapsuleProject.js"
import type { LoadedDirectory } from "./Directory.js"
import { RunnerCapacity } from "../services/RunnerCapacity.js"
import { SessionStores } from "../store/SessionStores.js"
import { type ClusterSettings, clusterLayer } from "./Cluster.js"
import { layerServer, serverUrl } from "./DoorServer.js"
import { fleetEntityLayer } from "./FleetEntity.js"
import { HostEnvironment } from "./Host.js"
import { doorConfigLayer, type Options } from "./Session.js"
import { postgresStores } from "./Store.js"

export interface FleetOptions extends ClusterSettings {
  /** The fleet's PostgreSQL URL: its sessions, tasks, frames and the cluster's own tables. */
  readonly store: string
  /** The base URL clients reach the fleet at (a load balancer); default this runner's door. */
  readonly publicUrl?: string | undefined
  /** The capsule directories, the same on every runner. */
  readonly directories: ReadonlyArray<string>
  /** Sessions per directory (1: the directory's own session). */
  readonly sessionsPerDirectory: number
  /** The most tasks this runner runs at once across its sessions. */
  readonly runnerCapacity: number
  readonly door: Partial<DoorSettings>
  readonly session: Options
}

/** The key a directory's n-th session is claimed under: its real path, then `#n` after the first. */
const sessionKey = (directory: string, index: number) => (index === 0 ? realpathSync(directory) : `${realpathSync(directory)}#${index}`)

/**
 * Claims every session of the fleet (the same ids on every runner, whoever claims first); each
 * directory is loaded once, and its sessions share what was loaded (`projects`).
 */
const claimSessions = (options: FleetOptions, base: string, projects: Map<string, LoadedDirectory>) =>
  Effect.gen(function*() {
    const stores = yield* SessionStores
    const host = yield* HostEnvironment
    const sessions: Array<FleetSession> = []
    for (const directory of options.directories) {
      const loaded = yield* loadAnyProject(directory, host.env)
      projects.set(loaded.project.directory, loaded)
      const { name, version } = loaded.project.manifest
      for (let index = 0; index < options.sessionsPerDirectory; index++) {
        const claimed = yield* stores.claim({
          key: sessionKey(directory, index),
          capsuleName: name,
          capsuleVersion: version,
          digest: "",
          options: JSON.stringify({ tasks: options.session.tasks ?? {}, events: options.session.events ?? {} })
        })
        sessions.push({ sessionId: claimed.sessionId, directory: loaded.project.directory, capsuleName: name, url: sessionUrl(base, claimed.sessionId) })
      }
    }
    return sessions
  })

/** Serves the gateway on the `HttpServer` in context; requests carry only the serving scope. */
const gatewayLayer = (runnerAddress: string) => Layer.scopedDiscard(Effect.gen(function*() {
  const app = yield* makeGateway(runnerAddress)
  const server = yield* HttpServer.HttpServer
  const scope = yield* Effect.scope
  yield* server.serve(app).pipe(Effect.mapInputContext((_: Context.Context<never>) => Context.make(Scope.Scope, scope)))
}))

/** A runner: the gateway on its door, the entities it may host, the cluster and the store. */
export const fleetLayer = (options: FleetOptions) => {
  const projects = new Map<string, LoadedDirectory>()
  const sessions = Layer.effect(
    FleetSessions,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      return FleetSessions.make(yield* claimSessions(options, options.publicUrl ?? serverUrl(server.address), projects))
    })
  )
  const address = `${options.runnerAddress.host}:${options.runnerAddress.port}`
  const entity = fleetEntityLayer(options.session, address, projects).pipe(
    Layer.provide(Layer.merge(RunnerCapacity.layer(options.runnerCapacity), ShardWatch.layer))
  )
  const reconciler = Layer.scopedDiscard(Effect.forkScoped(reconcile("2 seconds")))
  const retention = Layer.scopedDiscard(Effect.flatMap(Sharding.Sharding, (sharding) => sharding.registerSingleton("capsule-runtime/fleet/retention", clusterRetention())))
  return Layer.mergeAll(gatewayLayer(address), entity, reconciler, retention).pipe(
    Layer.provide(LocalSessions.layer),
    Layer.provideMerge(sessions),
    Layer.provideMerge(clusterLayer(options)),
    Layer.provideMerge(postgresStores(options.store)),
    Layer.provideMerge(layerServer(options.door)),
    Layer.provideMerge(doorConfigLayer(options.door))
  )
}

