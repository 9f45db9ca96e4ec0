/**
 * Server-sent events for clients of the door, parsed by `eventsource-parser` (WHATWG "event
 * stream interpretation"): text arrives in arbitrary chunks (a line, a frame or a CRLF may be
 * split anywhere); `feed` returns the events completed so far. Comments (`:heartbeat`) are
 * dropped, `id:` is kept per event (only when the event's block has one, and only a number, as
 * the door's ids are), and `event` defaults to `message`.
 */
import { createParser } from "eventsource-parser"
import type { WatchFrame } from "./WatchRenderer.js"

export interface SseDecoder {
  /** Takes the next chunk of decoded text; returns the events it completed. */
  readonly feed: (chunk: string) => ReadonlyArray<WatchFrame>
}

export const makeSseDecoder = (): SseDecoder => {
  let completed: Array<WatchFrame> = []
  const parser = createParser({
    onEvent: ({ data, event, id }) => {
      completed.push({ id: id !== undefined && /^\d+$/.test(id) ? Number(id) : undefined, event: event ?? "message", data })
    }
  })
  return {
    feed: (chunk) => {
      parser.feed(chunk)
      const out = completed
      completed = []
      return out
    }
  }
}
