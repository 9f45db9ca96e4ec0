/**
 * `send <url> <text>`: one message to a door, its answer streamed as `watch` renders it, and the
 * exit status the task's state: 0 `completed`; 1 `failed`, `canceled` or `rejected`; 3
 * `input-required` (the task waits for an answer: `chat` gives it). The state is named on stderr
 * unless it is `completed`.
 *
 * A turn (`sendTurn`, shared with `chat`) is a `message/stream` in the reference dialect, read up
 * to the task's next terminal or `input-required` status. When the connection drops before that,
 * the turn goes on through `stream/watch` with `Last-Event-ID` (./DoorClient.ts), filtered to the
 * task, so no frame is shown twice and none is missed.
 */
import { randomUUID } from "node:crypto"
import { Args, Command } from "@effect/cli"
import { HttpClient, HttpClientRequest, Terminal } from "@effect/platform"
import { Console, Effect, Stream } from "effect"
import { authToken, doorClientFor } from "./AuthToken.js"
import { frameStatus, frameTask, follow, refusalOf, requireDoorUrl, type RetryPolicy, WatchError } from "./DoorClient.js"
import { exitWith } from "./Exit.js"
import { makeSseDecoder } from "./SseDecoder.js"
import { defaultRenderOptions, finish, initialState, render, type RenderOptions, shortId, type WatchFrame } from "./WatchRenderer.js"

/** The client's own ids for what it sends (the runtime mints the task and context ids). */
const clientId = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "")}`

export interface TurnOptions {
  readonly render?: RenderOptions | undefined
  readonly retry?: Partial<RetryPolicy> | undefined
  /** Continue this conversation. */
  readonly contextId?: string | undefined
  /** Answer this task's `input-required` prompt. */
  readonly taskId?: string | undefined
  /** Writes answer output (text that may end mid-line). */
  readonly out: (text: string) => Effect.Effect<void>
  /** Writes one connection notice line. */
  readonly notice: (line: string) => Effect.Effect<void>
  /** Told the task's id as soon as the door names it (for a cancel). */
  readonly started?: ((taskId: string) => Effect.Effect<void>) | undefined
}

export interface TurnOutcome {
  readonly taskId: string
  readonly contextId: string | undefined
  /** `completed`, `failed`, `canceled`, `rejected` or `input-required`. */
  readonly state: string
  readonly message: string | undefined
}

/** States that end a turn: the task is done, or it waits for the person. */
const endsTurn = (state: string) => ["completed", "failed", "canceled", "rejected", "input-required"].includes(state)

/** Sends `text` and streams the answer until the task ends or asks for input. */
export const sendTurn = Effect.fn("Send.sendTurn")(function*(url: string, text: string, options: TurnOptions) {
  const client = yield* HttpClient.HttpClient
  const renderOptions = options.render ?? defaultRenderOptions
  let renderState = initialState
  let taskId: string | undefined
  let contextId = options.contextId
  let lastId: number | undefined
  let ended: TurnOutcome | undefined

  /** Shows one of the task's frames; false once the turn is over. */
  const show = (frame: WatchFrame): Effect.Effect<boolean> =>
    Effect.gen(function*() {
      if (frame.id !== undefined) lastId = frame.id
      const names = frameTask(frame)
      if (taskId === undefined && names.id !== undefined) {
        taskId = names.id
        if (options.started !== undefined) yield* options.started(taskId)
      }
      if (names.id !== undefined && names.id !== taskId) return true
      contextId ??= names.contextId
      const rendered = render(renderState, frame, renderOptions)
      renderState = rendered.state
      if (rendered.output !== "") yield* options.out(rendered.output)
      const status = frameStatus(frame)
      if (status !== undefined && taskId !== undefined && endsTurn(status.state)) {
        ended = { taskId, contextId, state: status.state, message: status.message }
        return false
      }
      return true
    })

  const message = {
    messageId: clientId("msg"),
    role: "user",
    parts: [{ text }],
    ...(options.contextId === undefined ? {} : { contextId: options.contextId }),
    ...(options.taskId === undefined ? {} : { taskId: options.taskId })
  }
  const request = HttpClientRequest.post(url).pipe(
    HttpClientRequest.setHeaders({ accept: "text/event-stream" }),
    HttpClientRequest.bodyText(JSON.stringify({ jsonrpc: "2.0", id: clientId("req"), method: "message/stream", params: { message } }), "application/json")
  )
  const dropped = yield* Effect.gen(function*() {
    const response = yield* client.execute(request).pipe(
      Effect.mapError((cause) => new WatchError({ reason: "Unreachable", message: `cannot reach ${url} (${cause.message})` }))
    )
    if (!(response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      return yield* new WatchError({ reason: "Refused", message: refusalOf(url, "message/stream", response.status, body) })
    }
    const decoder = makeSseDecoder()
    const read = yield* response.stream.pipe(
      Stream.decodeText(),
      Stream.mapConcat(decoder.feed),
      Stream.runForEachWhile(show),
      Effect.either
    )
    return read._tag === "Left" ? read.left.message : "the door ended the stream"
  }).pipe(Effect.scoped)

  if (ended === undefined) {
    if (taskId === undefined) return yield* new WatchError({ reason: "Unreachable", message: `connection to ${url} lost before the door named the task (${dropped})` })
    yield* options.notice(`connection to ${url} lost (${dropped}); following task ${taskId} after event ${lastId ?? 0}`)
    yield* follow(url, {
      lastEventId: lastId ?? 0,
      retry: options.retry,
      notice: options.notice,
      connected: `reconnected to ${url}; resuming after event ${lastId ?? 0}`,
      onFrame: (frame) => frame.event === "capsule-closed" ? Effect.succeed(false) : show(frame)
    })
  }
  const tail = finish(renderState)
  if (tail !== "") yield* options.out(tail)
  if (ended === undefined) {
    return yield* new WatchError({ reason: "Unreachable", message: `the session at ${url} closed before task ${taskId} ended` })
  }
  return ended
})

/** The exit status for a task's state: 0 completed, 3 input-required, 1 otherwise. */
export const exitCodeOf = (state: string) => (state === "completed" ? 0 : state === "input-required" ? 3 : 1)

const url = Args.text({ name: "url" }).pipe(Args.withDescription("The door: http://host:port/ or host:port"))
const text = Args.text({ name: "text" }).pipe(Args.withDescription("The message"))

export const sendCommand = Command.make("send", { url, text, authToken }, (options) =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    const door = yield* requireDoorUrl(options.url)
    const outcome = yield* sendTurn(door, options.text, {
      out: (chunk) => Effect.orDie(terminal.display(chunk)),
      notice: (line) => Console.error(line)
    })
    if (outcome.state !== "completed") {
      yield* Console.error(`send: task ${shortId(outcome.taskId, { ...defaultRenderOptions, fullIds: true })} ended ${outcome.state}${outcome.message === undefined ? "" : `: ${outcome.message}`}`)
      return yield* exitWith(exitCodeOf(outcome.state))
    }
  }).pipe(
    Effect.provide(doorClientFor(options.authToken)),
    Effect.catchTag("WatchError", (error) => Console.error(`send: ${error.message}`).pipe(Effect.zipRight(exitWith(1))))
  )).pipe(Command.withDescription("Send one message to a door and print the streamed answer; exit 0 when the task completed, 1 failed/canceled/rejected, 3 input-required. Example: send 127.0.0.1:8080 \"hello\""))
