/**
 * `chat <url>`: a conversation with a door, one line of stdin per message. Each turn streams as
 * `send` streams it (./Send.ts, the same client code as `watch`): the first message starts a
 * context and the later ones continue it; when the task asks for input, the next line answers
 * it. `/cancel` cancels the running task (or the one waiting for input); `/quit` or the end of
 * stdin ends the chat once the running turn has ended. Lines keep their order, piped or typed:
 * a line that arrives while a turn runs waits for it, and a `/cancel` behind it waits too. A dropped connection is resumed with `Last-Event-ID`. Notices go to stderr, answers to stdout.
 */
import { Args, Command } from "@effect/cli"
import { Terminal } from "@effect/platform"
import { Console, Deferred, Effect, Fiber, Option, Queue, Stream } from "effect"
import { createInterface } from "node:readline"
import { call, requireDoorUrl, type RetryPolicy, type WatchError } from "./DoorClient.js"
import { authToken, doorClientFor } from "./AuthToken.js"
import { exitWith } from "./Exit.js"
import { sendTurn, type TurnOutcome } from "./Send.js"
import type { RenderOptions } from "./WatchRenderer.js"

export interface ChatOptions {
  /** The person's lines, in order; the stream's end is the end of the chat. */
  readonly lines: Stream.Stream<string>
  readonly render?: RenderOptions | undefined
  readonly retry?: Partial<RetryPolicy> | undefined
  /** Writes answer output (text that may end mid-line). */
  readonly out: (text: string) => Effect.Effect<void>
  /** Writes one notice line. */
  readonly notice: (line: string) => Effect.Effect<void>
}

const isCancel = (line: Option.Option<string>) => Option.isSome(line) && line.value.trim() === "/cancel"

const cancelTask = (url: string, taskId: string, notice: ChatOptions["notice"]) =>
  call(url, "tasks/cancel", { id: taskId }).pipe(
    Effect.flatMap((task) => notice(`cancel: task ${taskId} is ${(task as { status?: { state?: string } })?.status?.state ?? "unknown"}`)),
    Effect.catchAll((error) => notice(`cancel: ${error.message}`))
  )

/** Chats with the door at `input` until the lines end or `/quit`. */
export const chat = Effect.fn("Chat.chat")(function*(input: string, options: ChatOptions) {
  const url = yield* requireDoorUrl(input)
  const lines = yield* Queue.unbounded<Option.Option<string>>()
  yield* Effect.forkScoped(
    options.lines.pipe(
      Stream.runForEach((line) => Queue.offer(lines, Option.some(line))),
      Effect.ensuring(Queue.offer(lines, Option.none()))
    )
  )
  yield* options.notice(`chatting with ${url}: a line is a message; /cancel cancels the running task, /quit ends`)
  let contextId: string | undefined
  /** The task waiting for an answer, after an `input-required` turn. */
  let waiting: string | undefined
  const held: Array<Option.Option<string>> = []
  const next = Effect.suspend(() => held.length > 0 ? Effect.succeed(held.shift()!) : Queue.take(lines))

  const runTurn = (text: string) =>
    Effect.gen(function*() {
      // The task's id, once the door names it (at once for an answer to a waiting task).
      const named = yield* Deferred.make<string>()
      if (waiting !== undefined) yield* Deferred.succeed(named, waiting)
      let canceling: Fiber.RuntimeFiber<void> | undefined
      const turn = yield* Effect.fork(sendTurn(url, text, {
        contextId,
        taskId: waiting,
        render: options.render,
        retry: options.retry,
        out: options.out,
        notice: options.notice,
        started: (taskId) => Effect.asVoid(Deferred.succeed(named, taskId))
      }))
      const cancel = Effect.gen(function*() {
        // Typed (or piped) before the door named the task: sent as soon as it does.
        canceling ??= yield* Effect.fork(Effect.flatMap(Deferred.await(named), (taskId) => cancelTask(url, taskId, options.notice)))
      })
      const ended = (outcome: TurnOutcome) =>
        // A cancel sent just as the task ended still reports what the door said.
        Effect.as(canceling === undefined ? Effect.void : Fiber.join(canceling), outcome)
      // Lines keep their order: `/cancel` acts on this turn only when it is the next line;
      // any other line (and whatever follows it) waits for the turn to end.
      while (true) {
        if (held.length > 0) {
          if (!isCancel(held[0]!)) return yield* Effect.flatMap(Fiber.join(turn), ended)
          held.shift()
          yield* cancel
          continue
        }
        const first = yield* Effect.race(
          Effect.map(Fiber.join(turn), (outcome) => ({ _tag: "Ended" as const, outcome })),
          Effect.map(Queue.take(lines), (line) => ({ _tag: "Line" as const, line }))
        )
        if (first._tag === "Ended") return yield* ended(first.outcome)
        if (isCancel(first.line)) yield* cancel
        else held.push(first.line)
      }
    })

  while (true) {
    const line = yield* next
    if (Option.isNone(line)) return
    const text = line.value.trim()
    if (text === "") continue
    if (text === "/quit" || text === "/exit") return
    if (text === "/cancel") {
      if (waiting === undefined) yield* options.notice("cancel: no task is running")
      else {
        yield* cancelTask(url, waiting, options.notice)
        waiting = undefined
      }
      continue
    }
    const outcome: TurnOutcome = yield* runTurn(line.value)
    contextId = outcome.contextId ?? contextId
    waiting = outcome.state === "input-required" ? outcome.taskId : undefined
    if (outcome.state === "input-required") yield* options.notice("(the task waits for your answer: the next line answers it, /cancel cancels it)")
    else if (outcome.state !== "completed") yield* options.notice(`task ${outcome.taskId} ended ${outcome.state}`)
  }
}, Effect.scoped)

/** stdin as lines. */
const stdinLines: Stream.Stream<string> = Stream.suspend(() =>
  Stream.fromAsyncIterable(createInterface({ input: process.stdin, crlfDelay: Infinity }), (error) => error).pipe(Stream.orDie)
)

const url = Args.text({ name: "url" }).pipe(Args.withDescription("The door: http://host:port/ or host:port"))

export const chatCommand = Command.make("chat", { url, authToken }, (options) =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    yield* chat(options.url, {
      lines: stdinLines,
      out: (text) => Effect.orDie(terminal.display(text)),
      notice: (line) => Console.error(line)
    }).pipe(
      Effect.catchTag("WatchError", (error: WatchError) => Console.error(`chat: ${error.message}`).pipe(Effect.zipRight(exitWith(1))))
    )
  }).pipe(Effect.provide(doorClientFor(options.authToken)))).pipe(
    Command.withDescription("Chat with a door: each stdin line is a message (answers input-required prompts); /cancel cancels the running task, /quit ends. Example: chat 127.0.0.1:8080")
  )
