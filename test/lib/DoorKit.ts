/**
 * Extra helpers for the door's integration tests, next to `Door.ts`: SSE calls over `node:http`
 * on a connection of their own (no pooling, so closing one never makes the client open another
 * connection that would hold the server's shutdown), reading events without closing the stream,
 * and raw socket exchanges for transport tests.
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http"
import { connect } from "node:net"
import { type SseEvent, takeSseEvents } from "./Door.js"

let nextId = 1_000_000

export const A2A_HEADERS = { "a2a-version": "0.3" } as const

/** Parses SSE blocks from a Node response (comments included) until it ends. */
export async function* nodeSseEvents(response: IncomingMessage): AsyncGenerator<SseEvent> {
  let buffer = ""
  response.setEncoding("utf8")
  for await (const chunk of response) {
    const parsed = takeSseEvents(buffer + (chunk as string))
    buffer = parsed.rest
    yield* parsed.events
  }
}

export interface NodeStream {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly response: IncomingMessage
  readonly events: AsyncGenerator<SseEvent>
  /** Drops the connection. */
  readonly destroy: () => void
}

/** A JSON-RPC call whose answer is read as SSE, on a fresh connection. */
export const nodeStream = (
  url: string,
  method: string,
  params: unknown = {},
  options: { readonly id?: string | number; readonly headers?: Record<string, string> } = {}
): Promise<NodeStream> =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: options.id ?? nextId++, method, params })
    const request = httpRequest(url, {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...options.headers }
    }, (response) => {
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        response,
        events: nodeSseEvents(response),
        destroy: () => {
          response.destroy()
          request.destroy()
        }
      })
    })
    request.on("error", reject)
    request.end(body)
  })

/**
 * Reads events without closing the stream, until `until` holds for one (included) or the stream
 * ends; fails after `timeoutMs`.
 */
export const readUntil = async (
  events: AsyncGenerator<SseEvent>,
  until: (event: SseEvent) => boolean = () => false,
  timeoutMs = 5_000
): Promise<Array<SseEvent>> => {
  const out: Array<SseEvent> = []
  const deadline = Date.now() + timeoutMs
  while (true) {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), Math.max(1, deadline - Date.now()))
    })
    const next = await Promise.race([events.next(), timeout])
    clearTimeout(timer)
    if (next === "timeout") {
      throw new Error(`stream did not ${until.length > 0 ? "produce the awaited event" : "end"} within ${timeoutMs} ms; got ${JSON.stringify(out)}`)
    }
    if (next.done === true) return out
    out.push(next.value)
    if (until(next.value)) return out
  }
}

/** The JSON of an event's data. */
export const dataOf = (event: SseEvent): any => JSON.parse(event.data ?? "null")

/** Sends raw bytes on a fresh socket; resolves with all bytes received when the server closes it or after `waitMs`. */
export const rawExchange = (
  url: string,
  chunks: ReadonlyArray<string | { readonly delayMs: number }>,
  waitMs = 3_000
): Promise<{ readonly text: string; readonly closedByServer: boolean; readonly elapsedMs: number }> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const started = Date.now()
    const socket = connect(Number(port), hostname)
    let text = ""
    let settled = false
    const finish = (closedByServer: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ text, closedByServer, elapsedMs: Date.now() - started })
    }
    const timer = setTimeout(() => finish(false), waitMs)
    socket.setEncoding("utf8")
    socket.on("data", (data: string) => {
      text += data
    })
    socket.on("end", () => finish(true))
    socket.on("close", () => finish(true))
    socket.on("error", (error) => {
      if (text.length > 0) finish(true)
      else if (!settled) {
        settled = true
        clearTimeout(timer)
        reject(error)
      }
    })
    socket.on("connect", async () => {
      for (const chunk of chunks) {
        if (settled) return
        if (typeof chunk === "string") socket.write(chunk)
        else await new Promise((r) => setTimeout(r, chunk.delayMs))
      }
    })
  })
