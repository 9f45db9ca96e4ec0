/**
 * The client side of a door that `watch`, `send` and `chat` share: the door's URL, JSON-RPC calls,
 * and `follow`, which reads `stream/watch` (reference shapes) frame by frame. When the connection
 * drops before the caller is done it reconnects with `Last-Event-ID` (backoff 100 ms doubling to
 * 2 s) and skips any frame already handed over; after 30 s without a connection it gives up.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Data, Effect, Option, Stream } from "effect"
import { makeSseDecoder } from "./SseDecoder.js"
import { truncate, type WatchFrame } from "./WatchRenderer.js"

export class WatchError extends Data.TaggedError("WatchError")<{
  /** `Refused`: the URL or the answer says this is not a door (or it refused the call); `Unreachable`: gave up reconnecting. */
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

/** The door URL, or a `Refused` naming what was expected. */
export const requireDoorUrl = (input: string): Effect.Effect<string, WatchError> =>
  Option.match(doorUrl(input), {
    onNone: () => Effect.fail(new WatchError({ reason: "Refused", message: `not a door URL: ${input} (expected http://host:port/ or host:port)` })),
    onSome: Effect.succeed
  })

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

const TOKEN_HINT = "give it with --auth-token-file PATH (mode 0600) or $CAPSULE_RUNTIME_AUTH_TOKEN"

/**
 * Why the door did not take `method`, in one line: its JSON-RPC error; a 401 or 403 named as
 * such with what supplies the token (the door's own words after it); else "not a door".
 */
export const refusalOf = (url: string, method: string, status: number, body: string, notA = "a door"): string => {
  const rpcError = jsonRpcError(body)
  if (rpcError !== undefined) return `${url} refused ${method}: ${rpcError.code} ${rpcError.message}`
  let said: { readonly message?: unknown; readonly scope?: unknown } = {}
  try {
    said = JSON.parse(body) ?? {}
  } catch {
    said = {}
  }
  const detail = typeof said.message === "string" ? ` (the door says: ${said.message})` : ""
  if (status === 401) return `${url} refused ${method}: HTTP 401, the door wants a bearer token${detail}; ${TOKEN_HINT}`
  if (status === 403) {
    const scope = typeof said.scope === "string" ? ` the '${said.scope}' scope` : " the scope this call needs"
    return `${url} refused ${method}: HTTP 403, the token given lacks${scope}${detail}; ask the door's operator for a token that has it`
  }
  return `${url} is not ${notA} (HTTP ${status}${body === "" ? "" : `: ${truncate(body, 120)}`})`
}

let nextRequestId = 1

const rpcRequest = (url: string, method: string, params: unknown) =>
  HttpClientRequest.post(url).pipe(
    HttpClientRequest.bodyText(JSON.stringify({ jsonrpc: "2.0", id: nextRequestId++, method, params }), "application/json")
  )

/** One JSON-RPC call in the reference dialect; its `result`, or a `Refused` naming the error. */
export const call = Effect.fn("DoorClient.call")(function*(url: string, method: string, params: unknown) {
  const client = yield* HttpClient.HttpClient
  const response = yield* client.execute(rpcRequest(url, method, params)).pipe(
    Effect.timeout(defaultRetry.idleMs),
    Effect.mapError((cause) => new WatchError({ reason: "Unreachable", message: `cannot reach ${url} (${reasonOf(cause)})` }))
  )
  const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
  if (jsonRpcError(body) !== undefined || response.status === 401 || response.status === 403) {
    return yield* new WatchError({ reason: "Refused", message: refusalOf(url, method, response.status, body) })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    parsed = undefined
  }
  const result = typeof parsed === "object" && parsed !== null && "result" in parsed ? (parsed as { result: unknown }).result : undefined
  if (result === undefined) {
    return yield* new WatchError({ reason: "Refused", message: `${url} is not a door (HTTP ${response.status}${body === "" ? "" : `: ${truncate(body, 120)}`})` })
  }
  return result
})

