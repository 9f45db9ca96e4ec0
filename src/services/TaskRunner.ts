/**
 * Runs accepted tasks as fibers (a `FiberMap` keyed by task id) on the `Capsule`. Cancellation
 * and session stop are interruption: `cancel` returns once the task's finalizers ran and its
 * final `canceled` frame is in the event log. A dispatcher fiber starts queued tasks whenever
 * `max_active` allows; it and `cancel` share one lock, so a task is never between "started"
 * and "has a fiber" when a cancel looks at it.
 */
import { Cause, Context, Deferred, Effect, Exit, FiberMap, Layer, Option, Queue, Schema, Tracer } from "effect"
import { Capsule, CapsuleFailure, type TaskIO } from "./Capsule.js"
import { DelegationTracker } from "./DelegationTracker.js"
import { DetachedRegistry } from "./DetachedRegistry.js"
import { EventLog } from "./EventLog.js"
import { mintId } from "./Ids.js"
import { type ResidueItem, residueItems } from "./Residue.js"
import { type DataPart, type FilePart, isTerminal, type Message, type Task, textOf } from "./Task.js"
import type { TaskEvent } from "./TaskEvent.js"
import { type Acceptance, type NewTask, type TaskChange, TaskNotFound, TaskRegistry } from "./TaskRegistry.js"
import { RunnerCapacity } from "./RunnerCapacity.js"
import { callerSpan, spansWanted } from "./Tracing.js"

/** A follow-up for a task that can take no more input (terminal, or its input queue is full). */
export class TaskNotAcceptingInput extends Schema.TaggedError<TaskNotAcceptingInput>()("TaskNotAcceptingInput", {
  taskId: Schema.String,
  state: Schema.String,
  reason: Schema.String
}) {}

export type CancelOutcome =
  | { readonly _tag: "Canceled"; readonly task: Task; readonly residue: ReadonlyArray<ResidueItem> }
  | { readonly _tag: "AlreadyCanceled"; readonly task: Task }
  | { readonly _tag: "AlreadyTerminal"; readonly task: Task }

export interface StopOutcome {
  readonly canceled: ReadonlyArray<string>
  readonly residue: ReadonlyArray<ResidueItem>
}

export interface TaskRunnerConfig {
  /** How long a task waits in `input-required` before failing with `input-timeout`. */
  readonly inputTimeoutMs?: number | undefined
  /** Follow-ups held for a task that has not asked for input yet. */
  readonly inputQueueDepth: number
  /** The status of a task found running at start (the store held it `working`); default `restartedMessage`. */
  readonly interruptedMessage?: string | undefined
}

export const canceledMessage = "task canceled"

/** The status of a task that was running when its process stopped (a store held it `working` or `input-required`). */
export const restartedMessage = "the runtime was restarted while this task ran: it did not finish; send it again to run it anew"

/** The same, in a fleet: the session moved because the runner it ran on stopped or died. */
export const runnerLostMessage = "runner lost: the runner this task ran on stopped or died before it finished; send it again to run it anew"

export class TaskRunner extends Context.Tag("capsule-runtime/services/TaskRunner")<TaskRunner, {
  /** Accepts a task (or records it `rejected`) and lets the dispatcher start it. */
  readonly submit: (input: NewTask) => Effect.Effect<Acceptance>
  /** Delivers a follow-up message to a task: it answers a pending request-input, or waits for one. */
  readonly resume: (taskId: string, message: Message) => Effect.Effect<Task, TaskNotFound | TaskNotAcceptingInput>
  /** Interrupts a live task (or drops a queued one) and reports the residue. */
  readonly cancel: (taskId: string) => Effect.Effect<CancelOutcome, TaskNotFound>
  /** Cancels every live task, as `session/stop` does. */
  readonly stop: () => Effect.Effect<StopOutcome>
  /** Number of task fibers alive (for tests and benchmarks). */
  readonly running: () => Effect.Effect<number>
  /**
   * The session is moving to another process (a fleet's shard left this runner): no queued task
   * starts here any more, and a running task cut off from now on is left as the store holds it,
   * for the next owner's recovery, instead of ending `canceled`. The running ones go on
   * (`running` says when none is left).
   */
  readonly handOff: () => Effect.Effect<void>
}>() {
  static readonly layer = (config: Partial<TaskRunnerConfig> = {}) =>
    Layer.scoped(TaskRunner, makeRunner({ inputQueueDepth: 16, ...config }))
}

