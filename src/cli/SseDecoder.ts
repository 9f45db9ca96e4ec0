/**
 * An incremental server-sent-events parser (WHATWG "event stream interpretation") for clients of
 * the door: text arrives in arbitrary chunks (a line, a frame or a CRLF may be split anywhere);
 * `feed` returns the events completed so far. Comments (`:heartbeat`) are dropped, `id:` is kept
 * per event (only when the event's block has one), and `event` defaults to `message`.
 */
import type { WatchFrame } from "./WatchRenderer.js"

export interface SseDecoder {
  /** Takes the next chunk of decoded text; returns the events it completed. */
  readonly feed: (chunk: string) => ReadonlyArray<WatchFrame>
}

export const makeSseDecoder = (): SseDecoder => {
  let buffer = ""
  let skipLf = false
  let data: Array<string> | undefined
  let event: string | undefined
  let id: number | undefined

  const field = (line: string, out: Array<WatchFrame>) => {
    if (line === "") {
      if (data !== undefined) out.push({ id, event: event ?? "message", data: data.join("\n") })
      data = undefined
      event = undefined
      id = undefined
      return
    }
    if (line.startsWith(":")) return
    const colon = line.indexOf(":")
    const name = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (name) {
      case "data":
        ;(data ??= []).push(value)
        break
      case "event":
        event = value
        break
      case "id":
        if (/^\d+$/.test(value)) id = Number(value)
        break
    }
  }

  return {
    feed: (chunk) => {
      const out: Array<WatchFrame> = []
      buffer += chunk
      let start = 0
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer.charCodeAt(i)
        if (skipLf) {
          skipLf = false
          if (c === 10) {
            start = i + 1
            continue
          }
        }
        if (c === 10 || c === 13) {
          field(buffer.slice(start, i), out)
          skipLf = c === 13
          start = i + 1
        }
      }
      buffer = buffer.slice(start)
      return out
    }
  }
}
