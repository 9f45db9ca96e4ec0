/**
 * The session's tasks: their states and transitions, acceptance (`none | single | queue`), the
 * three lanes (user > peer > bg) the runner takes queued tasks from, the `max_active` bound, and
 * retention of finished tasks bounded by count and by bytes (live tasks are never forgotten).
 *
 * A task parked in `input-required` gives its slot back when `max_active` > 1 (tasks of such a
 * session are independent, so a client that never answers cannot starve the queue); it then
 * counts against `queue_depth` like a queued task, and when its input arrives it takes the next
 * free slot before any queued task. Under `max_active` 1 (script and agent capsules, whose tasks
 * share one workdir) a parked task keeps the slot: the next task would change the workdir under
 * the paused one. docs/design.md, "Input", gives the reasoning.
 *
 * All operations are synchronous inside one `Effect.sync`, so each is atomic on the JS thread
 * without locks. Each change is then published on `changes`.
 */
import { Context, Effect, Layer, Option, PubSub, Schema, Stream } from "effect"
import { mintId } from "./Ids.js"
import { Journal, type JournalService, noJournal } from "./Journal.js"
import {
  canTransition,
  type Artifact,
  type Dialect,
  isSettled,
  isTerminal,
  type Lane,
  laneOf,
  type Message,
  partBytes,
  type Provenance,
  type Task,
  type TaskState
} from "./Task.js"

export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", {
  taskId: Schema.String
}) {}

export class InvalidTransition extends Schema.TaggedError<InvalidTransition>()("InvalidTransition", {
  taskId: Schema.String,
  from: Schema.String,
  to: Schema.String
}) {}

export type TaskAcceptance = "none" | "single" | "queue"

export interface TaskRegistryConfig {
  readonly acceptance: TaskAcceptance
  /** Most tasks waiting to start under `queue` (the running ones do not count). */
  readonly queueDepth: number
  /** Most tasks running at once (1 is the reference's behaviour). */
  readonly maxActive: number
  /** Finished tasks kept for `tasks/get`; the oldest are forgotten beyond this. */
  readonly retainTerminal: number
  /** Most bytes of finished tasks kept (see `taskBytes`); the oldest are forgotten beyond this. */
  readonly retainBytes: number
  /** Finished tasks older than this (by their last transition) are forgotten, at start and as tasks finish. */
  readonly retainAgeMs: number
}

export const defaultRegistryConfig: TaskRegistryConfig = {
  acceptance: "single",
  queueDepth: 1,
  maxActive: 1,
  retainTerminal: 1000,
  retainBytes: 256 * 1024 * 1024,
  retainAgeMs: 30 * 24 * 60 * 60 * 1000
}

/** Fixed costs counted on top of the text: the record with its ids and provenance, and each message or artifact. */
const taskOverhead = 512
const entryOverhead = 128

const utf8 = (text: string | undefined) => (text === undefined ? 0 : Buffer.byteLength(text))

/**
 * What a finished task is charged against `retainBytes`: the UTF-8 size of the text it holds
 * (history, artifacts, status message, response, prompt) plus fixed overheads. An estimate of
 * what retention costs, cheap enough to take once per finished task.
 */
export const taskBytes = (task: Task): number => {
  let total = taskOverhead + utf8(task.statusMessage) + utf8(task.response) + utf8(task.prompt)
  for (const message of task.history) {
    total += entryOverhead + utf8(message.messageId)
    for (const part of message.parts) total += partBytes(part)
  }
  for (const artifact of task.artifacts) {
    total += entryOverhead + utf8(artifact.artifactId) + utf8(artifact.name)
    for (const part of artifact.parts) total += partBytes(part)
  }
  return total
}

export interface NewTask {
  readonly message: Message
  readonly contextId?: string
  readonly provenance: Provenance
  readonly dialect: Dialect
}

/** A change to one task: an optional transition plus what it records. */
export interface TaskChange {
  readonly state?: TaskState
  readonly statusMessage?: string | undefined
  readonly response?: string
  readonly prompt?: string | undefined
  readonly appendHistory?: Message
  readonly addArtifact?: Artifact
}

export type RejectReason = "busy" | "closing" | "store"

const refusedMessages: Record<RejectReason, string> = {
  busy: "task rejected: capsule is busy",
  closing: "task rejected: the session is closing",
  store: "task rejected: the session's store cannot be written now (disk full or database unreachable); send it again later"
}

