/**
 * Composition only: a fleet's session entity. When the cluster places a session on this runner
 * (a call to it, or its keep-alive after its runner died), the session is built from its capsule
 * directory over what the store holds for it, the way `serve` builds one after a restart: queued
 * tasks run, the ones that were running end failed saying the runner was lost. Its door app is
 * listed in `LocalSessions` while it lives here; while it has live tasks it keeps itself alive
 * (a persisted keep-alive, so the next owner builds it again without waiting for a caller).
 */
import { Entity, Sharding } from "@effect/cluster"
import { Effect, Layer, Scope, Stream } from "effect"
import { FleetSessions } from "../fleet/FleetSessions.js"
import { sessionDoorApp } from "../fleet/Gateway.js"
import { LocalSessions } from "../fleet/LocalSessions.js"
import { SessionEntity } from "../fleet/SessionEntity.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { SessionPort } from "../services/SessionPort.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { runnerLostMessage, TaskRunner } from "../services/TaskRunner.js"
import { SessionStore } from "../store/SessionStore.js"
import { SessionStores } from "../store/SessionStores.js"
import { prepareDirectory } from "./Directory.js"
import type { Options } from "./Session.js"

/**
 * Keeps the entity alive exactly while the session has tasks that are not over; when the
 * session's shard leaves this runner (a runner joined, or this one is stopping), hands it off:
 * no queued task starts here any more, the running ones finish (within the cluster's
 * termination timeout), then the entity lets go and the next owner builds the session over the
 * store, queued tasks included (./FleetEntity.ts's reconciler wakes it).
 */
const keepAliveWhileHere = Effect.gen(function*() {
  const registry = yield* TaskRegistry
  const runner = yield* TaskRunner
  const sharding = yield* Sharding.Sharding
  const address = yield* Entity.CurrentAddress
  let kept = false
  let leaving = false
  const check = Effect.gen(function*() {
    const busy = !leaving && (yield* registry.live()).length > 0
    if (busy === kept) return
    kept = busy
    yield* Entity.keepAlive(busy)
  })
  yield* check
  yield* registry.changes.pipe(Stream.runForEach(() => check), Effect.forkScoped)
  const handOff = Effect.gen(function*() {
    yield* Effect.logInfo("fleet: session leaving this runner; running tasks finish first").pipe(Effect.annotateLogs({ session: address.entityId }))
    yield* runner.handOff()
    leaving = true
    yield* check
  })
  yield* Effect.sleep("200 millis").pipe(
    Effect.repeat({ until: () => !sharding.hasShardId(address.shardId) }),
    Effect.zipRight(handOff),
    Effect.forkScoped
  )
})

const buildSession = (options: Options, runnerAddress: string) =>
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const sessions = yield* FleetSessions
    const session = sessions.get(address.entityId)
    if (session === undefined) return yield* Effect.dieMessage(`no session ${address.entityId} on this runner: every runner of a fleet must serve the same capsule directories`)
    const stores = yield* SessionStores
    const recovered = yield* stores.load(session.sessionId)
    const prepared = yield* prepareDirectory(session.directory, {
      ...options,
      sessionId: session.sessionId,
      journal: stores.journal(session.sessionId, recovered),
      runner: { ...options.runner, interruptedMessage: runnerLostMessage }
    })
    const scope = yield* Scope.Scope
    const built = yield* Layer.buildWithScope(
      prepared.layer.pipe(Layer.provide(Layer.succeed(DoorAddress, DoorAddress.of({ url: session.url })))),
      scope
    )
    yield* (yield* SessionStore).place(session.sessionId, runnerAddress)
    yield* Effect.logInfo("fleet: session built here").pipe(Effect.annotateLogs({ session: session.sessionId, tasks: recovered.tasks.length }))
    const app = yield* sessionDoorApp.pipe(Effect.provide(SessionPort.layerLocal), Effect.provide(built))
    const local = yield* LocalSessions
    local.add(session.sessionId, app)
    yield* Effect.addFinalizer(() => Effect.sync(() => local.remove(session.sessionId, app)))
    yield* keepAliveWhileHere.pipe(Effect.provide(built))
    const registry = yield* Effect.provide(TaskRegistry, built)
    const runner = yield* Effect.provide(TaskRunner, built)
    const identity = yield* Effect.provide(SessionIdentity, built)
    return SessionEntity.of({
      Describe: () => Effect.succeed({ capsule: identity.capsule, streaming: identity.card.capabilities.streaming }),
      Submit: ({ payload }) => runner.submit(payload.input),
      Resume: ({ payload }) => runner.resume(payload.taskId, payload.message),
      Cancel: ({ payload }) => runner.cancel(payload.taskId),
      Stop: () => runner.stop(),
      AwaitSettled: ({ payload }) => registry.awaitSettled(payload.taskId),
      Stats: () => registry.stats()
    })
  }).pipe(
    Effect.tapErrorCause((cause) => Effect.logError("fleet: a session could not be built", cause)),
    Effect.orDie
  )

export const fleetEntityLayer = (options: Options, runnerAddress: string) =>
  SessionEntity.toLayer(buildSession(options, runnerAddress), { concurrency: "unbounded" })

