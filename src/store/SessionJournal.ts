/**
 * The `Journal` of one session over the stores: changes are staged in an open batch, and one
 * writer fiber commits batches one after another, each as a single transaction (group commit:
 * what is staged while a commit runs goes in the next). After a commit the batch's frames are
 * handed to the event log (then readers see them) and its waiters are woken (then the registry
 * publishes the states and answers). A batch that fails (disk full, connection lost) is retried
 * with backoff until it commits: nothing staged is dropped and nothing after it is written first,
 * so the store never holds a later state without the earlier one; while it fails, the session's
 * changes wait, and it carries on when the store takes writes again.
 */
import { Deferred, Duration, Effect, Exit, FiberId, Queue, Schedule } from "effect"
import type { JournalService, Recovered, StoredPushConfig, StoredTask } from "../services/Journal.js"
import { pushConfigKey } from "../services/PushConfigs.js"
import type { Frame } from "../services/TaskEvent.js"
import { BatchWriter } from "./BatchWriter.js"
import { FrameStore } from "./FrameStore.js"
import { PushConfigStore } from "./PushConfigStore.js"
import { StoreFailed } from "./StoreError.js"
import { TaskStore } from "./TaskStore.js"

interface Batch {
  readonly tasks: Map<string, StoredTask>
  readonly forgets: Set<string>
  readonly frames: Array<Frame>
  readonly pushPut: Map<string, StoredPushConfig>
  readonly pushRemove: Array<readonly [string, string]>
  /** What runs once the batch is committed, in the order it was asked for. */
  readonly after: Array<Effect.Effect<void>>
  readonly done: Deferred.Deferred<void>
}

const newBatch = (): Batch => ({
  tasks: new Map(),
  forgets: new Set(),
  frames: [],
  pushPut: new Map(),
  pushRemove: [],
  after: [],
  done: Deferred.unsafeMake(FiberId.none)
})

const isEmpty = (batch: Batch) =>
  batch.tasks.size === 0 && batch.forgets.size === 0 && batch.frames.length === 0 && batch.pushPut.size === 0 && batch.pushRemove.length === 0

/** How long the session waits before writing a failed batch again: 50 ms, doubling, at most 2 s. */
const retryDelays = Schedule.exponential(Duration.millis(50)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(2))))

/** Changes staged before a writer waits for the commit instead of staging more. */
const backlogLimit = 1024

/** Longest the session's end waits for its last changes to be committed. */
const closingFlushMs = 10_000

/** What the store holds for the session: read once at start, before the session is built. */
export const loadSession = (sessionId: string) =>
  Effect.gen(function*() {
    const taskStore = yield* TaskStore
    const frameStore = yield* FrameStore
    const pushStore = yield* PushConfigStore
    return {
      tasks: yield* taskStore.load(sessionId),
      lastFrameId: yield* frameStore.lastId(sessionId),
      pushConfigs: yield* pushStore.load(sessionId)
    } satisfies Recovered
  })

export const makeSessionJournal = (sessionId: string, recovered: Recovered) =>
  Effect.gen(function*() {
    const frameStore = yield* FrameStore
    const writer = yield* BatchWriter
    let open = newBatch()
    let inflight: Batch | undefined
    let listener: (frames: ReadonlyArray<Frame>) => void = () => {}
    /** The batch being written has failed at least once and not committed since. */
    let failing = false
    const wake = yield* Queue.sliding<void>(1)
    const lock = yield* Effect.makeSemaphore(1)

    /** The open batch, waking the writer when it was empty. */
    const staging = () => {
      if (isEmpty(open)) Queue.unsafeOffer(wake, undefined)
      return open
    }

    const write = (batch: Batch) =>
      writer.write(sessionId, {
        tasks: [...batch.tasks.values()],
        forgotten: [...batch.forgets],
        frames: batch.forgets.size === 0 ? batch.frames : batch.frames.filter((frame) => !batch.forgets.has(frame.taskId)),
        pushPut: [...batch.pushPut.values()],
        pushRemove: batch.pushRemove
      })

    const flush = lock.withPermits(1)(Effect.suspend(() => {
      const batch = open
      if (isEmpty(batch)) return Effect.void
      open = newBatch()
      inflight = batch
      return write(batch).pipe(
        // A defect in a driver must not end the writer: it is a failed commit like any other.
        Effect.catchAllDefect((defect) => Effect.fail(new StoreFailed({ operation: "commit", reason: String(defect) }))),
        Effect.tapError((error) =>
          Effect.suspend(() => {
            const first = !failing
            failing = true
            return first ? Effect.logError("store commit failed: new tasks are refused until it succeeds; retrying", error.message) : Effect.void
          })
        ),
        Effect.retry(retryDelays),
        Effect.orDie,
        Effect.zipRight(Effect.suspend(() => (failing ? Effect.logInfo("store commit succeeded again") : Effect.void))),
        Effect.zipRight(Effect.sync(() => {
          failing = false
          inflight = undefined
          listener(batch.frames)
          Deferred.unsafeDone(batch.done, Exit.void)
        })),
        Effect.zipRight(batch.after.length === 0 ? Effect.void : Effect.all(batch.after, { discard: true }))
      )
    }))

    // The writer runs when the fiber that staged first waits for its commit: what the others staged
    // by then goes in the same transaction, and what comes during it in the next.
    yield* Queue.take(wake).pipe(Effect.zipRight(flush), Effect.forever, Effect.forkScoped)
    // Runs before the writer is interrupted (finalizers run in reverse): the session's last changes are kept.
    yield* Effect.addFinalizer(() => flush.pipe(Effect.timeout(closingFlushMs), Effect.ignoreLogged))


    return {
      durable: true,
      recovered,
      task: (stored) => void staging().tasks.set(stored.task.id, stored),
      forget: (taskId) => {
        const batch = staging()
        batch.tasks.delete(taskId)
        batch.forgets.add(taskId)
      },
      frame: (frame) => void staging().frames.push(frame),
      pushConfig: (config) => void staging().pushPut.set(pushConfigKey(config.taskId, config.configId), config),
      removePushConfig: (taskId, configId) => {
        const batch = staging()
        if (configId === "*") {
          for (const [key, config] of batch.pushPut) if (config.taskId === taskId) batch.pushPut.delete(key)
        } else batch.pushPut.delete(pushConfigKey(taskId, configId))
        batch.pushRemove.push([taskId, configId])
      },
      afterCommit: (effect) => {
        if (!isEmpty(open)) open.after.push(effect)
        else if (inflight !== undefined) inflight.after.push(effect)
        else Effect.runFork(effect)
      },
      backlogged: () => open.tasks.size + open.frames.length > backlogLimit,
      commit: Effect.suspend(() => {
        if (!isEmpty(open)) return Deferred.await(open.done)
        return inflight === undefined ? Effect.void : Deferred.await(inflight.done)
      }),
      writable: () => !failing,
      pending: (taskId) => {
        if (taskId === undefined) return !isEmpty(open) || inflight !== undefined
        return open.tasks.has(taskId) || (inflight?.tasks.has(taskId) ?? false)
      },
      onCommitted: (next) => void (listener = next),
      frames: (after, before, limit) => frameStore.range(sessionId, after, before, limit).pipe(Effect.orDie)
    } satisfies JournalService
  })
