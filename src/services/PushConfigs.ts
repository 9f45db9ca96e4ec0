/**
 * The session's push-notification configs (A2A 1.0 §8): per task, each a webhook its task's
 * updates are POSTed to, kept until it is deleted or its task ends. Bounded per task and per
 * session, since a client adds them. In memory; a durable store replaces the layer.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { mintId } from "./Ids.js"

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
}>() {
  static readonly layer = (limits: Partial<PushLimits> = {}) => Layer.sync(PushConfigs, () => makePushConfigs({ ...defaultPushLimits, ...limits }))
}

export const makePushConfigs = (limits: PushLimits): Context.Tag.Service<PushConfigs> => {
  const byTask = new Map<string, Map<string, PushConfig>>()
  let total = 0
  const none: ReadonlyArray<PushConfig> = []

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
      return Effect.succeed(config)
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
      return Effect.void
    })

  const forget = (taskId: string) =>
    Effect.sync(() => {
      total -= byTask.get(taskId)?.size ?? 0
      byTask.delete(taskId)
    })

  return PushConfigs.of({ put, get, list: (taskId) => Effect.sync(() => current(taskId)), remove, forget, current })
}
