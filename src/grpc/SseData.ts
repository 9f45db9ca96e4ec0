/**
 * The `data` of each event of an SSE body, as the door's streaming methods write it for the
 * HTTP+JSON binding (../http/Sse.ts): `id:` lines, `:comment` lines (heartbeats, gap and lag
 * notices) and `data: <StreamResponse>` lines, each event closed by a blank line. The gRPC binding
 * sends each data as one `StreamResponse` message, so it reads the same stream the HTTP
 * bindings write instead of a second encoder of the same events.
 *
 * Incremental: bytes are decoded as they come (a character split across chunks included) and
 * an event is emitted at its blank line. An event the stream ends before closing is dropped, as
 * an SSE reader does.
 */
import { Option, Stream } from "effect"

/** The data lines of the event being read (a `data:` event may span several). */
type Pending = ReadonlyArray<string>

const step = (pending: Pending, line: string): readonly [Pending, Option.Option<string>] => {
  if (line === "") return [[], pending.length === 0 ? Option.none() : Option.some(pending.join("\n"))]
  if (line.startsWith("data:")) {
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    return [[...pending, value], Option.none()]
  }
  // `id:`, `event:`, `retry:` and comments say nothing a gRPC client reads.
  return [pending, Option.none()]
}

export const sseData = <E, R>(body: Stream.Stream<Uint8Array, E, R>): Stream.Stream<string, E, R> =>
  body.pipe(
    Stream.decodeText(),
    Stream.splitLines,
    Stream.mapAccum<Pending, string, Option.Option<string>>([], step),
    Stream.filterMap((data) => data)
  )
