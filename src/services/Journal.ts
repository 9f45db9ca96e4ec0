/**
 * Where a session's task records, frames and push configs become durable. The registry, the
 * event log and the push configs stage every change here and go on only once it is committed:
 * no client sees a state or a frame a crash could take back. Staged changes are committed
 * together (group commit: everything staged while one commit runs goes in the next), so the
 * door's hot path shares one write among all the changes of a moment.
 *
 * `Journal.none` (the library's and `--store memory`'s default) keeps nothing and costs nothing:
 * its users check `durable` and skip the staging and the wait. The store's implementation lives
 * in `src/store`; this is the contract the session's services need.
 */
import { Context, Effect, Layer } from "effect"
import type { Task } from "./Task.js"
import type { Frame } from "./TaskEvent.js"

/** A task as stored: the record, and its place in acceptance order (lanes are rebuilt from it). */
export interface StoredTask {
  readonly task: Task
  readonly seq: number
}

/** A push-notification config as stored (its JSON is the push service's own). */
export interface StoredPushConfig {
  readonly taskId: string
  readonly configId: string
  readonly config: string
}

/** What a session finds in the store when it starts again. */
export interface Recovered {
  /** Every task still held, in acceptance order. */
  readonly tasks: ReadonlyArray<StoredTask>
  /** The last committed frame id (0 for none): the sequence continues after it. */
  readonly lastFrameId: number
  readonly pushConfigs: ReadonlyArray<StoredPushConfig>
}

export interface JournalService {
  readonly durable: boolean
  readonly recovered: Recovered
  /** Stages a task's latest version. */
  readonly task: (stored: StoredTask) => void
  /** Stages the removal of a finished task, its frames and its push configs (retention). */
  readonly forget: (taskId: string) => void
  /** Stages a frame; it is handed to `onCommitted`'s listener once committed. */
  readonly frame: (frame: Frame) => void
  readonly pushConfig: (config: StoredPushConfig) => void
  readonly removePushConfig: (taskId: string, configId: string) => void
  /** Waits until everything staged so far is committed (at once when nothing is pending). */
  readonly commit: Effect.Effect<void>
  /**
   * Runs `effect` right after what is staged now is committed, without waiting for it (at once
   * when nothing is pending): for a change no client sees until then anyway.
   */
  readonly afterCommit: (effect: Effect.Effect<void>) => void
  /** So much is staged that a writer should wait for the commit before staging more (bounds memory). */
  readonly backlogged: () => boolean
  /** False while a commit is failing (disk full, connection lost): new work is refused meanwhile. */
  readonly writable: () => boolean
  /** A staged version of this task (any task, without an id) is not committed yet. */
  readonly pending: (taskId?: string) => boolean
  /** The one listener for committed frames, called in id order right after each commit. */
  readonly onCommitted: (listener: (frames: ReadonlyArray<Frame>) => void) => void
  /** Committed frames with `after` < id < `before`, oldest first, the newest `limit` of them. */
  readonly frames: (after: number, before: number, limit: number) => Effect.Effect<ReadonlyArray<Frame>>
}

const nothing: Recovered = { tasks: [], lastFrameId: 0, pushConfigs: [] }

export const noJournal: JournalService = {
  durable: false,
  recovered: nothing,
  task: () => {},
  forget: () => {},
  frame: () => {},
  pushConfig: () => {},
  removePushConfig: () => {},
  commit: Effect.void,
  afterCommit: (effect) => Effect.runSync(effect),
  backlogged: () => false,
  writable: () => true,
  pending: () => false,
  onCommitted: () => {},
  frames: () => Effect.succeed([])
}

export class Journal extends Context.Tag("capsule-runtime/services/Journal")<Journal, JournalService>() {
  /** Nothing durable: today's in-memory session. */
  static readonly none = Layer.succeed(Journal, noJournal)
  /** The journal in context, else none (the session's services take it where it is given). */
  static readonly current: Effect.Effect<JournalService> = Effect.map(Effect.serviceOption(Journal), (journal) =>
    journal._tag === "Some" ? journal.value : noJournal)
}
