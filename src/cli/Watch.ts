/**
 * `watch <url>`: follows a door's `stream/watch` and prints its frames readably (WatchRenderer),
 * or with `--json` as one JSON line each. When the connection drops before `capsule-closed` it
 * reconnects with `Last-Event-ID` (backoff 100 ms doubling to 2 s) and skips any frame it has
 * already shown; after 30 s without a connection it gives up (exit 1). `capsule-closed` ends it
 * with exit 0, and so does SIGINT. Connection notices go to stderr, frames to stdout.
 */
import { Args, Command, Options } from "@effect/cli"
import { HttpClient, HttpClientRequest, Terminal } from "@effect/platform"
import { Clock, Console, Data, Effect, Option, Stream } from "effect"
import { DoorClientLive } from "../layers/DoorClient.js"
import { authToken } from "./AuthToken.js"
import { exitWith } from "./Exit.js"
import { makeSseDecoder } from "./SseDecoder.js"
import { defaultRenderOptions, finish, initialState, jsonLine, render, type RenderOptions, truncate, type WatchFrame } from "./WatchRenderer.js"

export class WatchError extends Data.TaggedError("WatchError")<{
  /** `Refused`: the URL or the answer says this is not a door's `stream/watch`; `Unreachable`: gave up reconnecting. */
  readonly reason: "Refused" | "Unreachable"
  readonly message: string
}> {}

export interface RetryPolicy {
  readonly initialMs: number
  readonly maxMs: number
  /** Give up after this long without a connection. */
  readonly giveUpMs: number
  /** A connection silent this long (heartbeats come every 15 s) counts as dropped. */
  readonly idleMs: number
}

export const defaultRetry: RetryPolicy = { initialMs: 100, maxMs: 2_000, giveUpMs: 30_000, idleMs: 45_000 }

export interface WatchOptions {
  /** Print frames as JSON lines instead of rendering them. */
  readonly json: boolean
  readonly render?: RenderOptions
  /** Start after this event id instead of with everything the door holds. */
  readonly lastEventId?: number | undefined
  readonly retry?: Partial<RetryPolicy>
  /** Writes frame output (text that may end mid-line). */
  readonly out: (text: string) => Effect.Effect<void>
  /** Writes one connection notice line. */
  readonly notice: (line: string) => Effect.Effect<void>
}

/** `http://host:port/`, `host:port` or `host:port/path` as an absolute URL (http when no scheme). */
export const doorUrl = (input: string): Option.Option<string> => {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(input) ? input : `http://${input}`
  try {
    const url = new URL(text)
    return url.protocol === "http:" || url.protocol === "https:" ? Option.some(url.toString()) : Option.none()
  } catch {
    return Option.none()
  }
}

type Outcome =
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Dropped"; readonly connected: boolean; readonly reason: string }

const dropped = (connected: boolean, reason: string): Outcome => ({ _tag: "Dropped", connected, reason })

const reasonOf = (cause: unknown): string => {
  if (typeof cause === "object" && cause !== null) {
    const inner = "cause" in cause ? (cause as { cause: unknown }).cause : undefined
    if (inner instanceof Error) return (inner as NodeJS.ErrnoException).code ?? inner.message
    if (cause instanceof Error) return cause.message
  }
  return String(cause)
}

/** The `error` of a JSON-RPC error response, if the body is one. */
const jsonRpcError = (body: string): { readonly code: number; readonly message: string } | undefined => {
  try {
    const error = JSON.parse(body)?.error
    return typeof error?.code === "number" ? { code: error.code, message: String(error.message) } : undefined
  } catch {
    return undefined
  }
}

let nextRequestId = 1

