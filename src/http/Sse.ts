/**
 * Server-sent events framing: `id:`, `event:` and one `data:` line per line of data, closed by a
 * blank line (after `@effect/experimental`'s `Sse.encoder`), plus comment lines for heartbeats.
 * Our data is single-line JSON, so a frame is always one `data:` line.
 */
import { type Duration, Schedule, Stream } from "effect"

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
