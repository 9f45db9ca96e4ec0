/**
 * The push-notification config methods, 1.0's and 0.3's names over one store
 * (../services/PushConfigs.ts) and one sender (./push/PushSender.ts): a config may be made only
 * for a task the caller sees that has not ended, at a URL that passes the SSRF check (its
 * literal, then its resolution now, then every connection's), within the per-task and
 * per-session bounds.
 */
import { Effect } from "effect"
import { checkTarget, resolveTarget } from "./push/PushTarget.js"
import { makePushSender } from "./push/PushSender.js"
import { PushConfigNotFound, PushConfigs } from "../services/PushConfigs.js"
import { SessionPort } from "../services/SessionPort.js"
import { isTerminal, type Task } from "../services/Task.js"
import type { TaskNotFound } from "../services/TaskRegistry.js"
import type { CallContext } from "./CallContext.js"
import { DoorConfig } from "./DoorConfig.js"
import { InvalidParams, UnsupportedOperation } from "./DoorErrors.js"
import { decodePushSpec, decodePushTarget, pushConfig03, pushConfig1, type PushSpec } from "./PushParams.js"
import { json, type Method } from "./Method.js"

export const makePushMethods = (lookup: (call: CallContext, taskId: string) => Effect.Effect<Task, TaskNotFound>) =>
  Effect.gen(function*() {
    const configs = yield* PushConfigs
    const log = yield* SessionPort
    const door = yield* DoorConfig
    const sender = yield* makePushSender({
      allow: door.pushAllow,
      attempts: door.pushAttempts,
      timeoutMs: door.pushTimeoutMs,
      backoffMs: 500
    })

    const ended = (task: Task) =>
      isTerminal(task.state)
        ? Effect.fail(new UnsupportedOperation({ detail: `task ${task.id} is ${task.state}: it sends no more updates to push` }))
        : Effect.void

    /** The webhook's checks that need no task: its URL, then where its host resolves now. */
    const prepare = (spec: PushSpec) =>
      Effect.gen(function*() {
        const target = checkTarget(spec.url, door.pushAllow)
        if (target._tag === "Refused") return yield* new InvalidParams({ detail: target.reason })
        const refusal = yield* Effect.promise(() => resolveTarget(target.url, door.pushAllow))
        if (refusal !== undefined) return yield* new InvalidParams({ detail: refusal })
        return { ...spec, url: target.url.href }
      })

    /**
     * Registers a prepared spec for `task` and starts its deliveries: frames after `after` (now,
     * unless given), after `first` when given (the task as it was made).
     */
    const attach = (task: Task, spec: PushSpec, version: "0.3" | "1.0", first?: Task, after?: number) =>
      Effect.gen(function*() {
        yield* ended(task)
        const cursor = after ?? (yield* log.lastId())
        const config = yield* configs.put({
          id: spec.id,
          taskId: task.id,
          url: spec.url,
          token: spec.token,
          authentication: spec.authentication,
          version
        })
        yield* sender.start(config, cursor, first)
        return config
      })

    /** A config for a task that ended is refused before its URL is even resolved. */
    const register = (task: Task, spec: PushSpec, version: "0.3" | "1.0") =>
      Effect.flatMap(ended(task), () => Effect.flatMap(prepare(spec), (prepared) => attach(task, prepared, version)))

    const create: Method = (call) =>
      Effect.gen(function*() {
        const v1 = call.version === "1.0"
        // Both versions name the task `taskId` when making a config (0.3's other calls say `id`).
        const { taskId } = yield* decodePushTarget(call.params, "1.0")
        const spec = yield* decodePushSpec(v1 ? call.params : (call.params as { pushNotificationConfig?: unknown }).pushNotificationConfig, call.version)
        const config = yield* register(yield* lookup(call, taskId), spec, call.version)
        return json(v1 ? pushConfig1(config) : pushConfig03(config))
      })

    const get: Method = (call) =>
      Effect.gen(function*() {
        const { configId, taskId } = yield* decodePushTarget(call.params, call.version)
        yield* lookup(call, taskId)
        if (configId === undefined) {
          // 0.3 lets a client leave the config id out: the task's first config.
          const first = (yield* configs.list(taskId))[0]
          if (first === undefined) return yield* new PushConfigNotFound({ taskId, configId: "" })
          return json(pushConfig03(first))
        }
        const config = yield* configs.get(taskId, configId)
        return json(call.version === "1.0" ? pushConfig1(config) : pushConfig03(config))
      })

    const list: Method = (call) =>
      Effect.gen(function*() {
        const { taskId } = yield* decodePushTarget(call.params, call.version)
        yield* lookup(call, taskId)
        const all = yield* configs.list(taskId)
        // Never more than the per-task bound: one page holds them all.
        return json(call.version === "1.0" ? { configs: all.map(pushConfig1), nextPageToken: "" } : all.map(pushConfig03))
      })

    const remove: Method = (call) =>
      Effect.gen(function*() {
        const { configId, taskId } = yield* decodePushTarget(call.params, call.version)
        yield* lookup(call, taskId)
        if (configId === undefined) return yield* new InvalidParams({ detail: "the config's id is required" })
        yield* configs.remove(taskId, configId)
        yield* sender.stop(taskId, configId)
        return json(null)
      })

    return { methods: pushMethodTable(create, get, list, remove), prepare, attach }
  })

const pushMethodTable = (create: Method, get: Method, list: Method, remove: Method): ReadonlyArray<readonly [string, Method]> => [
  ["tasks/pushNotificationConfig/set", create],
  ["tasks/pushNotificationConfig/get", get],
  ["tasks/pushNotificationConfig/list", list],
  ["tasks/pushNotificationConfig/delete", remove],
  ["CreateTaskPushNotificationConfig", create],
  ["GetTaskPushNotificationConfig", get],
  ["ListTaskPushNotificationConfigs", list],
  ["DeleteTaskPushNotificationConfig", remove]
]

/**
 * The push methods of a door without the session's push configs (a fleet's gateway serving a
 * session another runner owns): each one, and a message that brings a config, is refused before
 * anything changes, rather than kept where no other door would find it.
 */
export const pushNotKept = (sessionId: string) => {
  const refused = Effect.fail(new UnsupportedOperation({
    detail: `push notification configs of session ${sessionId} are kept by the runner that owns it, and this runner serves it from elsewhere: a fleet does not take push configs yet`
  }))
  const method: Method = () => refused
  return {
    methods: pushMethodTable(method, method, method, method),
    prepare: (_spec: PushSpec) => refused,
    attach: (_task: Task, _spec: PushSpec, _version: "0.3" | "1.0", _first?: Task, _after?: number) => refused
  }
}