export type Acceptance =
  /** `duplicate`: the message id was accepted before; `task` is that first task (nothing new starts). */
  | { readonly _tag: "Accepted"; readonly task: Task; readonly duplicate?: boolean }
  | { readonly _tag: "Rejected"; readonly task: Task; readonly reason: RejectReason }

export class TaskRegistry extends Context.Tag("capsule-runtime/services/TaskRegistry")<TaskRegistry, {
  /** Records a new task as `submitted`, or as `rejected` when acceptance or capacity refuse it. */
  readonly accept: (input: NewTask) => Effect.Effect<Acceptance>
  readonly get: (taskId: string) => Effect.Effect<Task, TaskNotFound>
  /** The reference's "active slot": the task started last, running or finished. */
  readonly current: () => Effect.Effect<Option.Option<Task>>
  /**
   * Applies a change; a transition the state machine forbids fails and changes nothing. `also`
   * runs as the change is made, before it is committed: what it stages (a frame) is committed
   * with it.
   */
  readonly update: (taskId: string, change: TaskChange, also?: (task: Task) => void) => Effect.Effect<Task, TaskNotFound | InvalidTransition>
  /** Moves the next queued task (by lane, FIFO within a lane) to `working`, if `max_active` allows. */
  readonly startNext: (also?: (task: Task) => void) => Effect.Effect<Option.Option<Task>>
  /** Live task ids in acceptance order, and a snapshot of the counters. */
  readonly live: () => Effect.Effect<ReadonlyArray<string>>
  /** Every task it still knows (live and retained), in no particular order: bounded by retention. */
  readonly list: () => Effect.Effect<ReadonlyArray<Task>>
  /** Waits until the task is terminal or input-required (at once if it already is). */
  readonly awaitSettled: (taskId: string) => Effect.Effect<Task, TaskNotFound>
  /** Waits until a task resumed from input-required holds a slot again (at once if it does). */
  readonly awaitSlot: (taskId: string) => Effect.Effect<void>
  /**
   * The task that changed last as the stream starts (when one has), then every task as it is
   * accepted or changes. A reader that re-reads the registry on each element misses nothing:
   * the first element comes after the stream subscribed. One that has fallen far behind misses
   * the oldest changes, never the newest.
   */
  readonly changes: Stream.Stream<Task>
  /**
   * Tasks a store held as `working` or `input-required` when the session started again: they
   * were running when the process stopped, and the runner ends them.
   */
  readonly interrupted: () => Effect.Effect<ReadonlyArray<Task>>
  /** Refuses every later task with reason `closing` (shutdown). */
  readonly close: () => Effect.Effect<void>
  /**
   * `active`: tasks holding a slot; `parked`: live tasks that gave theirs back (waiting for input,
   * or for a slot after it came); `retained` counts every task held; `retainedBytes` is what the
   * finished ones are charged.
   */
  readonly stats: () => Effect.Effect<{
    readonly queued: number
    readonly active: number
    readonly parked: number
    /** Slots held by tasks waiting for input (under `max_active` 1, where a parked task keeps its slot). */
    readonly inputHeld: number
    readonly maxActive: number
    readonly retained: number
    readonly retainedBytes: number
  }>
}>() {
  /** Durable when a `Journal` is in context (the store's), else in memory only. */
  static readonly layer = (config: Partial<TaskRegistryConfig> = {}) =>
    Layer.effect(TaskRegistry, Effect.flatMap(Journal.current, (journal) => makeRegistry({ ...defaultRegistryConfig, ...config }, journal)))
}

