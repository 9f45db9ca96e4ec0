/**
 * The session's SSE buffer. Every frame gets the next id of one session-wide sequence (from 1)
 * and lands in a ring buffer of the last `capacity` frames, holding at most `capacityBytes` of
 * event text (the oldest frames go first; a cursor before them gets a `Gap`). A subscriber
 * registers and takes its replay snapshot in the same synchronous step, so replay and live
 * delivery never overlap or leave a hole. Each subscriber has a bounded list of waiting items
 * (a plain array, no `Queue` or fiber per subscriber: publishing is a push per subscriber, and a
 * reader takes everything waiting in one step): when a slow one falls behind, the frames it
 * cannot take are counted and it gets one `Lagged` item, in place, before the next frame it
 * receives and before `Closed`: no loss goes unannounced.
 */
import { Chunk, Context, Effect, Layer, type Scope, Stream } from "effect"
import { Journal, type JournalService, noJournal } from "./Journal.js"
import { partBytes } from "./Task.js"
import type { Frame, TaskEvent } from "./TaskEvent.js"

export type LogItem =
  | { readonly _tag: "Frame"; readonly frame: Frame }
  | { readonly _tag: "Gap"; readonly firstAvailableId: number }
  | { readonly _tag: "Lagged"; readonly missed: number }
  | { readonly _tag: "Closed" }

export interface SubscribeOptions {
  /** Deliver frames with an id greater than this (a `Last-Event-ID`); absent = live frames only. */
  readonly after?: number | undefined
  /** Only this task's frames. */
  readonly taskId?: string | undefined
}

export interface EventLogConfig {
  /** Most frames held for replay. */
  readonly capacity: number
  /** Most bytes of frames held for replay (see `frameBytes`). */
  readonly capacityBytes: number
  /** Items a subscriber may have waiting before it is lagged. */
  readonly subscriberBuffer: number
}

export const defaultEventLogConfig: EventLogConfig = { capacity: 512, capacityBytes: 16 * 1024 * 1024, subscriberBuffer: 1024 }

/** Fixed cost counted per frame on top of its text (ids, tags, the record itself). */
const frameOverhead = 128

/** What a frame is charged against the replay budget: the UTF-8 size of its strings, plus a fixed overhead. */
export const frameBytes = (frame: Frame): number => {
  const event = frame.event
  let text = frame.taskId.length + frame.contextId.length
  switch (event._tag) {
    case "Status":
      text += Buffer.byteLength(event.message ?? "") + Buffer.byteLength(event.response ?? "")
      break
    case "Text":
    case "Thinking":
      text += Buffer.byteLength(event.text)
      break
    case "Artifact":
      text += Buffer.byteLength(event.artifactId) + Buffer.byteLength(event.name) + Buffer.byteLength(event.content)
      for (const file of event.files ?? []) text += partBytes(file)
      break
  }
  return text + frameOverhead
}

/**
 * A subscription read without a `Stream`: the door's SSE writers take whatever is waiting in one
 * step per wake-up (one write per burst of frames, not per frame). The lag accounting is the
 * same as `subscribe`'s (which is built on it).
 */
export interface Subscription {
  /** Everything waiting, oldest first (empty when nothing is); the reader then owns the items. */
  readonly take: () => Array<LogItem>
  /**
   * Calls `wake` once, as soon as something is waiting (at once if something already is).
   * Returns a function that cancels the wait.
   */
  readonly await: (wake: () => void) => () => void
}

export class EventLog extends Context.Tag("capsule-runtime/services/EventLog")<EventLog, {
  /** Appends a frame for a task and fans it out; returns it with its id. */
  readonly publish: (taskId: string, contextId: string, event: TaskEvent) => Effect.Effect<Frame>
  /**
   * `publish` without the wait: with a store, the frame goes with the next commit (readers see it
   * then); without one, at once. Synchronous, for a change that must be committed with it.
   */
  readonly stage: (taskId: string, contextId: string, event: TaskEvent) => Frame
  /** The id of the newest frame (0 before the first): a cursor for a later `subscribe`. */
  readonly lastId: () => Effect.Effect<number>
  /** Replay after the cursor (with a `Gap` first when frames were evicted), then live items. */
  readonly subscribe: (options: SubscribeOptions) => Stream.Stream<LogItem>
  /** `subscribe` as a pull-based `Subscription`, registered until the scope closes. */
  readonly open: (options: SubscribeOptions) => Effect.Effect<Subscription, never, Scope.Scope>
  /** Ends every subscription with `Closed` (session end); later subscribers get it at once. */
  readonly close: () => Effect.Effect<void>
  readonly subscriberCount: () => Effect.Effect<number>
}>() {
  /**
   * Durable when a `Journal` is in context: frames are seen only once committed, ids continue
   * from the store's last, and a cursor older than the buffer is replayed from the store.
   */
  static readonly layer = (config: Partial<EventLogConfig> = {}) =>
    Layer.effect(EventLog, Effect.map(Journal.current, (journal) => makeEventLog({ ...defaultEventLogConfig, ...config }, journal)))
}

