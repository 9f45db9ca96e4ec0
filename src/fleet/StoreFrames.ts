/**
 * A session's frames read from the store after a cursor the reader owns: what a gateway streams
 * for a session another runner owns. Only committed frames are in the store, so whatever a
 * reader is handed survives any crash, and a cursor (a `Last-Event-ID`) means the same on every
 * runner. When the owner dies the next owner's frames land in the same table after the same ids,
 * so the loop goes on across a failover without noticing it.
 *
 * One page is read at a time and the next only once the reader took the last one: the store is
 * the buffer, so a slow reader holds at most `pageSize` frames here.
 */
import { Duration, Effect, Schedule, type Scope } from "effect"
import type { LogItem, SubscribeOptions, Subscription } from "../services/EventLog.js"
import type { FrameStore } from "../store/FrameStore.js"

export interface StoreFramesSettings {
  /** How long to wait before reading again when nothing new was committed. */
  readonly pollMs: number
  readonly pageSize: number
}

export const defaultStoreFrames: StoreFramesSettings = { pollMs: 50, pageSize: 256 }

export const openStoreFrames = (
  frames: FrameStore["Type"],
  sessionId: string,
  options: SubscribeOptions,
  settings: StoreFramesSettings = defaultStoreFrames
): Effect.Effect<Subscription, never, Scope.Scope> =>
  Effect.gen(function*() {
    let waiting: Array<LogItem> = []
    let wake: (() => void) | undefined
    // Without a cursor a reader gets live frames only: everything after the newest committed one.
    let cursor = options.after ?? (yield* frames.lastId(sessionId).pipe(Effect.orElseSucceed(() => 0)))
    let taken: (() => void) | undefined
    /** Resolves once the reader has taken what was waiting. */
    const drained = Effect.async<void>((resume) => {
      if (waiting.length === 0) return resume(Effect.void)
      taken = () => resume(Effect.void)
      return Effect.sync(() => void (taken = undefined))
    })
    // Suspended: each read starts after the cursor as it is then, not as it was when built.
    const page = Effect.suspend(() => frames.after(sessionId, cursor, settings.pageSize)).pipe(
      // A store that fails for a while only delays the stream; the reader sees nothing of it.
      Effect.tapError((error) => Effect.logWarning("fleet: frames not read from the store; trying again", { sessionId, error: error.message })),
      Effect.retry(Schedule.exponential(Duration.millis(100)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(2))))),
      Effect.orDie
    )
    const poll = Effect.gen(function*() {
      yield* drained
      const read = yield* page
      if (read.length === 0) return yield* Effect.sleep(Duration.millis(settings.pollMs))
      cursor = read[read.length - 1]!.id
      for (const frame of read) if (options.taskId === undefined || frame.taskId === options.taskId) waiting.push({ _tag: "Frame", frame })
      if (waiting.length > 0 && wake !== undefined) {
        const woken = wake
        wake = undefined
        woken()
      }
    })
    yield* Effect.forkScoped(Effect.forever(poll))
    return {
      take: () => {
        const items = waiting
        if (items.length > 0) waiting = []
        taken?.()
        return items
      },
      await: (callback) => {
        if (waiting.length > 0) {
          callback()
          return () => {}
        }
        wake = callback
        return () => void (wake = undefined)
      }
    }
  })
