/**
 * Server-sent events framing: `id:`, `event:` and one `data:` line per line of data, closed by a
 * blank line (after `@effect/experimental`'s `Sse.encoder`), plus comment lines for heartbeats.
 * Our data is single-line JSON, so a frame is always one `data:` line.
 *
 * `sseStream` is the body of every EventLog-fed stream: one pull per wake-up takes everything
 * waiting in the subscription, encodes it (a frame's bytes are encoded once, on the frame, and
 * shared by all readers) and yields it as one chunk, so the response writer makes one write per
 * burst of frames, and waits for `drain` before the next pull (backpressure: while it waits,
 * the EventLog counts what the subscriber cannot take, and the next pull starts with `lagged`).
 */
import { Chunk, type Duration, Effect, Option, Schedule, type Scope, Stream } from "effect"
import type { LogItem, Subscription } from "../services/EventLog.js"

export const sseFrame = (options: { readonly id?: number; readonly event?: string; readonly data: string }): string => {
  let out = ""
  if (options.id !== undefined) out += `id: ${options.id}\n`
  if (options.event !== undefined) out += `event: ${options.event}\n`
  for (const line of options.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`
  return out + "\n"
}

export const sseComment = (text: string): string => `:${text.replace(/[\r\n]+/g, " ")}\n\n`

export const heartbeatFrame = sseComment("heartbeat")

/** Merges heartbeat comments into a frame stream; the stream's end ends the merge. */
export const withHeartbeat = <E>(frames: Stream.Stream<string, E>, every: Duration.DurationInput): Stream.Stream<string, E> =>
  Stream.merge(frames, Stream.fromSchedule(Schedule.spaced(every)).pipe(Stream.as(heartbeatFrame)), {
    haltStrategy: "left"
  })

export const sseHeaders = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
} as const

const heartbeatBytes = Buffer.from(heartbeatFrame)

export interface SseSource {
  /** The EventLog subscription (registered until the stream ends). */
  readonly open: Effect.Effect<Subscription, never, Scope.Scope>
  /** Written before any item (a `connection-ack`, an A2A `Task`). */
  readonly first?: string | undefined
  /** An item's bytes, or `undefined` when this stream does not show it. */
  readonly encode: (item: LogItem) => Uint8Array | string | undefined
  /** Whether the stream ends after this item (written first, if it has bytes). */
  readonly ends: (item: LogItem) => boolean
  /** A `:heartbeat` comment goes out every this many ms (as `withHeartbeat`'s spaced schedule). */
  readonly heartbeatMs: number
}

/** An EventLog subscription as SSE bytes, one chunk per burst of items (see the module doc). */
export const sseStream = (source: SseSource): Stream.Stream<Uint8Array> =>
  Stream.unwrapScoped(Effect.map(source.open, (subscription) => {
    let first = source.first
    let done = false
    let nextBeat = Date.now() + source.heartbeatMs
    let beatDue = false

    /** Everything there is to write now, as one buffer; `undefined` when there is nothing. */
    const collect = (): Uint8Array | undefined => {
      const parts: Array<Uint8Array> = []
      if (first !== undefined) {
        parts.push(Buffer.from(first))
        first = undefined
      }
      const now = Date.now()
      if (beatDue || now >= nextBeat) {
        parts.push(heartbeatBytes)
        beatDue = false
        nextBeat = now + source.heartbeatMs
      }
      for (const item of subscription.take()) {
        const bytes = source.encode(item)
        if (bytes !== undefined) parts.push(typeof bytes === "string" ? Buffer.from(bytes) : bytes)
        if (source.ends(item)) {
          done = true
          break
        }
      }
      if (parts.length === 0) return undefined
      return parts.length === 1 ? parts[0] : Buffer.concat(parts)
    }

    const pull: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<never>> = Effect.suspend(() => {
      if (done) return Effect.fail(Option.none())
      const bytes = collect()
      if (bytes !== undefined) return Effect.succeed(Chunk.of(bytes))
      // Nothing waiting: sleep until an item arrives or the next heartbeat is due.
      return Effect.async<Chunk.Chunk<Uint8Array>, Option.Option<never>>((resume) => {
        let cancel = () => {}
        const timer = setTimeout(() => {
          beatDue = true
          wake()
        }, Math.max(0, nextBeat - Date.now()))
        function wake() {
          clearTimeout(timer)
          cancel()
          resume(pull)
        }
        cancel = subscription.await(wake)
        return Effect.sync(() => {
          clearTimeout(timer)
          cancel()
        })
      })
    })
    return Stream.repeatEffectChunkOption(pull)
  }))

/** A stream body of one SSE frame (a refusal, a snapshot): it ends once written. */
export const sseOnce = (frame: string): Stream.Stream<Uint8Array> => Stream.make(Buffer.from(frame))