export interface FollowOptions {
  /** Start after this event id instead of with everything the door holds. */
  readonly lastEventId?: number | undefined
  readonly retry?: Partial<RetryPolicy> | undefined
  /** Takes each new frame once; `false` ends the follow. */
  readonly onFrame: (frame: WatchFrame) => Effect.Effect<boolean>
  /** Writes one connection notice line. */
  readonly notice: (line: string) => Effect.Effect<void>
  /** The first connection's notice (default `watching <url>`); `null`: none. */
  readonly connected?: string | null
}

type Outcome =
  | { readonly _tag: "Done" }
  | { readonly _tag: "Dropped"; readonly connected: boolean; readonly reason: string }

const dropped = (connected: boolean, reason: string): Outcome => ({ _tag: "Dropped", connected, reason })

/** Follows `stream/watch` at `url` (already a door URL) until `onFrame` says stop; fails when refused or unreachable. */
export const follow = Effect.fn("DoorClient.follow")(function*(url: string, options: FollowOptions) {
  const client = yield* HttpClient.HttpClient
  const retry = { ...defaultRetry, ...options.retry }
  let lastId = options.lastEventId

  /** Hands a frame over unless it was before; false once the caller is done. */
  const take = (frame: WatchFrame): Effect.Effect<boolean> => {
    if (frame.id !== undefined) {
      if (lastId !== undefined && frame.id <= lastId) return Effect.succeed(true)
      lastId = frame.id
    }
    return options.onFrame(frame)
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
    if (wasOut) return options.notice(`reconnected to ${url}${lastId === undefined ? "" : `; resuming after event ${lastId}`}`)
    return options.connected === null ? Effect.void : options.notice(options.connected ?? `watching ${url}`)
  })

  // The request and its stream are one effect so that interruption aborts the connection.
  const once: Effect.Effect<Outcome, WatchError> = Effect.gen(function*() {
    const request = rpcRequest(url, "stream/watch", {}).pipe(
      HttpClientRequest.setHeaders({ accept: "text/event-stream", ...(lastId === undefined ? {} : { "last-event-id": String(lastId) }) })
    )
    const response = yield* client.execute(request).pipe(Effect.timeout(retry.idleMs), Effect.either)
    if (response._tag === "Left") return dropped(false, reasonOf(response.left))
    const { headers, status } = response.right
    if (status >= 500) return dropped(false, `HTTP ${status}`)
    if (status !== 200 || !(headers["content-type"] ?? "").startsWith("text/event-stream")) {
      const body = yield* response.right.text.pipe(Effect.orElseSucceed(() => ""))
      return yield* refused(refusalOf(url, "stream/watch", status, body, "a door's stream/watch"))
    }
    yield* onConnected
    const decoder = makeSseDecoder()
    let done = false
    const ended = yield* response.right.stream.pipe(
      Stream.decodeText(),
      Stream.timeoutFail(() => new Error(`no data for ${retry.idleMs} ms`), retry.idleMs),
      Stream.mapConcat(decoder.feed),
      Stream.runForEachWhile((frame) =>
        Effect.map(take(frame), (more) => {
          done = !more
          return more
        })
      ),
      Effect.either
    )
    if (done) return { _tag: "Done" } as const
    return dropped(true, ended._tag === "Left" ? reasonOf(ended.left) : "the door ended the stream")
  })

  while (true) {
    const outcome = yield* once
    if (outcome._tag === "Done") return
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

/** The task id and context id a reference-shaped frame is about, when it names them. */
export const frameTask = (frame: WatchFrame): { readonly id: string | undefined; readonly contextId: string | undefined } => {
  try {
    const data = JSON.parse(frame.data)
    return {
      id: typeof data?.id === "string" ? data.id : undefined,
      contextId: typeof data?.context_id === "string" ? data.context_id : undefined
    }
  } catch {
    return { id: undefined, contextId: undefined }
  }
}

/** A `status` frame's state and message. */
export const frameStatus = (frame: WatchFrame): { readonly state: string; readonly message: string | undefined } | undefined => {
  if (frame.event !== "status") return undefined
  try {
    const status = JSON.parse(frame.data)?.status
    return typeof status?.state === "string" ? { state: status.state, message: typeof status.message === "string" ? status.message : undefined } : undefined
  } catch {
    return undefined
  }
}
