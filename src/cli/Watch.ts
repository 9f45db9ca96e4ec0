/**
 * `watch <url>`: follows a door's `stream/watch` and prints its frames readably (WatchRenderer),
 * or with `--json` as one JSON line each. When the connection drops before `capsule-closed` it
 * reconnects with `Last-Event-ID` and skips any frame it has already shown (./DoorClient.ts);
 * after 30 s without a connection it gives up (exit 1). `capsule-closed` ends it with exit 0, and
 * so does SIGINT. Connection notices go to stderr, frames to stdout.
 */
import { Args, Command, Options } from "@effect/cli"
import { Terminal } from "@effect/platform"
import { Console, Effect, Option } from "effect"
import { follow, requireDoorUrl, type RetryPolicy } from "./DoorClient.js"
import { authToken, doorClientFor } from "./AuthToken.js"
import { exitWith } from "./Exit.js"
import { integerFlag } from "./Flags.js"
import { defaultRenderOptions, finish, initialState, jsonLine, render, type RenderOptions, type WatchFrame } from "./WatchRenderer.js"

export { defaultRetry, doorUrl, type RetryPolicy, WatchError } from "./DoorClient.js"

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

/** Follows `stream/watch` at `input` until `capsule-closed`; fails when refused or unreachable. */
export const watch = Effect.fn("Watch.watch")(function*(input: string, options: WatchOptions) {
  const url = yield* requireDoorUrl(input)
  const renderOptions = options.render ?? defaultRenderOptions
  let renderState = initialState

  /** Shows a frame; false once the session closed. */
  const show = (frame: WatchFrame): Effect.Effect<boolean> => {
    if (options.json) return Effect.as(options.out(jsonLine(frame)), frame.event !== "capsule-closed")
    const rendered = render(renderState, frame, renderOptions)
    renderState = rendered.state
    return Effect.as(rendered.output === "" ? Effect.void : options.out(rendered.output), !rendered.closed)
  }

  return yield* follow(url, { lastEventId: options.lastEventId, retry: options.retry, onFrame: show, notice: options.notice }).pipe(
    Effect.onInterrupt(() => options.json ? Effect.void : Effect.suspend(() => options.out(finish(renderState))))
  )
})

const url = Args.text({ name: "url" }).pipe(Args.withDescription("The door: http://host:port/ or host:port"))
const json = Options.boolean("json").pipe(Options.withDescription("Print each frame as one JSON line {id, event, data}"))
const width = integerFlag("width", {
  min: 8,
  placeholder: "N",
  description: `Most characters of a tool result shown (default ${defaultRenderOptions.width})`
}).pipe(Options.withDefault(defaultRenderOptions.width))
const fullIds = Options.boolean("full-ids").pipe(Options.withDescription("Print task ids whole"))
const lastEventId = integerFlag("last-event-id", {
  min: 0,
  placeholder: "ID",
  description: "Start after this event id (default: everything the door still holds)"
}).pipe(Options.optional)

export const watchCommand = Command.make("watch", { url, json, width, fullIds, lastEventId, authToken }, (options) =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    yield* watch(options.url, {
      json: options.json,
      render: { width: options.width, fullIds: options.fullIds },
      lastEventId: Option.getOrUndefined(options.lastEventId),
      out: (text) => Effect.orDie(terminal.display(text)),
      notice: (line) => Console.error(line)
    }).pipe(
      Effect.provide(doorClientFor(options.authToken)),
      Effect.catchTag("WatchError", (error) => Console.error(`watch: ${error.message}`).pipe(Effect.zipRight(exitWith(1))))
    )
  })).pipe(Command.withDescription("Follow a door's stream/watch and print its frames (status lines, streamed text, tool results)"))