interface Subscriber {
  readonly taskId: string | undefined
  /** Items waiting for the reader. Only frames are refused at the limit: notices always fit. */
  waiting: Array<LogItem>
  /**
   * 1 when the first waiting item was offered to a reader already waiting for it (it is the
   * reader's, as a `Queue` hands an item to a waiting taker), so it does not count to the limit.
   */
  handed: number
  wake: (() => void) | undefined
  missed: number
}

/** What a subscriber whose cursor is `after` must be sent first, given the buffer. */
export const replayPlan = (
  buffered: ReadonlyArray<Frame>,
  nextId: number,
  after: number | undefined
): { readonly gap: number | undefined; readonly frames: ReadonlyArray<Frame> } => {
  if (after === undefined) return { gap: undefined, frames: [] }
  const oldest = buffered.length > 0 ? buffered[0]!.id : nextId
  // A cursor at or past the next id belongs to another sequence (an earlier session): say so
  // and send everything held. A cursor before the oldest held frame means frames were evicted.
  if (after >= nextId) return { gap: oldest, frames: buffered }
  if (after < oldest - 1) return { gap: oldest, frames: buffered }
  return { gap: undefined, frames: buffered.filter((frame) => frame.id > after) }
}

/** Most frames one resuming reader is sent from the store, older than the buffer: beyond them, a `Gap`. */
export const storeReplayFrames = (config: EventLogConfig) => config.capacity * 8

