/**
 * Composition only: a fleet's session entity. When the cluster places a session on this runner
 * (a call to it, or its keep-alive after its runner died), the session is built from its capsule
 * directory over what the store holds for it, the way `serve` builds one after a restart: queued
 * tasks run, the ones that were running end failed saying the runner was lost. Its door app is
 * listed in `LocalSessions` while it lives here; while it has live tasks it keeps itself alive
 * (a persisted keep-alive, so the next owner builds it again without waiting for a caller).
 */
import { Entity } from "@effect/cluster"
import { Effect, Layer, Scope, Stream } from "effect"
import { FleetSessions } from "../fleet/FleetSessions.js"
import { sessionDoorApp } from "../fleet/Gateway.js"
import { LocalSessions } from "../fleet/LocalSessions.js"
import { ShardWatch } from "../fleet/ShardWatch.js"
import { type Described, SessionEntity } from "../fleet/SessionEntity.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { SessionPort } from "../services/SessionPort.js"
import { TaskRegistry } from "../services/TaskRegistry.js"
import { runnerLostMessage, TaskRunner } from "../services/TaskRunner.js"
import { SessionStore } from "../store/SessionStore.js"
import { SessionStores } from "../store/SessionStores.js"
import { type LoadedDirectory, prepareDirectory } from "./Directory.js"
import type { Options } from "./Session.js"

/**
 * What keeps a session on its runner while it has work, and what lets it go:
 * - while it has live tasks, its keep-alive (persisted: after a crash, the next owner builds it
 *   without waiting for a caller) and a call to itself (`Hold`): the cluster lets an entity that
 *   is moving or stopping finish the calls in progress, up to its termination timeout, and that
 *   call ends only once no task runs here;
 * - when its shard leaves this runner (a runner joined, or this one is stopping), it hands off:
 *   no queued task starts here any more, the running ones finish, then `Hold` returns and the
 *   entity lets go; the next owner builds it over the store, queued tasks included (the fleet's
 *   reconciler wakes it).
 */
const stayWhileBusy = Effect.gen(function*() {
  const registry = yield* TaskRegistry
  const runner = yield* TaskRunner
  const address = yield* Entity.CurrentAddress
  const self = (yield* SessionEntity.client)(address.entityId)
  let kept = false
  let holding = false
  let leaving = false
  const check = Effect.gen(function*() {
    const busy = !leaving && (yield* registry.live()).length > 0
    if (busy && !holding) {
      holding = true
      yield* self.Hold().pipe(Effect.ignore, Effect.ensuring(Effect.sync(() => void (holding = false))), Effect.forkScoped)
    }
    if (busy === kept) return
    kept = busy
    yield* Entity.keepAlive(busy)
  })
  yield* check
  yield* registry.changes.pipe(Stream.runForEach(() => check), Effect.forkScoped)
  const handOff = Effect.gen(function*() {
    yield* Effect.logInfo("fleet: session leaving this runner; running tasks finish first")
    yield* runner.handOff()
    leaving = true
    yield* check
  })
  yield* (yield* ShardWatch).whenLeft(address.shardId).pipe(Effect.zipRight(handOff), Effect.forkScoped)
  /** `Hold`'s answer: once nothing runs here and, unless the session is leaving, nothing waits. */
  const hold = Effect.gen(function*() {
    while ((yield* runner.running()) > 0 || (!leaving && (yield* registry.live()).length > 0)) yield* Effect.sleep("200 millis")
  })
  return { hold }
})

const buildSession = (options: Options, runnerAddress: string, projects: ReadonlyMap<string, LoadedDirectory>) =>
  Effect.flatMap(Entity.CurrentAddress, (address) => sessionHandlers(options, runnerAddress, address.entityId, projects).pipe(
    // The cluster builds an entity with no log annotations; everything the session forks from
    // here (its dispatcher, its tasks) carries the runner and the session in its logs and spans.
    Effect.annotateLogs({ runner: runnerAddress, session: address.entityId }),
    Effect.annotateSpans({ "murmur.runner": runnerAddress, "murmur.session": address.entityId })
  ))

const sessionHandlers = (options: Options, runnerAddress: string, entityId: string, projects: ReadonlyMap<string, LoadedDirectory>) =>
  Effect.gen(function*() {
    const sessions = yield* FleetSessions
    const session = sessions.get(entityId)
    if (session === undefined) return yield* Effect.dieMessage(`no session ${entityId} on this runner: every runner of a fleet must serve the same capsule directories`)
    const stores = yield* SessionStores
    const recovered = yield* stores.load(session.sessionId)
    const prepared = yield* prepareDirectory(session.directory, {
      ...options,
      sessionId: session.sessionId,
      journal: stores.journal(session.sessionId, recovered),
      runner: { ...options.runner, interruptedMessage: runnerLostMessage },
      loaded: projects.get(session.directory)
    })
    const scope = yield* Scope.Scope
    const built = yield* Layer.buildWithScope(
      prepared.layer.pipe(Layer.provide(Layer.succeed(DoorAddress, DoorAddress.of({ url: session.url })))),
      scope
    )
    const runner = yield* Effect.provide(TaskRunner, built)
    // Runs before the session's own finalizers: a task still running when the entity closes is
    // left for the next owner's recovery ("runner lost"), not ended as if a caller canceled it.
    yield* Effect.addFinalizer(() => runner.handOff())
    const identity = yield* Effect.provide(SessionIdentity, built)
    const described: Described = { capsule: identity.capsule, streaming: identity.card.capabilities.streaming }
    yield* (yield* SessionStore).place(session.sessionId, runnerAddress, JSON.stringify(described))
    yield* Effect.logInfo("fleet: session built here").pipe(Effect.annotateLogs({ tasks: recovered.tasks.length }))
    const app = yield* sessionDoorApp.pipe(Effect.provide(SessionPort.layerLocal), Effect.provide(built))
    const local = yield* LocalSessions
    local.add(session.sessionId, app)
    yield* Effect.addFinalizer(() => Effect.sync(() => local.remove(session.sessionId, app)))
    const presence = yield* stayWhileBusy.pipe(Effect.provide(built))
    const registry = yield* Effect.provide(TaskRegistry, built)
    return SessionEntity.of({
      Describe: () => Effect.succeed(described),
      Submit: ({ payload }) => runner.submit(payload.input),
      Resume: ({ payload }) => runner.resume(payload.taskId, payload.message),
      Cancel: ({ payload }) => runner.cancel(payload.taskId),
      Stop: () => runner.stop(),
      AwaitSettled: ({ payload }) => registry.awaitSettled(payload.taskId),
      Stats: () => registry.stats(),
      Hold: () => presence.hold
    })
  }).pipe(
    Effect.tapErrorCause((cause) => Effect.logError("fleet: a session could not be built", cause)),
    Effect.orDie
  )

export const fleetEntityLayer = (options: Options, runnerAddress: string, projects: ReadonlyMap<string, LoadedDirectory>) =>
  SessionEntity.toLayer(buildSession(options, runnerAddress, projects), { concurrency: "unbounded" })

