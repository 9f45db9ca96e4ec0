/**
 * Delivers a task's updates to its push configs (A2A 1.0 §8, 0.3 §9): one worker per config,
 * reading the task's frames from the event log as a stream does, POSTing each as the version the
 * config was registered over says (1.0: the `StreamResponse`, `application/a2a+json`; 0.3: the
 * whole `Task`, `application/json`), in order, one at a time, until the task ends or the config
 * is deleted. A failed POST is retried with exponential backoff (5xx, 408, 425, 429, network
 * errors, time-outs); a redirect is never followed and, like any other 4xx, not retried. What a
 * slow webhook cannot take waits in the worker's subscription, which is bounded: past its bound
 * the frames are dropped and counted (`push fell behind`). Every connection goes through
 * `./PushTarget.ts`'s check. Each update's outcome (delivered, failed, dropped) is one
 * `push_delivery` line of the session's record (an agent session's trace).
 */
import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { Duration, Effect, Fiber, Schedule } from "effect"
import { a2aEvents, a2aTask } from "../A2aWire.js"
import type { LogItem, Subscription } from "../../services/EventLog.js"
import { SessionPort } from "../../services/SessionPort.js"
import type { PushConfig } from "../../services/PushConfigs.js"
import { pushConfigKey, PushConfigs } from "../../services/PushConfigs.js"
import { SessionRecord } from "../../services/SessionRecord.js"
import { isTerminal, type Task } from "../../services/Task.js"
import { guardedLookup, PushTargetRefused } from "./PushTarget.js"

export interface PushSettings {
  /** Hosts a webhook may be at even when they resolve to a private address (`--push-allow`). */
  readonly allow: ReadonlyArray<string>
  /** Tries per update, the first included. */
  readonly attempts: number
  /** Each POST must be answered within this. */
  readonly timeoutMs: number
  /** The first retry waits this long; each later one twice as long as the one before. */
  readonly backoffMs: number
}

export const defaultPushSettings: PushSettings = { allow: [], attempts: 5, timeoutMs: 10_000, backoffMs: 500 }

type Outcome = { readonly _tag: "Delivered"; readonly status: number } | { readonly _tag: "Failed"; readonly reason: string; readonly retry: boolean }

const retryable = (status: number) => status >= 500 || status === 408 || status === 425 || status === 429

/** One POST, with the connection's address checked; interrupting it aborts the request. */
const post = (config: PushConfig, body: string, settings: PushSettings): Effect.Effect<Outcome> =>
  Effect.async<Outcome>((resume) => {
    const url = new URL(config.url)
    const headers: Record<string, string> = {
      "content-type": config.version === "1.0" ? "application/a2a+json" : "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": "capsule-runtime push"
    }
    if (config.token !== undefined && config.token.length > 0) headers["x-a2a-notification-token"] = config.token
    const credentials = config.authentication?.credentials
    if (config.authentication !== undefined && credentials !== undefined && credentials.length > 0) {
      headers.authorization = `${config.authentication.scheme} ${credentials}`
    }
    const send = url.protocol === "https:" ? httpsRequest : httpRequest
    let settled = false
    const done = (outcome: Outcome) => {
      if (settled) return
      settled = true
      resume(Effect.succeed(outcome))
    }
    const request = send(url, {
      method: "POST",
      headers,
      // No pooled connection: each POST resolves and checks its address again.
      agent: false,
      lookup: guardedLookup(settings.allow) as never,
      timeout: settings.timeoutMs
    }, (response: IncomingMessage) => {
      // Only the status matters: the body is read and dropped, never held.
      response.resume()
      const status = response.statusCode ?? 0
      if (status >= 200 && status < 300) return done({ _tag: "Delivered", status })
      if (status >= 300 && status < 400) return done({ _tag: "Failed", reason: `answered ${status} (a redirect, not followed)`, retry: false })
      done({ _tag: "Failed", reason: `answered ${status}`, retry: retryable(status) })
    })
    request.on("timeout", () => request.destroy(new Error(`no answer within ${settings.timeoutMs} ms`)))
    request.on("error", (error) => done({ _tag: "Failed", reason: error.message, retry: !(error instanceof PushTargetRefused) }))
    request.end(body)
    return Effect.sync(() => request.destroy())
  })

/** Waits for the subscription's next items (a scoped wait: interruption cancels it). */
const next = (subscription: Subscription): Effect.Effect<Array<LogItem>> =>
  Effect.suspend(() => {
    const waiting = subscription.take()
    if (waiting.length > 0) return Effect.succeed(waiting)
    return Effect.async<Array<LogItem>>((resume) => {
      const cancel = subscription.await(() => resume(Effect.sync(() => subscription.take())))
      return Effect.sync(cancel)
    })
  })