export const makeEventLog = (config: EventLogConfig, journal: JournalService = noJournal) => {
  const ring: Array<Frame | undefined> = new Array(config.capacity)
  const sizes: Array<number> = new Array(config.capacity).fill(0)
  let start = 0
  let size = 0
  let bytes = 0
  /** The next id to hand out, and the one after the last frame readers may see (committed). */
  let nextId = journal.recovered.lastFrameId + 1
  let visibleNext = nextId
  let closed = false
  const subscribers = new Set<Subscriber>()

  const buffered = (): Array<Frame> => {
    const out: Array<Frame> = new Array(size)
    for (let i = 0; i < size; i++) out[i] = ring[(start + i) % config.capacity]!
    return out
  }

  /** Adds an item for the reader and wakes it if it waits. */
  const offer = (subscriber: Subscriber, item: LogItem) => {
    subscriber.waiting.push(item)
    const wake = subscriber.wake
    if (wake === undefined) return
    subscriber.wake = undefined
    subscriber.handed = 1
    wake()
  }

  const deliver = (subscriber: Subscriber, frame: Frame) => {
    if (subscriber.taskId !== undefined && subscriber.taskId !== frame.taskId) return
    if (subscriber.waiting.length - subscriber.handed >= config.subscriberBuffer) {
      subscriber.missed++
      return
    }
    announceLoss(subscriber)
    offer(subscriber, { _tag: "Frame", frame })
  }

  /** Queues the `Lagged` notice for frames the subscriber missed since its last item, if any. */
  const announceLoss = (subscriber: Subscriber) => {
    if (subscriber.missed === 0) return
    const missed = subscriber.missed
    subscriber.missed = 0
    offer(subscriber, { _tag: "Lagged", missed })
  }

  const evictOldest = () => {
    ring[start] = undefined
    bytes -= sizes[start]!
    start = (start + 1) % config.capacity
    size--
  }

  const hold = (frame: Frame) => {
    if (size === config.capacity) evictOldest()
    const at = (start + size) % config.capacity
    ring[at] = frame
    sizes[at] = frameBytes(frame)
    bytes += sizes[at]!
    size++
    // A frame larger than the whole budget is not held either: live readers still get it.
    while (size > 0 && bytes > config.capacityBytes) evictOldest()
  }

  /** Holds the frame for replay and hands it to the subscribers: the moment it becomes visible. */
  const show = (frame: Frame) => {
    visibleNext = frame.id + 1
    hold(frame)
    for (const subscriber of subscribers) deliver(subscriber, frame)
  }

  const stage = (taskId: string, contextId: string, event: TaskEvent): Frame => {
    const frame: Frame = { id: nextId++, taskId, contextId, event }
    if (journal.durable) journal.frame(frame)
    else show(frame)
    return frame
  }

  const publish = journal.durable
    ? (taskId: string, contextId: string, event: TaskEvent) =>
      Effect.suspend(() => {
        // Readers see it once committed (`onCommitted`); the writer goes on unless the store lags.
        const frame = stage(taskId, contextId, event)
        return journal.backlogged() ? Effect.as(journal.commit, frame) : Effect.succeed(frame)
      })
    : (taskId: string, contextId: string, event: TaskEvent) => Effect.sync(() => stage(taskId, contextId, event))
  journal.onCommitted((frames) => {
    for (const frame of frames) show(frame)
  })

  const lastId = () => Effect.sync(() => visibleNext - 1)

  /**
   * With a store, the frames a cursor older than the buffer missed are read back from it (the
   * newest `storeReplayFrames` of them): the `Gap` then names only what retention deleted.
   */
  const fromStore = (subscriber: Subscriber, after: number | undefined, taskId: string | undefined) => {
    const first = subscriber.waiting[0]
    if (!journal.durable || after === undefined || first?._tag !== "Gap" || after >= visibleNext) return Effect.void
    const before = first.firstAvailableId
    const limit = storeReplayFrames(config)
    return Effect.map(journal.frames(after, before, limit), (older) => {
      const oldest = older[0]?.id ?? before
      const items: Array<LogItem> = oldest > after + 1 && (older.length === limit || older.length === 0 && before > after + 1)
        ? [{ _tag: "Gap", firstAvailableId: oldest }]
        : []
      for (const frame of older) if (taskId === undefined || frame.taskId === taskId) items.push({ _tag: "Frame", frame })
      subscriber.waiting = [...items, ...subscriber.waiting.slice(1)]
    })
  }

  const open = (options: SubscribeOptions): Effect.Effect<Subscription, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.sync(() => {
        // Registration and the replay snapshot are one synchronous step: no overlap, no hole.
        const plan = replayPlan(buffered(), visibleNext, options.after)
        const subscriber: Subscriber = { taskId: options.taskId, waiting: [], handed: 0, wake: undefined, missed: 0 }
        if (plan.gap !== undefined) subscriber.waiting.push({ _tag: "Gap", firstAvailableId: plan.gap })
        for (const frame of plan.frames) {
          if (options.taskId === undefined || frame.taskId === options.taskId) subscriber.waiting.push({ _tag: "Frame", frame })
        }
        if (closed) subscriber.waiting.push({ _tag: "Closed" })
        else subscribers.add(subscriber)
        return subscriber
      }).pipe(Effect.tap((subscriber) => fromStore(subscriber, options.after, options.taskId))),
      (subscriber) =>
        Effect.sync(() => {
          subscribers.delete(subscriber)
          subscriber.wake = undefined
        })
    ).pipe(Effect.map((subscriber): Subscription => ({
      take: () => {
        const items = subscriber.waiting
        if (items.length > 0) subscriber.waiting = []
        subscriber.handed = 0
        return items
      },
      await: (wake) => {
        if (subscriber.waiting.length > 0) {
          wake()
          return () => {}
        }
        subscriber.wake = wake
        return () => {
          if (subscriber.wake === wake) subscriber.wake = undefined
        }
      }
    })))

  /** One subscription's waiting items per pull, waiting when there are none. */
  const pullOf = (subscription: Subscription): Effect.Effect<Chunk.Chunk<LogItem>> =>
    Effect.suspend(() => {
      const items = subscription.take()
      if (items.length > 0) return Effect.succeed(Chunk.unsafeFromArray(items))
      return Effect.async<Chunk.Chunk<LogItem>>((resume) => {
        const cancel = subscription.await(() => resume(Effect.sync(() => Chunk.unsafeFromArray(subscription.take()))))
        return Effect.sync(cancel)
      })
    })

  const subscribe = (options: SubscribeOptions): Stream.Stream<LogItem> =>
    Stream.unwrapScoped(Effect.map(open(options), (subscription) =>
      Stream.repeatEffectChunk(pullOf(subscription)).pipe(Stream.takeUntil((item) => item._tag === "Closed"))))

  const close = () =>
    Effect.sync(() => {
      if (closed) return
      closed = true
      for (const subscriber of subscribers) {
        announceLoss(subscriber)
        offer(subscriber, { _tag: "Closed" })
      }
      subscribers.clear()
    })

  const subscriberCount = () => Effect.sync(() => subscribers.size)

  return EventLog.of({ publish, stage, lastId, subscribe, open, close, subscriberCount })
}
