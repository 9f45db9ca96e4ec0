/**
 * The session's SSE buffer. Every frame gets the next id of one session-wide sequence (from 1)
 * and lands in a ring buffer of the last `capacity` frames, holding at most `capacityBytes` of
 * event text (the oldest frames go first; a cursor before them gets a `Gap`). A subscriber
 * registers and takes its replay snapshot in the same synchronous step, so replay and live
 * delivery never overlap or leave a hole. Each subscriber has a bounded queue: when a slow one
 * falls behind, the frames it cannot take are counted and it gets one `Lagged` item, in place,
 * before the next frame it receives and before `Closed`: no loss goes unannounced.
 */
import { Context, Effect, Layer, Queue, Stream } from "effect"
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
      break
  }
  return text + frameOverhead
}

export class EventLog extends Context.Tag("capsule-runtime/services/EventLog")<EventLog, {
  /** Appends a frame for a task and fans it out; returns it with its id. */
  readonly publish: (taskId: string, contextId: string, event: TaskEvent) => Effect.Effect<Frame>
  /** The id of the newest frame (0 before the first): a cursor for a later `subscribe`. */
  readonly lastId: () => Effect.Effect<number>
  /** Replay after the cursor (with a `Gap` first when frames were evicted), then live items. */
  readonly subscribe: (options: SubscribeOptions) => Stream.Stream<LogItem>
  /** Ends every subscription with `Closed` (session end); later subscribers get it at once. */
  readonly close: () => Effect.Effect<void>
  readonly subscriberCount: () => Effect.Effect<number>
}>() {
  static readonly layer = (config: Partial<EventLogConfig> = {}) =>
    Layer.sync(EventLog, () => makeEventLog({ ...defaultEventLogConfig, ...config }))
}

interface Subscriber {
  readonly queue: Queue.Queue<LogItem>
  readonly taskId: string | undefined
  readonly limit: number
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

export const makeEventLog = (config: EventLogConfig) => {
  const ring: Array<Frame | undefined> = new Array(config.capacity)
  const sizes: Array<number> = new Array(config.capacity).fill(0)
  let start = 0
  let size = 0
  let bytes = 0
  let nextId = 1
  let closed = false
  const subscribers = new Set<Subscriber>()

  const buffered = (): Array<Frame> => {
    const out: Array<Frame> = new Array(size)
    for (let i = 0; i < size; i++) out[i] = ring[(start + i) % config.capacity]!
    return out
  }

  const deliver = (subscriber: Subscriber, frame: Frame) => {
    if (subscriber.taskId !== undefined && subscriber.taskId !== frame.taskId) return
    const waiting = subscriber.queue.unsafeSize()
    if (waiting._tag === "Some" && waiting.value >= subscriber.limit) {
      subscriber.missed++
      return
    }
    announceLoss(subscriber)
    subscriber.queue.unsafeOffer({ _tag: "Frame", frame })
  }

  /** Queues the `Lagged` notice for frames the subscriber missed since its last item, if any. */
  const announceLoss = (subscriber: Subscriber) => {
    if (subscriber.missed === 0) return
    subscriber.queue.unsafeOffer({ _tag: "Lagged", missed: subscriber.missed })
    subscriber.missed = 0
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

  const publish = (taskId: string, contextId: string, event: TaskEvent) =>
    Effect.sync(() => {
      const frame: Frame = { id: nextId++, taskId, contextId, event }
      hold(frame)
      for (const subscriber of subscribers) deliver(subscriber, frame)
      return frame
    })

  const lastId = () => Effect.sync(() => nextId - 1)

  const subscribe = (options: SubscribeOptions): Stream.Stream<LogItem> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      // Room for the limit, a `Lagged` notice and its frame (delivery stops offering at the
      // limit), then a last `Lagged` and `Closed` at close: no notice is ever dropped.
      const queue = yield* Queue.dropping<LogItem>(config.subscriberBuffer + 3)
      const subscriber: Subscriber = { queue, taskId: options.taskId, limit: config.subscriberBuffer, missed: 0 }
      const initial = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const plan = replayPlan(buffered(), nextId, options.after)
          const items: Array<LogItem> = []
          if (plan.gap !== undefined) items.push({ _tag: "Gap", firstAvailableId: plan.gap })
          for (const frame of plan.frames) {
            if (options.taskId === undefined || frame.taskId === options.taskId) items.push({ _tag: "Frame", frame })
          }
          if (closed) items.push({ _tag: "Closed" })
          else subscribers.add(subscriber)
          return items
        }),
        () => Effect.sync(() => subscribers.delete(subscriber)).pipe(Effect.zipRight(Queue.shutdown(queue)))
      )
      const live = closed ? Stream.empty : Stream.fromQueue(queue)
      return Stream.concat(Stream.fromIterable(initial), live).pipe(
        Stream.takeUntil((item) => item._tag === "Closed")
      )
    }))

  const close = () =>
    Effect.sync(() => {
      if (closed) return
      closed = true
      for (const subscriber of subscribers) {
        announceLoss(subscriber)
        subscriber.queue.unsafeOffer({ _tag: "Closed" })
      }
      subscribers.clear()
    })

  const subscriberCount = () => Effect.sync(() => subscribers.size)

  return EventLog.of({ publish, lastId, subscribe, close, subscriberCount })
}