export const makePushSender = (settings: PushSettings) =>
  Effect.gen(function*() {
    // The session's frames and tasks, read the same way the door's methods read them.
    const port = yield* SessionPort
    const configs = yield* PushConfigs
    const recorder = yield* SessionRecord
    const scope = yield* Effect.scope
    /** The running worker of each config, by task and config id. */
    const workers = new Map<string, { readonly config: PushConfig; fiber?: Fiber.RuntimeFiber<void> }>()
    const keyOf = (config: PushConfig) => pushConfigKey(config.taskId, config.id)

    /** One update, tried until it is delivered, refused for good, or out of attempts; each traced once. */
    const deliver = (config: PushConfig, host: string, body: string) => {
      let attempts = 0
      return Effect.suspend(() => {
        attempts++
        return post(config, body, settings)
      }).pipe(
        Effect.flatMap((outcome) => (outcome._tag === "Failed" && outcome.retry ? Effect.fail(outcome) : Effect.succeed(outcome))),
        Effect.retry(Schedule.exponential(Duration.millis(settings.backoffMs)).pipe(Schedule.intersect(Schedule.recurs(settings.attempts - 1)))),
        Effect.merge,
        Effect.tap((outcome) =>
          Effect.zipRight(
            recorder.record("push_delivery", {
              task_id: config.taskId,
              push_config_id: config.id,
              host,
              outcome: outcome._tag === "Delivered" ? "delivered" : "failed",
              attempts,
              ...(outcome._tag === "Delivered" ? { status: outcome.status } : { reason: outcome.reason })
            }),
            outcome._tag === "Delivered" ? Effect.logDebug("push delivered") : Effect.logWarning("push not delivered", { reason: outcome.reason })
          )
        ),
        Effect.annotateLogs({ taskId: config.taskId, pushConfigId: config.id, host }),
        Effect.withSpan("Push.deliver", { attributes: { "murmur.task_id": config.taskId, "murmur.push_config_id": config.id } })
      )
    }

    const snapshotBody = (task: Task, config: PushConfig) =>
      config.version === "1.0" ? JSON.stringify({ task: a2aTask(task, {}, "1.0") }) : JSON.stringify(a2aTask(task))

    const worker = (config: PushConfig, after: number, first: Task | undefined): Effect.Effect<void> =>
      Effect.scoped(Effect.gen(function*() {
        const subscription = yield* port.open({ after, taskId: config.taskId })
        const event = a2aEvents("1.0")
        // Where it goes, for the trace and logs: the host only, never the path, query or credentials.
        const host = new URL(config.url).host
        if (first !== undefined) yield* deliver(config, host, snapshotBody(first, config))
        while (true) {
          for (const item of yield* next(subscription)) {
            if (item._tag === "Closed") return
            if (item._tag === "Lagged") {
              yield* recorder.record("push_delivery", {
                task_id: config.taskId,
                push_config_id: config.id,
                host,
                outcome: "dropped",
                missed: item.missed
              })
              yield* Effect.logWarning("push fell behind: updates dropped", { missed: item.missed, taskId: config.taskId, pushConfigId: config.id })
              continue
            }
            if (item._tag !== "Frame") continue
            const frame = item.frame
            if (config.version === "1.0") {
              yield* deliver(config, host, event(frame))
            } else {
              // 0.3 receivers get the whole task as it stands.
              const task = yield* Effect.option(port.get(config.taskId))
              if (task._tag === "Some") yield* deliver(config, host, snapshotBody(task.value, config))
            }
            if (frame.event._tag === "Status" && isTerminal(frame.event.state)) return
          }
        }
      })).pipe(
        // The task's updates are over: its config goes with them (A2A 1.0 §8), unless the worker
        // was replaced (the same id registered again) or its config deleted already.
        Effect.ensuring(Effect.suspend(() => {
          const key = keyOf(config)
          if (workers.get(key)?.config !== config) return Effect.void
          workers.delete(key)
          const stored = configs.current(config.taskId).find((entry) => entry.id === config.id)
          return stored === config ? Effect.ignore(configs.remove(config.taskId, config.id)) : Effect.void
        }))
      )

    /** Starts delivering the task's frames after `after` to `config` (after `first`, a snapshot, when given). */
    const start = (config: PushConfig, after: number, first?: Task): Effect.Effect<void> =>
      Effect.gen(function*() {
        const key = keyOf(config)
        const previous = workers.get(key)
        const entry: { readonly config: PushConfig; fiber?: Fiber.RuntimeFiber<void> } = { config }
        workers.set(key, entry)
        if (previous?.fiber !== undefined) yield* Fiber.interrupt(previous.fiber)
        entry.fiber = yield* Effect.forkIn(worker(config, after, first), scope)
      })

    const stop = (taskId: string, configId: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const key = pushConfigKey(taskId, configId)
        const entry = workers.get(key)
        workers.delete(key)
        return entry?.fiber === undefined ? Effect.void : Fiber.interrupt(entry.fiber)
      })

    // A session started again from a store: a config delivers on from the frames after the
    // store's last one, if its task is live or has frames since (the final state the restart
    // wrote for an interrupted task); a config of a task that ended before the restart goes.
    const { after } = configs.recovered
    for (const config of configs.recovered.configs) {
      const task = yield* Effect.option(port.get(config.taskId))
      const since = yield* Effect.scoped(Effect.map(port.open({ after, taskId: config.taskId }), (subscription) => subscription.take().some((item) => item._tag === "Frame")))
      if (task._tag === "Some" && (!isTerminal(task.value.state) || since)) yield* start(config, after)
      else yield* Effect.ignore(configs.remove(config.taskId, config.id))
    }

    return { start, stop }
  })

export type PushSender = Effect.Effect.Success<ReturnType<typeof makePushSender>>
