/**
 * Composition only: the `@effect/cluster` runner of a fleet. Sharding over TCP between runners
 * (msgpack), runner and message storage in the fleet's PostgreSQL (advisory locks: a killed
 * runner's shard locks go when PostgreSQL drops its connection), runner health by ping. The
 * config is built here, never read from the environment (`ShardingConfig.layerFromEnv` would take
 * a platform's `PORT` or `HOST` for the runner's own).
 */
import { RunnerAddress, RunnerHealth, Runners, ShardingConfig, SocketRunner, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { layerClientProtocol, layerSocketServer } from "@effect/platform-node/NodeClusterSocket"
import { RpcSerialization } from "@effect/rpc"
import { Duration, Layer, Option } from "effect"

/**
 * How fast a fleet notices a dead runner and moves its sessions (docs/design.md, "The fleet"):
 * the health check pings every runner this often, a runner's row expires after
 * `lockExpiration` without a heartbeat, and assignments are read again every
 * `refreshAssignments`. Shorter values move sessions sooner and risk taking them from a runner
 * that only paused.
 */
export interface FleetTiming {
  readonly healthCheck: Duration.DurationInput
  readonly lockRefresh: Duration.DurationInput
  readonly lockExpiration: Duration.DurationInput
  readonly refreshAssignments: Duration.DurationInput
  readonly messagePoll: Duration.DurationInput
  /** An idle session (no live task) is passivated after this long without a call. */
  readonly idleSession: Duration.DurationInput
  /** How long a session leaving a runner lets its running tasks finish before they are cut off. */
  readonly drain: Duration.DurationInput
}

export const defaultFleetTiming: FleetTiming = {
  healthCheck: "2 seconds",
  lockRefresh: "2 seconds",
  lockExpiration: "8 seconds",
  refreshAssignments: "1 second",
  messagePoll: "1 second",
  idleSession: "5 minutes",
  drain: "30 seconds"
}

export interface ClusterSettings {
  /** `host:port` other runners reach this one at; it listens there too. */
  readonly runnerAddress: { readonly host: string; readonly port: number }
  readonly timing?: Partial<FleetTiming> | undefined
}

export const shardingConfig = (settings: ClusterSettings) => {
  const timing = { ...defaultFleetTiming, ...settings.timing }
  return ShardingConfig.layer({
    runnerAddress: Option.some(RunnerAddress.make(settings.runnerAddress.host, settings.runnerAddress.port)),
    runnerListenAddress: Option.none(),
    shardsPerGroup: 300,
    runnerHealthCheckInterval: Duration.decode(timing.healthCheck),
    shardLockRefreshInterval: Duration.decode(timing.lockRefresh),
    shardLockExpiration: Duration.decode(timing.lockExpiration),
    refreshAssignmentsInterval: Duration.decode(timing.refreshAssignments),
    entityMessagePollInterval: Duration.decode(timing.messagePoll),
    entityReplyPollInterval: Duration.millis(200),
    sendRetryInterval: Duration.millis(100),
    entityMaxIdleTime: Duration.decode(timing.idleSession),
    entityTerminationTimeout: Duration.decode(timing.drain),
    // Local calls skip the msgpack round trip; the cross-runner path is what the fleet tests run.
    simulateRemoteSerialization: false
  })
}

/** Sharding and the runner's server, over the `SqlClient` in context (PostgreSQL). */
export const clusterLayer = (settings: ClusterSettings) =>
  SocketRunner.layer.pipe(
    Layer.provide([layerSocketServer, layerClientProtocol]),
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(layerClientProtocol))),
    Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(shardingConfig(settings)),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
