/**
 * The session's push-notification configs (A2A 1.0 §8): per task, each a webhook its task's
 * updates are POSTed to, kept until it is deleted or its task ends. Bounded per task and per
 * session, since a client adds them. With a store (a `Journal` in context) each change is
 * committed before it is answered, and a session started again finds its configs.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { mintId } from "./Ids.js"
import { Journal, type JournalService, noJournal } from "./Journal.js"

export interface PushAuthentication {
  readonly scheme: string
  readonly credentials?: string | undefined
}

export interface PushConfig {
  readonly id: string
  readonly taskId: string
  readonly url: string
  readonly token?: string | undefined
  readonly authentication?: PushAuthentication | undefined
  /** The A2A version it was registered over: its deliveries are that version's bodies. */
  readonly version: "0.3" | "1.0"
}

/** One config's key in maps of configs: its task and its id. */
export const pushConfigKey = (taskId: string, configId: string) => `${taskId}\u0000${configId}`

export interface PushLimits {
  readonly perTask: number
  readonly perSession: number
}

export const defaultPushLimits: PushLimits = { perTask: 8, perSession: 256 }

export class PushConfigNotFound extends Schema.TaggedError<PushConfigNotFound>()("PushConfigNotFound", {
  taskId: Schema.String,
  configId: Schema.String
}) {}

export class PushConfigLimit extends Schema.TaggedError<PushConfigLimit>()("PushConfigLimit", {
  limit: Schema.Number,
  per: Schema.Literal("task", "session")
}) {}

export class PushConfigs extends Context.Tag("capsule-runtime/services/PushConfigs")<PushConfigs, {
  /** Adds a config (an id is minted when it has none); the same id again replaces it. */
  readonly put: (config: Omit<PushConfig, "id"> & { readonly id?: string | undefined }) => Effect.Effect<PushConfig, PushConfigLimit>
  readonly get: (taskId: string, configId: string) => Effect.Effect<PushConfig, PushConfigNotFound>
  readonly list: (taskId: string) => Effect.Effect<ReadonlyArray<PushConfig>>
  readonly remove: (taskId: string, configId: string) => Effect.Effect<void, PushConfigNotFound>
  /** Forgets a task's configs (its updates are over). */
  readonly forget: (taskId: string) => Effect.Effect<void>
  /** The task's configs now, for the sender's hot path (no Effect per frame). */
  readonly current: (taskId: string) => ReadonlyArray<PushConfig>
  /**
   * The configs a store held when the session started again, and the last frame it had then:
   * their deliveries go on from the frames after it.
   */
  readonly recovered: { readonly configs: ReadonlyArray<PushConfig>; readonly after: number }
}>() {
  static readonly layer = (limits: Partial<PushLimits> = {}) =>
    Layer.effect(PushConfigs, Effect.map(Journal.current, (journal) => makePushConfigs({ ...defaultPushLimits, ...limits }, journal)))
}

export const makePushConfigs = (limits: PushLimits, journal: JournalService = noJournal): Context.Tag.Service<PushConfigs> => {
  const byTask = new Map<string, Map<string, PushConfig>>()
  let total = 0
  const none: ReadonlyArray<PushConfig> = []
  const committed = <A>(value: A) => journal.durable ? Effect.as(journal.commit, value) : Effect.succeed(value)
  const recovered: Array<PushConfig> = []
  for (const stored of journal.recovered.pushConfigs) {
    const config = JSON.parse(stored.config) as PushConfig
    const configs = byTask.get(config.taskId) ?? new Map<string, PushConfig>()
    configs.set(config.id, config)
    byTask.set(config.taskId, configs)
    total++
    recovered.push(config)
  }

  const put = (input: Omit<PushConfig, "id"> & { readonly id?: string | undefined }) =>
    Effect.suspend((): Effect.Effect<PushConfig, PushConfigLimit> => {
      const id = input.id === undefined || input.id.length === 0 ? mintId("pnc") : input.id
      const configs = byTask.get(input.taskId) ?? new Map<string, PushConfig>()
      const replaces = configs.has(id)
      if (!replaces && configs.size >= limits.perTask) return Effect.fail(new PushConfigLimit({ limit: limits.perTask, per: "task" }))
      if (!replaces && total >= limits.perSession) return Effect.fail(new PushConfigLimit({ limit: limits.perSession, per: "session" }))
      const config: PushConfig = { ...input, id }
      configs.set(id, config)
      byTask.set(input.taskId, configs)
      if (!replaces) total++
      if (journal.durable) journal.pushConfig({ taskId: config.taskId, configId: id, config: JSON.stringify(config) })
      return committed(config)
    })

  const get = (taskId: string, configId: string) =>
    Effect.suspend(() => {
      const config = byTask.get(taskId)?.get(configId)
      return config === undefined ? Effect.fail(new PushConfigNotFound({ taskId, configId })) : Effect.succeed(config)
    })

  const current = (taskId: string): ReadonlyArray<PushConfig> => {
    const configs = byTask.get(taskId)
    return configs === undefined ? none : Array.from(configs.values())
  }

  const remove = (taskId: string, configId: string) =>
    Effect.suspend(() => {
      const configs = byTask.get(taskId)
      if (configs?.delete(configId) !== true) return Effect.fail(new PushConfigNotFound({ taskId, configId }))
      total--
      if (configs.size === 0) byTask.delete(taskId)
      if (journal.durable) journal.removePushConfig(taskId, configId)
      return committed(undefined)
    })

  const forget = (taskId: string) =>
    Effect.suspend(() => {
      total -= byTask.get(taskId)?.size ?? 0
      byTask.delete(taskId)
      if (journal.durable) journal.removePushConfig(taskId, "*")
      return committed(undefined)
    })

  return PushConfigs.of({
    put,
    get,
    list: (taskId) => Effect.sync(() => current(taskId)),
    remove,
    forget,
    current,
    recovered: { configs: recovered, after: journal.recovered.lastFrameId }
  })
}