/** Follows `stream/watch` at `input` until `capsule-closed`; fails when refused or unreachable. */
export const watch = Effect.fn("Watch.watch")(function*(input: string, options: WatchOptions) {
  const url = yield* Option.match(doorUrl(input), {
    onNone: () => Effect.fail(new WatchError({ reason: "Refused", message: `not a door URL: ${input} (expected http://host:port/ or host:port)` })),
    onSome: Effect.succeed
  })
  const client = yield* HttpClient.HttpClient
  const retry = { ...defaultRetry, ...options.retry }
  const renderOptions = options.render ?? defaultRenderOptions
  let lastId = options.lastEventId
  let renderState = initialState

  /** Shows a frame unless it was shown before; false once the session closed. */
  const show = (frame: WatchFrame): Effect.Effect<boolean> => {
    if (frame.id !== undefined) {
      if (lastId !== undefined && frame.id <= lastId) return Effect.succeed(true)
      lastId = frame.id
    }
    if (options.json) return Effect.as(options.out(jsonLine(frame)), frame.event !== "capsule-closed")
    const rendered = render(renderState, frame, renderOptions)
    renderState = rendered.state
    return Effect.as(rendered.output === "" ? Effect.void : options.out(rendered.output), !rendered.closed)
  }

  const refused = (message: string) => Effect.fail(new WatchError({ reason: "Refused", message }))

  let failingSince: number | undefined
  let delay = retry.initialMs
  let outage = false
  const onConnected = Effect.suspend(() => {
    const wasOut = outage
    outage = false
    failingSince = undefined
    delay = retry.initialMs
    return wasOut
      ? options.notice(`reconnected to ${url}${lastId === undefined ? "" : `; resuming after event ${lastId}`}`)
      : options.notice(`watching ${url}`)
  })

  // The request and its stream are one effect so that interruption aborts the connection.
  const once: Effect.Effect<Outcome, WatchError> = Effect.gen(function*() {
    const request = HttpClientRequest.post(url).pipe(
      HttpClientRequest.setHeaders({ accept: "text/event-stream", ...(lastId === undefined ? {} : { "last-event-id": String(lastId) }) }),
      HttpClientRequest.bodyText(JSON.stringify({ jsonrpc: "2.0", id: nextRequestId++, method: "stream/watch", params: {} }), "application/json")
    )
    const response = yield* client.execute(request).pipe(Effect.timeout(retry.idleMs), Effect.either)
    if (response._tag === "Left") return dropped(false, reasonOf(response.left))
    const { headers, status } = response.right
    if (status >= 500) return dropped(false, `HTTP ${status}`)
    if (status !== 200 || !(headers["content-type"] ?? "").startsWith("text/event-stream")) {
      const body = yield* response.right.text.pipe(Effect.orElseSucceed(() => ""))
      const rpcError = jsonRpcError(body)
      return yield* rpcError !== undefined
        ? refused(`${url} refused stream/watch: ${rpcError.code} ${rpcError.message}`)
        : refused(`${url} is not a door's stream/watch (HTTP ${status}${body === "" ? "" : `: ${truncate(body, 120)}`})`)
    }
    yield* onConnected
    const decoder = makeSseDecoder()
    let closed = false
    const ended = yield* response.right.stream.pipe(
      Stream.decodeText(),
      Stream.timeoutFail(() => new Error(`no data for ${retry.idleMs} ms`), retry.idleMs),
      Stream.mapConcat(decoder.feed),
      Stream.runForEachWhile((frame) =>
        Effect.map(show(frame), (more) => {
          closed = !more
          return more
        })
      ),
      Effect.either
    )
    if (closed) return { _tag: "Closed" } as const
    return dropped(true, ended._tag === "Left" ? reasonOf(ended.left) : "the door ended the stream")
  })

  const loop = Effect.gen(function*() {
    while (true) {
      const outcome = yield* once
      if (outcome._tag === "Closed") return
      const now = yield* Clock.currentTimeMillis
      failingSince ??= now
      if (now - failingSince >= retry.giveUpMs) {
        return yield* new WatchError({
          reason: "Unreachable",
          message: `gave up on ${url} after ${Math.round(retry.giveUpMs / 1000)} s without a connection (${outcome.reason})`
        })
      }
      if (!outage) {
        outage = true
        yield* options.notice(
          outcome.connected
            ? `connection to ${url} lost (${outcome.reason}); reconnecting${lastId === undefined ? "" : ` after event ${lastId}`}`
            : `cannot connect to ${url} (${outcome.reason}); retrying`
        )
      }
      yield* Effect.sleep(delay)
      delay = Math.min(delay * 2, retry.maxMs)
    }
  })

  return yield* loop.pipe(
    Effect.onInterrupt(() => options.json ? Effect.void : Effect.suspend(() => options.out(finish(renderState))))
  )
})

const url = Args.text({ name: "url" }).pipe(Args.withDescription("The door: http://host:port/ or host:port"))
const json = Options.boolean("json").pipe(Options.withDescription("Print each frame as one JSON line {id, event, data}"))
const width = Options.integer("width").pipe(Options.withDefault(defaultRenderOptions.width), Options.withDescription("Most characters of a tool result shown"))
const fullIds = Options.boolean("full-ids").pipe(Options.withDescription("Print task ids whole"))
const lastEventId = Options.integer("last-event-id").pipe(
  Options.optional,
  Options.withDescription("Start after this event id (default: everything the door still holds)")
)

export const watchCommand = Command.make("watch", { url, json, width, fullIds, lastEventId, authToken }, (options) =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    yield* watch(options.url, {
      json: options.json,
      render: { width: Math.max(8, options.width), fullIds: options.fullIds },
      lastEventId: Option.getOrUndefined(options.lastEventId),
      out: (text) => Effect.orDie(terminal.display(text)),
      notice: (line) => Console.error(line)
    }).pipe(
      Effect.provide(DoorClientLive(Option.getOrUndefined(options.authToken))),
      Effect.catchTag("WatchError", (error) => Console.error(`watch: ${error.message}`).pipe(Effect.zipRight(exitWith(1))))
    )
  })).pipe(Command.withDescription("Follow a door's stream/watch and print its frames (status lines, streamed text, tool results)"))
