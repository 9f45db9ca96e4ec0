/**
 * A fake OpenAI-compatible provider on 127.0.0.1 (port 0) for driver tests: it records every
 * request (method, path, headers, parsed body) and answers from a script of replies, in order
 * (the last one repeats): a JSON completion, an SSE stream of chunks (with a gap between events,
 * each event's send time recorded), or an HTTP error; any reply can be delayed.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body parsed as JSON, else the raw text. */
  readonly body: any
  readonly raw: string
}

export type Reply =
  | { readonly kind: "json"; readonly body: unknown; readonly status?: number; readonly delayMs?: number }
  /** `events`: objects are sent as `data: <json>`, strings verbatim after `data: `; `[DONE]` is appended. */
  | { readonly kind: "stream"; readonly events: ReadonlyArray<unknown>; readonly gapMs?: number; readonly delayMs?: number; readonly done?: boolean }
  | { readonly kind: "error"; readonly status: number; readonly body: string; readonly delayMs?: number }

export interface FakeProvider {
  /** Base URL as MURMUR_INFERENCE_ENDPOINT takes it: `http://127.0.0.1:<port>/v1`. */
  readonly url: string
  readonly port: number
  readonly requests: Array<RecordedRequest>
  /** When each event of the streamed replies was written (ms since epoch), in order. */
  readonly sentAt: Array<number>
  /** Replaces the script and forgets what was recorded. */
  readonly script: (replies: ReadonlyArray<Reply>) => void
  readonly close: () => Promise<void>
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const parse = (raw: string): unknown => {
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

export const startFakeProvider = async (initial: ReadonlyArray<Reply> = []): Promise<FakeProvider> => {
  let replies = [...initial]
  let served = 0
  const requests: Array<RecordedRequest> = []
  const sentAt: Array<number> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", async () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: parse(raw), raw })
      const reply = replies[Math.min(served++, replies.length - 1)]
      if (reply === undefined) {
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "fake provider: no scripted reply" } }))
        return
      }
      if (reply.delayMs !== undefined) await sleep(reply.delayMs)
      if (res.destroyed) return
      switch (reply.kind) {
        case "json":
          res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.body))
          return
        case "error":
          res.writeHead(reply.status, { "content-type": "application/json" }).end(reply.body)
          return
        case "stream": {
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
          const events = [...reply.events, ...(reply.done === false ? [] : ["[DONE]"])]
          for (const [index, event] of events.entries()) {
            if (index > 0 && reply.gapMs !== undefined) await sleep(reply.gapMs)
            if (res.destroyed) return
            res.write(`data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`)
            sentAt.push(Date.now())
          }
          res.end()
        }
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    sentAt,
    script: (next) => {
      replies = [...next]
      served = 0
      requests.length = 0
      sentAt.length = 0
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

// ---------------------------------------------------------------------------------------------
// Reply bodies in OpenAI's shapes
// ---------------------------------------------------------------------------------------------

export interface ToolCallReply {
  readonly id: string
  readonly name: string
  /** Sent as the JSON-string `arguments`. */
  readonly arguments: string
}

export const completion = (fields: {
  readonly text?: string | null
  readonly toolCalls?: ReadonlyArray<ToolCallReply>
  readonly finish?: string
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number }
}): unknown => ({
  id: "chatcmpl-fake",
  object: "chat.completion",
  created: 0,
  model: "fake-model",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: fields.text ?? null,
      ...(fields.toolCalls === undefined ? {} : {
        tool_calls: fields.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }))
      })
    },
    finish_reason: fields.finish ?? "stop"
  }],
  ...(fields.usage === undefined ? {} : { usage: { ...fields.usage, total_tokens: fields.usage.prompt_tokens + fields.usage.completion_tokens } })
})

/** One `chat.completion.chunk` with the given delta (and finish reason). */
export const chunk = (delta: Record<string, unknown>, finish: string | null = null): unknown => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 0,
  model: "fake-model",
  choices: [{ index: 0, delta, finish_reason: finish }]
})

/** The trailing usage chunk `stream_options.include_usage` asks for. */
export const usageChunk = (prompt: number, completionTokens: number): unknown => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 0,
  model: "fake-model",
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens }
})