// Transitions come in bursts (accept, start, finish within a millisecond): format each ms once.
let lastMs = -1
let lastIso = ""
const now = () => {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

/**
 * Changes a slow reader may hold before the oldest slide out. Sliding, not bounded: a transition
 * must never wait on a reader (the runner and the door make them), and a reader that re-reads the
 * registry on each change needs the newest one only.
 */
const changesCapacity = 256

export const makeRegistry = (config: TaskRegistryConfig, journal: JournalService = noJournal) =>
  Effect.map(PubSub.sliding<Task>(changesCapacity), (published) => registryOver(config, published, journal))

const registryOver = (config: TaskRegistryConfig, published: PubSub.PubSub<Task>, journal: JournalService) => {
  let lastChanged: Task | undefined
  const publish = (task: Task) =>
    Effect.suspend(() => {
      lastChanged = task
      return Effect.as(PubSub.publish(published, task), task)
    })
  const tasks = new Map<string, Task>()
  const lanes: Record<Lane, Array<string>> = { user: [], peer: [], bg: [] }
  const active = new Set<string>()
  const releasesParked = config.maxActive > 1
  /** Live tasks without a slot after starting: waiting for input, or resumed and waiting for a slot. */
  const parked = new Set<string>()
  /** Resumed tasks waiting for a slot, in the order their input came: first in line for one. */
  const resuming: Array<string> = []
  const slotWaiters = new Map<string, () => void>()
  /** Finished tasks, oldest first, with what each is charged. */
  const finished = new Map<string, number>()
  let finishedBytes = 0
  const waiters = new Map<string, Set<(task: Task) => void>>()
  let acceptedEver = 0
  let lastStarted: string | undefined
  let closing = false
  /** Each task's place in acceptance order (a store rebuilds the lanes from it). */
  const seqs = new Map<string, number>()
  let lastSeq = 0
  /** Accepted tasks by the id of the message that started them: the same message again gets the same task. */
  const byMessage = new Map<string, string>()
  /** Tasks the store held as running when this session started again (see `interrupted`). */
  const interruptedIds: Array<string> = []
  const durable = journal.durable
  const stage = (task: Task) => {
    if (durable) journal.task({ task, seq: seqs.get(task.id) ?? 0 })
  }
  /** `after`, once what was staged is committed (at once without a store): durable before visible. */
  const committed = <A, E>(after: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
    durable ? Effect.zipRight(journal.commit, Effect.suspend(after)) : after()
  /**
   * Publishes the change once committed, without waiting for it: for the runner's own steps (a
   * start), which no client sees before the commit anyway (reads of the task wait for it).
   */
  const shownWhenCommitted = (task: Task): Effect.Effect<unknown> => {
    if (!durable) return publish(task)
    journal.afterCommit(Effect.asVoid(publish(task)))
    return journal.backlogged() ? journal.commit : Effect.void
  }
  /** A read that waits for the task's (any task's, without an id) staged change to be committed first. */
  const readable = <A, E>(taskId: string | undefined, read: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
    durable && journal.pending(taskId) ? Effect.zipRight(journal.commit, Effect.suspend(read)) : read()

  const queuedCount = () => lanes.user.length + lanes.peer.length + lanes.bg.length

  /** Hands free slots to resumed tasks first, oldest input first. */
  const grantResuming = () => {
    while (active.size < config.maxActive && resuming.length > 0) {
      const taskId = resuming.shift()!
      parked.delete(taskId)
      active.add(taskId)
      const waiter = slotWaiters.get(taskId)
      slotWaiters.delete(taskId)
      waiter?.()
    }
  }

  const canAccept = (): RejectReason | undefined => {
    if (closing) return "closing"
    if (durable && !journal.writable()) return "store"
    switch (config.acceptance) {
      case "none":
        return "busy"
      case "single":
        return acceptedEver === 0 ? undefined : "busy"
      case "queue":
        // A parked task that gave its slot back waits as a queued one does, and is bounded alike.
        return queuedCount() + parked.size < config.queueDepth ? undefined : "busy"
    }
  }

  const forget = (taskId: string) => {
    finishedBytes -= finished.get(taskId) ?? 0
    finished.delete(taskId)
    const messageId = tasks.get(taskId)?.history[0]?.messageId
    if (messageId !== undefined && byMessage.get(messageId) === taskId) byMessage.delete(messageId)
    tasks.delete(taskId)
    seqs.delete(taskId)
    if (durable) journal.forget(taskId)
  }

  /**
   * Charges a finished task (again, keeping its place, when it changes after finishing) and
   * forgets the oldest finished tasks while either bound is passed. A task larger than the whole
   * byte budget is forgotten at once instead, sparing the others (its caller holds the record).
   */
  const retire = (task: Task) => {
    const bytes = taskBytes(task)
    if (bytes > config.retainBytes) return forget(task.id)
    finishedBytes += bytes - (finished.get(task.id) ?? 0)
    finished.set(task.id, bytes)
    while (finished.size > config.retainTerminal || (finished.size > 0 && finishedBytes > config.retainBytes)) {
      forget(finished.keys().next().value as string)
    }
    forgetAged()
  }

  /** Forgets finished tasks past the age bound, oldest first (the map is in the order they finished). */
  const forgetAged = () => {
    const cutoff = Date.now() - config.retainAgeMs
    for (const taskId of finished.keys()) {
      const at = Date.parse(tasks.get(taskId)?.timestamp ?? "")
      if (!(at < cutoff)) return
      forget(taskId)
    }
  }

  const notify = (task: Task) => {
    const set = waiters.get(task.id)
    if (set === undefined || !isSettled(task.state)) return
    waiters.delete(task.id)
    for (const resume of set) resume(task)
  }

  /** The task this message id started, if it was accepted and is still held. */
  const firstFor = (messageId: string) => {
    const taskId = messageId === "" ? undefined : byMessage.get(messageId)
    return taskId === undefined ? undefined : tasks.get(taskId)
  }

  const accept = (input: NewTask) =>
    Effect.suspend((): Effect.Effect<Acceptance> => {
      const first = firstFor(input.message.messageId)
      if (first !== undefined) {
        return readable(first.id, () => Effect.succeed<Acceptance>({ _tag: "Accepted", task: tasks.get(first.id) ?? first, duplicate: true }))
      }
      const acceptance = acceptNew(input)
      stage(acceptance.task)
      // A refusal is answered at once: it promises nothing, and the store may be what refuses.
      if (acceptance._tag === "Rejected") return Effect.as(publish(acceptance.task), acceptance)
      return committed(() => Effect.as(publish(acceptance.task), acceptance))
    })

  const acceptNew = (input: NewTask): Acceptance => {
      const refusal = canAccept()
      const task: Task = {
        id: mintId("tsk"),
        contextId: input.contextId ?? input.message.contextId ?? mintId("ctx"),
        state: refusal === undefined ? "submitted" : "rejected",
        ...(refusal === undefined ? {} : { statusMessage: refusedMessages[refusal] }),
        timestamp: now(),
        revision: 0,
        history: [input.message],
        artifacts: [],
        provenance: input.provenance,
        lane: laneOf(input.provenance.origin),
        dialect: input.dialect
      }
      tasks.set(task.id, task)
      seqs.set(task.id, ++lastSeq)
      if (refusal !== undefined) {
        retire(task)
        return { _tag: "Rejected", task, reason: refusal }
      }
      acceptedEver++
      if (input.message.messageId !== "") byMessage.set(input.message.messageId, task.id)
      lanes[task.lane].push(task.id)
      return { _tag: "Accepted", task }
    }

  const lookup = (taskId: string) => {
    const task = tasks.get(taskId)
    return task === undefined ? Effect.fail(new TaskNotFound({ taskId })) : Effect.succeed(task)
  }

  const get = (taskId: string) => Effect.suspend(() => readable(taskId, () => lookup(taskId)))

  const current = () => Effect.sync(() => Option.fromNullable(lastStarted === undefined ? undefined : tasks.get(lastStarted)))

  const update = (taskId: string, change: TaskChange, also?: (task: Task) => void) =>
    Effect.suspend((): Effect.Effect<Task, TaskNotFound | InvalidTransition> => {
      const task = tasks.get(taskId)
      if (task === undefined) return Effect.fail(new TaskNotFound({ taskId }))
      const to = change.state
      if (to !== undefined && to !== task.state && !canTransition(task.state, to)) {
        return Effect.fail(new InvalidTransition({ taskId, from: task.state, to }))
      }
      const next: Task = {
        ...task,
        ...(to === undefined || to === task.state ? {} : { state: to, timestamp: now(), revision: task.revision + 1 }),
        ...("statusMessage" in change ? { statusMessage: change.statusMessage } : {}),
        ...(change.response === undefined ? {} : { response: change.response }),
        ...("prompt" in change ? { prompt: change.prompt } : {}),
        history: change.appendHistory === undefined ? task.history : [...task.history, change.appendHistory],
        artifacts: change.addArtifact === undefined ? task.artifacts : [...task.artifacts, change.addArtifact]
      } as Task
      tasks.set(taskId, next)
      stage(next)
      const transitioned = to !== undefined && to !== task.state
      if (to !== undefined && to !== task.state) {
        if (task.state === "submitted") {
          const lane = lanes[task.lane]
          const at = lane.indexOf(taskId)
          if (at >= 0) lane.splice(at, 1)
        }
        if (to === "working" && task.state === "submitted") {
          active.add(taskId)
          lastStarted = taskId
        }
        if (to === "input-required" && releasesParked) {
          if (active.delete(taskId)) parked.add(taskId)
          // Asking again before its slot came back: it waits for input, not for a slot.
          const at = resuming.indexOf(taskId)
          if (at >= 0) resuming.splice(at, 1)
        }
        // Input came: the task queues for a slot ahead of every new task (at once when one is free).
        if (to === "working" && task.state === "input-required" && parked.has(taskId)) resuming.push(taskId)
        if (isTerminal(to)) {
          active.delete(taskId)
          if (parked.delete(taskId)) {
            const at = resuming.indexOf(taskId)
            if (at >= 0) resuming.splice(at, 1)
          }
        }
        grantResuming()
      }
      if (isTerminal(next.state)) retire(next)
      also?.(next)
      // A blocking send answers when notified: only once the change is committed.
      return committed(() => {
        if (transitioned) notify(next)
        return publish(next)
      })
    })

  const startNext = (also?: (task: Task) => void) =>
    Effect.sync(() => {
      grantResuming()
      if (active.size >= config.maxActive) return Option.none<Task>()
      const lane = lanes.user.length > 0 ? lanes.user : lanes.peer.length > 0 ? lanes.peer : lanes.bg
      const taskId = lane.shift()
      if (taskId === undefined) return Option.none<Task>()
      const task = tasks.get(taskId)!
      const next: Task = { ...task, state: "working", timestamp: now(), revision: task.revision + 1 }
      tasks.set(taskId, next)
      stage(next)
      active.add(taskId)
      lastStarted = taskId
      also?.(next)
      return Option.some(next)
    }).pipe(Effect.tap(Option.match({ onNone: () => Effect.void, onSome: (next) => shownWhenCommitted(next) })))

  const live = () =>
    Effect.sync(() => {
      const ids: Array<string> = []
      for (const task of tasks.values()) if (!isTerminal(task.state)) ids.push(task.id)
      return ids.sort()
    })

  const list = () => readable(undefined, () => Effect.sync(() => Array.from(tasks.values())))

  const awaitSettled = (taskId: string) =>
    Effect.suspend((): Effect.Effect<Task, TaskNotFound> => {
      const task = tasks.get(taskId)
      if (task === undefined) return Effect.fail(new TaskNotFound({ taskId }))
      if (isSettled(task.state)) return readable(taskId, () => Effect.sync(() => tasks.get(taskId) ?? task))
      return Effect.async<Task>((resume) => {
        const done = (settled: Task) => resume(Effect.succeed(settled))
        const set = waiters.get(taskId) ?? new Set()
        set.add(done)
        waiters.set(taskId, set)
        return Effect.sync(() => set.delete(done))
      })
    })

  const awaitSlot = (taskId: string) =>
    Effect.suspend((): Effect.Effect<void> => {
      if (!resuming.includes(taskId)) return Effect.void
      return Effect.async<void>((resume) => {
        slotWaiters.set(taskId, () => resume(Effect.void))
        return Effect.sync(() => void slotWaiters.delete(taskId))
      })
    })

  const close = () => Effect.sync(() => void (closing = true))

  const interrupted = () => Effect.sync(() => interruptedIds.flatMap((taskId) => {
    const task = tasks.get(taskId)
    return task === undefined || isTerminal(task.state) ? [] : [task]
  }))

  /** What the store held when the session started again: tasks back in their lanes and bounds. */
  const hydrate = () => {
    for (const { seq, task } of journal.recovered.tasks) {
      tasks.set(task.id, task)
      seqs.set(task.id, seq)
      lastSeq = Math.max(lastSeq, seq)
      if (task.state === "rejected") {
        retire(task)
        continue
      }
      acceptedEver++
      const messageId = task.history[0]?.messageId
      if (messageId !== undefined && messageId !== "") byMessage.set(messageId, task.id)
      if (task.state === "submitted") lanes[task.lane].push(task.id)
      else if (isTerminal(task.state)) retire(task)
      else interruptedIds.push(task.id)
    }
  }
  hydrate()

  // Subscribed before the last change is read, so no change falls between the two (one may come twice).
  const changes = Stream.unwrapScoped(Effect.map(PubSub.subscribe(published), (subscription) =>
    Stream.concat(lastChanged === undefined ? Stream.empty : Stream.succeed(lastChanged), Stream.fromQueue(subscription))))

  const stats = () =>
    Effect.sync(() => ({
      queued: queuedCount(),
      active: active.size,
      parked: parked.size,
      inputHeld: [...active].filter((taskId) => tasks.get(taskId)?.state === "input-required").length,
      maxActive: config.maxActive,
      retained: tasks.size,
      retainedBytes: finishedBytes
    }))

  return TaskRegistry.of({ accept, get, current, update, startNext, live, list, awaitSettled, awaitSlot, changes, interrupted, close, stats })
}