interface TurnState {
  turn: number
  /** Text streamed in the current turn, not yet recorded. */
  text: string
  /** What the last recorded turn streamed (empty when it streamed nothing). */
  streamedLast: string
  /** That turn's closing `text` frame (`final: true`) is already out. */
  closedLast: boolean
}

interface Inbox {
  readonly queued: Array<Message>
  waiting: Deferred.Deferred<Message> | undefined
}

const makeRunner = (config: TaskRunnerConfig) =>
  Effect.gen(function*() {
    const registry = yield* TaskRegistry
    const log = yield* EventLog
    const capsule = yield* Capsule
    const detached = yield* DetachedRegistry
    const delegations = yield* DelegationTracker
    const fibers = yield* FiberMap.make<string>()
    const lock = yield* Effect.makeSemaphore(1)
    const capacity = yield* Effect.serviceOption(RunnerCapacity)
    let handingOff = false
    const wake = yield* Queue.sliding<void>(1)
    const inboxes = new Map<string, Inbox>()
    // Without a tracer that exports, a task gets no span (and its request's is not looked up):
    // building one per task cost ~8% of a task's CPU for spans no one receives.
    const traced = yield* spansWanted
    /** The span of the request that submitted a task, while it waits to run (traced runs only). */
    const parents = new Map<string, Tracer.AnySpan>()
    /** When each accepted task was submitted (`performance.now()`), until it starts or is dropped: its `queuedMs`. */
    const submittedAt = new Map<string, number>()
    /** When the last dispatch pass ended: a task submitted since did not wait behind `max_active`. */
    let lastPass = 0

    /** A traced task's wait in the registry, from submission to start, under the request that submitted it. */
    const queuedSpan = (taskId: string, parent: Tracer.AnySpan, from: number, to: number) =>
      Effect.tracerWith((tracer) =>
        Effect.sync(() => {
          const nanos = (at: number) => BigInt(Math.round((performance.timeOrigin + at) * 1e6))
          const span = tracer.span("TaskRunner.queued", Option.some(parent), Context.empty(), [], nanos(from), "internal")
          span.attribute("taskId", taskId)
          span.end(nanos(to), Exit.void)
        })
      )

    const residue = Effect.zipWith(detached.list(), delegations.list(), residueItems)

    const emit = (task: Task, event: TaskEvent) => log.publish(task.id, task.contextId, event)

    /**
     * A transition to a final state and its final frame, committed together: a crash never keeps
     * a finished task without the frame that says so, nor the frame without the state.
     */
    const settle = (taskId: string, change: TaskChange, event: TaskEvent) =>
      registry.update(taskId, change, (task) => void log.stage(task.id, task.contextId, event))

    const finish = (taskId: string, exit: Exit.Exit<{ readonly response: string }, CapsuleFailure>, turn: TurnState) =>
      Effect.gen(function*() {
        inboxes.delete(taskId)
        // Cut off by the move, not by a caller: the next owner says what became of it.
        if (handingOff && Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return
        const task = yield* registry.get(taskId)
        if (isTerminal(task.state)) return
        const agentMessage = (text: string): Message => ({
          role: "agent",
          messageId: mintId("msg"),
          parts: [{ kind: "text", text }],
          taskId,
          contextId: task.contextId
        })
        if (Exit.isSuccess(exit)) {
          const response = exit.value.response
          const streamed = turn.streamedLast
          if (streamed.length > 0) {
            if (!turn.closedLast) yield* emit(task, { _tag: "Text", text: "", final: true, turn: turn.turn })
          }
          else if (response.length > 0) yield* emit(task, { _tag: "Text", text: response, final: true, turn: turn.turn })
          // The answer is recorded once: as the last turn's artifact when it was streamed.
          const separate = response.length > 0 && response !== streamed
          yield* settle(taskId, {
            state: "completed",
            statusMessage: "session ended",
            response,
            prompt: undefined,
            ...(separate ? { appendHistory: agentMessage(response) } : {}),
            ...(separate || streamed.length === 0
              ? { addArtifact: { artifactId: `${taskId}-turn-${turn.turn}`, name: "response", parts: [{ kind: "text", text: response }] } }
              : {})
          }, { _tag: "Status", state: "completed", message: "session ended", response, final: true })
          return
        }
        if (Cause.isInterruptedOnly(exit.cause)) {
          yield* settle(taskId, { state: "canceled", statusMessage: canceledMessage, prompt: undefined }, { _tag: "Status", state: "canceled", message: canceledMessage, final: true })
          return
        }
        const failure = Cause.failureOption(exit.cause)
        if (Option.isNone(failure)) yield* Effect.logError("capsule run died", exit.cause)
        const message = Option.match(failure, { onNone: () => "internal error", onSome: (error) => error.message })
        yield* settle(taskId, { state: "failed", statusMessage: message, prompt: undefined }, { _tag: "Status", state: "failed", message, final: true })
      }).pipe(Effect.catchAll((error) => Effect.logError("task could not be finished", error)))

    /** One logfmt line per finished task: its id (annotated), origin, final state and duration. */
    const logFinished = (taskId: string, startedAt: number) =>
      registry.get(taskId).pipe(
        Effect.flatMap((done) =>
          Effect.logInfo("task finished").pipe(
            Effect.annotateLogs({ origin: done.provenance.origin, state: done.state, duration_ms: Date.now() - startedAt })
          )
        ),
        Effect.ignore
      )

    /** `since`: when the pass before the one starting it ended. */
    const execute = (task: Task, since: number) => {
      const startedAt = Date.now()
      const started = performance.now()
      const submitted = submittedAt.get(task.id) ?? started
      submittedAt.delete(task.id)
      // Started by the first pass after its submission, it did not queue (its 0 is not a scheduling delay).
      const waited = submitted < since
      // The submitting request's span, else the caller's traceparent: outbound calls continue the
      // caller's trace even when nothing here is exported (then no span is made, only a parent).
      const parent = parents.get(task.id) ?? callerSpan(task.provenance.traceparent)
      parents.delete(task.id)
      const inbox: Inbox = { queued: [], waiting: undefined }
      inboxes.set(task.id, inbox)
      const state: TurnState = { turn: 1, text: "", streamedLast: "", closedLast: false }
      const flushTurn = Effect.suspend(() => {
        const text = state.text
        // Nothing streamed since the last flush: what the last turn streamed still stands.
        if (text.length === 0) return Effect.void
        state.streamedLast = text
        state.closedLast = false
        state.text = ""
        return registry.update(task.id, {
          appendHistory: { role: "agent", messageId: mintId("msg"), parts: [{ kind: "text", text }], taskId: task.id, contextId: task.contextId },
          addArtifact: { artifactId: `${task.id}-turn-${state.turn}`, name: "response", parts: [{ kind: "text", text }] }
        }).pipe(Effect.ignore)
      })
      const io: TaskIO = {
        text: (chunk) =>
          Effect.suspend(() => {
            state.text += chunk
            return emit(task, { _tag: "Text", text: chunk, final: false, turn: state.turn })
          }),
        thinking: (chunk) => emit(task, { _tag: "Thinking", text: chunk }),
        artifact: (name, content, files) =>
          registry.update(task.id, {
            addArtifact: { artifactId: mintId("art"), name, parts: files === undefined || files.length === 0 ? [{ kind: "text", text: content }] : files }
          }).pipe(
            Effect.flatMap((updated) =>
              emit(updated, {
                _tag: "Artifact",
                artifactId: updated.artifacts.at(-1)!.artifactId,
                name,
                content,
                ...(files === undefined || files.length === 0 ? {} : { files })
              })
            ),
            Effect.orDie
          ),
        status: (message) => emit(task, { _tag: "Status", state: "working", message, final: false }),
        endTurn: Effect.suspend(() => {
          if (state.text.length === 0) return Effect.sync(() => void (state.streamedLast = ""))
          const turn = state.turn
          return emit(task, { _tag: "Text", text: "", final: true, turn }).pipe(
            Effect.zipRight(flushTurn),
            Effect.zipRight(Effect.sync(() => {
              state.closedLast = true
              state.turn = turn + 1
            }))
          )
        }),
        requestInput: (prompt) =>
          Effect.gen(function*() {
            if (state.text.length > 0) yield* emit(task, { _tag: "Text", text: "", final: true, turn: state.turn })
            yield* flushTurn
            state.turn++
            state.streamedLast = ""
            const early = inbox.queued.shift()
            if (early !== undefined) return textOf(early)
            const answer = yield* Deferred.make<Message>()
            inbox.waiting = answer
            const waiting = yield* registry.update(task.id, { state: "input-required", statusMessage: prompt, prompt }).pipe(Effect.orDie)
            yield* emit(waiting, { _tag: "Status", state: "input-required", message: prompt, final: false })
            // Parked, it may have given its slot back: a queued task can start meanwhile.
            yield* wake.offer(undefined)
            const wait = Deferred.await(answer)
            const message = config.inputTimeoutMs === undefined
              ? yield* wait
              : yield* wait.pipe(Effect.timeoutFail({ duration: config.inputTimeoutMs, onTimeout: CapsuleFailure.inputTimeout }))
            // A task that gave its slot back while parked (max_active > 1) runs on only with one.
            yield* registry.awaitSlot(task.id)
            return textOf(message)
          }).pipe(Effect.ensuring(Effect.sync(() => void (inbox.waiting = undefined))))
      }
      const input = {
        taskId: task.id,
        contextId: task.contextId,
        messageId: task.history[0]?.messageId ?? "",
        text: task.history[0] === undefined ? "" : textOf(task.history[0]),
        attachments: (task.history[0]?.parts ?? []).filter((part): part is DataPart | FilePart => part.kind !== "text"),
        provenance: task.provenance,
        queuedMs: waited ? Math.floor(started - submitted) : 0
      }
      const run = capsule.run(input, io)
      const body = (!traced || parent === undefined || !waited ? run : Effect.zipRight(queuedSpan(task.id, parent, submitted, started), run)).pipe(
        Effect.tap(() => flushTurn),
        Effect.onExit((exit) => finish(task.id, exit, state)),
        Effect.ensuring(Effect.zipRight(logFinished(task.id, startedAt), wake.offer(undefined))),
        Effect.annotateLogs({ taskId: task.id, contextId: task.contextId })
      )
      if (!traced) return parent === undefined ? body : Effect.withParentSpan(body, parent)
      return body.pipe(
        Effect.withSpan("TaskRunner.execute", {
          attributes: { taskId: task.id, contextId: task.contextId, capsule: capsule.info.name, origin: task.provenance.origin },
          // The request that submitted it (and so the caller's traceparent) is the task's parent.
          ...(parent === undefined ? {} : { parent })
        })
      )
    }

    const dispatch = lock.withPermits(1)(Effect.gen(function*() {
      const since = lastPass
      while (!handingOff) {
        // The runner's slot first (when the process bounds its tasks), then the session's.
        if (Option.isSome(capacity)) {
          if ((yield* registry.stats()).queued === 0) return void (lastPass = performance.now())
          yield* capacity.value.take
          if (handingOff) return yield* capacity.value.give
        }
        // Its `working` frame is committed with the start.
        const next = yield* registry.startNext((task) => void log.stage(task.id, task.contextId, { _tag: "Status", state: "working", message: "working", final: false }))
        if (Option.isNone(next)) {
          if (Option.isSome(capacity)) yield* capacity.value.give
          return void (lastPass = performance.now())
        }
        const task = next.value
        yield* FiberMap.run(fibers, task.id, Option.isSome(capacity) ? Effect.ensuring(execute(task, since), capacity.value.give) : execute(task, since))
      }
    }))

    yield* Queue.take(wake).pipe(Effect.zipRight(dispatch), Effect.forever, Effect.forkScoped)

    // A store's tasks from before a restart: the interrupted ones end failed with a final frame,
    // then the queued ones run in their lanes and order.
    for (const task of yield* registry.interrupted()) {
      const message = config.interruptedMessage ?? restartedMessage
      yield* settle(task.id, { state: "failed", statusMessage: message, prompt: undefined }, { _tag: "Status", state: "failed", message, final: true }).pipe(
        Effect.orDie
      )
    }
    yield* wake.offer(undefined)

    // Untraced: on the request path of message/send (a span here cost ~4% of door throughput).
    const submit = Effect.fnUntraced(function*(input: NewTask) {
      const acceptance = yield* registry.accept(input)
      if (acceptance._tag === "Accepted" && acceptance.duplicate !== true) {
        submittedAt.set(acceptance.task.id, performance.now())
        // A context read, no span: the submitter's span (a traced request's, a `run` continuing TRACEPARENT).
        const span = yield* Effect.serviceOption(Tracer.ParentSpan)
        if (Option.isSome(span)) parents.set(acceptance.task.id, span.value)
        yield* wake.offer(undefined)
      }
      return acceptance
    })

    const resume = Effect.fnUntraced(function*(taskId: string, message: Message) {
      const task = yield* registry.get(taskId)
      const inbox = inboxes.get(taskId)
      const refuse = (reason: string) => new TaskNotAcceptingInput({ taskId, state: task.state, reason })
      if (isTerminal(task.state)) return yield* refuse(`task ${taskId} is ${task.state}`)
      if (inbox?.waiting !== undefined && task.state === "input-required") {
        const waiting = inbox.waiting
        inbox.waiting = undefined
        const resumed = yield* registry.update(taskId, {
          state: "working",
          statusMessage: "resumed",
          prompt: undefined,
          appendHistory: message
        }).pipe(Effect.orDie)
        yield* emit(resumed, { _tag: "Status", state: "working", message: "resumed", final: false })
        yield* Deferred.succeed(waiting, message)
        return resumed
      }
      const queue = inbox?.queued ?? []
      if (queue.length >= config.inputQueueDepth) return yield* refuse(`task ${taskId} already holds ${queue.length} unanswered follow-ups`)
      if (inbox === undefined) inboxes.set(taskId, { queued: queue, waiting: undefined })
      queue.push(message)
      return yield* registry.update(taskId, { appendHistory: message }).pipe(Effect.orDie)
    })

    /** Cancels one task; the caller holds the lock. */
    const cancelLocked = (taskId: string) =>
      Effect.gen(function*() {
        const task = yield* registry.get(taskId)
        if (task.state === "canceled") return { _tag: "AlreadyCanceled", task } as const
        if (isTerminal(task.state)) return { _tag: "AlreadyTerminal", task } as const
        if (task.state === "submitted") {
          inboxes.delete(taskId)
          parents.delete(taskId)
          submittedAt.delete(taskId)
          yield* settle(taskId, { state: "canceled", statusMessage: canceledMessage }, { _tag: "Status", state: "canceled", message: canceledMessage, final: true }).pipe(
            Effect.orDie
          )
        } else {
          yield* FiberMap.remove(fibers, taskId)
        }
        return { _tag: "Canceled", task: yield* registry.get(taskId) } as const
      })

    const cancel = Effect.fn("TaskRunner.cancel")(function*(taskId: string) {
      yield* Effect.annotateCurrentSpan("taskId", taskId)
      const outcome = yield* lock.withPermits(1)(cancelLocked(taskId))
      if (outcome._tag !== "Canceled") return outcome
      return { ...outcome, residue: yield* residue } satisfies CancelOutcome
    })

    const stop = Effect.fn("TaskRunner.stop")(function*() {
      const canceled = yield* lock.withPermits(1)(Effect.gen(function*() {
        const live = yield* registry.live()
        const outcomes = yield* Effect.forEach(live, (taskId) => cancelLocked(taskId).pipe(Effect.option), {
          concurrency: "unbounded"
        })
        return outcomes.flatMap((outcome) => Option.isSome(outcome) && outcome.value._tag === "Canceled" ? [outcome.value.task.id] : [])
      }))
      return { canceled: canceled.sort(), residue: yield* residue } satisfies StopOutcome
    })

    const running = () => FiberMap.size(fibers)

    // Session end: refuse new tasks, then cancel the live ones as `session/stop` does; a session
    // handed off leaves them to its next owner instead.
    yield* Effect.addFinalizer(() => registry.close().pipe(Effect.zipRight(Effect.suspend(() => handingOff ? Effect.void : stop()))))

    // Not under the dispatcher's lock: a pass waiting for a runner slot would hold it; the
    // pass checks the flag again once it has the slot.
    const handOff = () => Effect.sync(() => void (handingOff = true))

    return TaskRunner.of({ submit, resume, cancel, stop, running, handOff })
  }).pipe(Effect.annotateLogs({ service: "TaskRunner" }))
