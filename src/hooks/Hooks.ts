/**
 * A session's hook dispatch (spec §4.7, §3.8). Each call runs the hook's component in a worker of
 * its own, under its entry's grant and its deadline (`limits.deadline_seconds`, 30 s for hooks),
 * like a tool call: a hook that traps, hangs or answers too much ends in `worker.terminate()` and
 * harms nothing else. (The reference keeps one instance per hook for the session; here no guest
 * state outlives a call, so a hook that must remember keeps it in its state store.)
 *
 * - Observation (`fire`): every hook bound to the event, in declaration order. A blocking hook's
 *   honoured answer is returned to the caller to commit; an async hook's call is queued (a
 *   bounded queue of 1 024 per hook, `on_overflow: drop | block`) and its answer never committed.
 * - Decision (`decide`): the `deny` hooks bound to `on-tool-call` / `on-shell`, before the call
 *   runs. Only a clean `none` lets it run; anything else refuses it (fail-closed).
 * - Faults (an `err`, a trap, a deadline, an arm the binding cannot honour, a full queue) are
 *   traced `hook_dispatch_error` and written to `logs/hook-<name>.log`; the session goes on.
 */
import { Duration, Effect, Fiber, Queue, type Scope } from "effect"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { HookBinding, HookCallData, HookHostCall } from "../sandbox/GuestJob.js"
import { MAX_GUEST_OUTPUT_BYTES } from "../sandbox/GuestOutput.js"
import type { GuestHost, Sandbox } from "../sandbox/Sandbox.js"
import type { HookEntry } from "./HookEntry.js"

/** An honoured answer of a blocking hook, for its caller to commit. */
export interface HookCommit {
  readonly hook: string
  readonly tag: "replace-context" | "write-manifests" | "artifact" | "reopen-task" | "seed-context"
  readonly val: unknown
}

/** A hook that answered `err`, trapped or timed out (what `on-compaction` fails the task with). */
export interface HookFailure {
  readonly hook: string
  readonly message: string
}

export interface Fired {
  readonly commits: ReadonlyArray<HookCommit>
  readonly failures: ReadonlyArray<HookFailure>
}

export interface Denial {
  readonly hook: string
  readonly reason: string
}

/** What a hook's imports reach on the host, for the call in progress. */
export type HookServices = (hook: HookEntry, call: HookHostCall) => Effect.Effect<unknown, { readonly message: string }>

/** Where a call's faults are traced: under `parent` (the task's line), else the session's. */
export interface HookCallContext {
  readonly parent?: string | undefined
  readonly services: HookServices
}

export interface Hooks {
  /** Whether any hook is called at `binding` (an event need not be built otherwise). */
  readonly at: (binding: HookBinding) => boolean
  readonly fire: (binding: HookBinding, event: Readonly<Record<string, unknown>>, context: HookCallContext) => Effect.Effect<Fired>
  readonly decide: (binding: "on-tool-call" | "on-shell", event: Readonly<Record<string, unknown>>, context: HookCallContext) => Effect.Effect<Denial | undefined>
  /** Waits up to 15 s for the async queues to empty (a `drain` fault past it). */
  readonly drain: Effect.Effect<void>
  /** Traces and logs a fault of hook `hook` found by its caller (an answer it could not commit). */
  readonly fault: (hook: string, event: string, arm: string, message: string, parent?: string) => Effect.Effect<void>
}

export interface HooksOptions {
  readonly hooks: ReadonlyArray<HookEntry>
  readonly sandbox: Sandbox["Type"]
  readonly sessionId: string
  /** The accessible workdir, for `logs/hook-<name>.log`. */
  readonly workdir: string
  readonly record: (eventType: string, parent: string | undefined, fields: Readonly<Record<string, unknown>>) => Effect.Effect<unknown, unknown>
}

/** An async hook's queue bound and the session-end drain (spec §5.3). */
export const ASYNC_QUEUE = 1024
export const DRAIN_SECONDS = 15

/** The arm a blocking hook's answer may carry at each binding, by its policy (`artifact` at on-inference always). */
const honoured = (hook: HookEntry, binding: HookBinding, tag: string): boolean => {
  if (binding === "on-inference" && tag === "artifact") return true
  switch (tag) {
    case "write-manifests":
      return binding === "on-stage" && hook.policy === tag
    case "seed-context":
      return binding === "on-task-start" && hook.policy === tag
    case "replace-context":
      return binding === "on-compaction" && hook.policy === tag
    case "reopen-task":
      return binding === "on-task-end" && hook.policy === tag
    default:
      return false
  }
}

type Answer =
  | { readonly _tag: "Output"; readonly tag: string; readonly val: unknown }
  | { readonly _tag: "Fault"; readonly arm: "error" | "timeout"; readonly message: string }

/** A hook's own log, bounded per hook per session like a guest's. */
const hookLog = (workdir: string, name: string) => {
  let written = 0
  return (text: string) =>
    Effect.sync(() => {
      if (written >= MAX_GUEST_OUTPUT_BYTES) return
      const line = text.slice(0, MAX_GUEST_OUTPUT_BYTES - written)
      written += line.length
      try {
        WorkdirFs.append(workdir, `logs/hook-${name}.log`, line)
      } catch {
        // A link planted at logs/ costs the log, never the session.
      }
    })
}

export const makeHooks = (options: HooksOptions): Effect.Effect<Hooks, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { hooks, sandbox } = options
    const logs = new Map(hooks.map((hook) => [hook.name, hookLog(options.workdir, hook.name)]))

    const call = (hook: HookEntry, binding: HookBinding, event: Readonly<Record<string, unknown>>, context: HookCallContext): Effect.Effect<Answer> => {
      const log = logs.get(hook.name)!
      const host: GuestHost = {
        text: () => Effect.void,
        thinking: () => Effect.void,
        requestInput: () => Effect.fail({ message: "request-input is not available to a hook" }),
        sendMessage: () => Effect.fail({ message: "message/send is not available to a hook" }),
        stdout: log,
        stderr: log,
        hook: (request) => context.services(hook, request)
      }
      const hookCall: HookCallData = { binding, event, taskIo: hook.taskIo, conversation: hook.conversation }
      return sandbox.run({
        role: { kind: "hook", name: hook.name },
        component: hook.spec.component,
        grant: hook.spec.grant,
        deadlineSeconds: hook.spec.deadlineSeconds,
        hookCall,
        allowlist: [],
        tools: {},
        inTask: false,
        sessionId: options.sessionId,
        artifacts: [],
        host
      }).pipe(
        Effect.map((outcome): Answer => {
          const answer = outcome.hook
          if (answer === undefined) return { _tag: "Output", tag: "none", val: undefined }
          if ("err" in answer) return { _tag: "Fault", arm: "error", message: answer.err }
          return { _tag: "Output", tag: answer.ok.tag, val: answer.ok.val }
        }),
        Effect.catchAll((error) => Effect.succeed<Answer>({ _tag: "Fault", arm: error.reason === "Deadline" ? "timeout" : "error", message: error.message })),
        Effect.withSpan("Hooks.call", { attributes: { hook: hook.name, binding } })
      )
    }

    const faultOf = (name: string, event: string, arm: string, message: string, parent: string | undefined) =>
      Effect.zipRight(
        logs.get(name)?.(`[${new Date().toISOString()}] ${event}: ${arm}: ${message}\n`) ?? Effect.void,
        Effect.ignore(options.record("hook_dispatch_error", parent, { hook_name: name, event, arm, message }))
      )
    const fault = (hook: HookEntry, event: string, arm: string, message: string, parent: string | undefined) => faultOf(hook.name, event, arm, message, parent)

    // One consumer fiber per async hook, in the session's scope: calls run in order, answers are not committed.
    const queues = new Map<string, { readonly queue: Queue.Queue<Effect.Effect<void>>; pending: number }>()
    for (const hook of hooks) {
      if (hook.mode !== "async") continue
      const queue = yield* (hook.overflow === "block" ? Queue.bounded<Effect.Effect<void>>(ASYNC_QUEUE) : Queue.dropping<Effect.Effect<void>>(ASYNC_QUEUE))
      const entry = { queue, pending: 0 }
      queues.set(hook.name, entry)
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(queue), (job) => Effect.ensuring(job, Effect.sync(() => void entry.pending--)))))
    }

    const observe = (hook: HookEntry, binding: HookBinding, event: Readonly<Record<string, unknown>>, context: HookCallContext) =>
      Effect.gen(function*() {
        const answer = yield* call(hook, binding, event, context)
        if (answer._tag === "Fault") {
          yield* fault(hook, binding, answer.arm, answer.message, context.parent)
          return { failure: { hook: hook.name, message: answer.message } }
        }
        if (answer.tag === "none") return {}
        if (hook.mode === "blocking" && honoured(hook, binding, answer.tag)) {
          return { commit: { hook: hook.name, tag: answer.tag as HookCommit["tag"], val: answer.val } }
        }
        yield* fault(hook, binding, answer.tag, `the ${answer.tag} arm is not honoured at ${binding} with commit_policy '${hook.policy}'${hook.mode === "async" ? " (async output is never committed)" : ""}`, context.parent)
        return {}
      })

    const fire: Hooks["fire"] = (binding, event, context) =>
      Effect.gen(function*() {
        const commits: Array<HookCommit> = []
        const failures: Array<HookFailure> = []
        for (const hook of hooks) {
          // A deny hook is asked at the decision point, not after.
          if (!hook.bindings.includes(binding) || hook.policy === "deny") continue
          const queued = queues.get(hook.name)
          if (queued !== undefined) {
            queued.pending++
            const accepted = yield* Queue.offer(queued.queue, Effect.asVoid(observe(hook, binding, event, context)))
            if (!accepted) {
              queued.pending--
              yield* fault(hook, binding, "queue-overflow", `the async queue (${ASYNC_QUEUE} calls) is full; the call was dropped (on_overflow: drop)`, context.parent)
            }
            continue
          }
          const seen = yield* observe(hook, binding, event, context)
          if (seen.commit !== undefined) commits.push(seen.commit)
          if (seen.failure !== undefined) failures.push(seen.failure)
        }
        return { commits, failures }
      })

    const decide: Hooks["decide"] = (binding, event, context) =>
      Effect.gen(function*() {
        for (const hook of hooks) {
          if (hook.policy !== "deny" || !hook.bindings.includes(binding)) continue
          const answer = yield* call(hook, binding, event, context)
          if (answer._tag === "Fault") {
            yield* fault(hook, binding, answer.arm, answer.message, context.parent)
            return { hook: hook.name, reason: `the policy hook failed (${answer.message}); the call is refused` }
          }
          if (answer.tag === "none") continue
          const reason = answer.tag === "deny" && typeof answer.val === "string" && answer.val.trim() !== "" ? answer.val : undefined
          return { hook: hook.name, reason: reason ?? `the policy hook answered '${answer.tag}'${answer.tag === "deny" ? " with no reason" : ""}; the call is refused` }
        }
        return undefined
      })

    const idle = Effect.suspend(() => Effect.succeed([...queues.values()].every((entry) => entry.pending === 0)))
    const drain = Effect.gen(function*() {
      if (queues.size === 0) return
      const waiting = yield* Effect.fork(Effect.repeat(Effect.sleep(Duration.millis(10)), { until: () => [...queues.values()].every((entry) => entry.pending === 0) }))
      const done = yield* Fiber.join(waiting).pipe(Effect.timeout(Duration.seconds(DRAIN_SECONDS)), Effect.option)
      if (done._tag === "Some" || (yield* idle)) return
      for (const hook of hooks) {
        const entry = queues.get(hook.name)
        if (entry !== undefined && entry.pending > 0) {
          yield* fault(hook, "drain", "timeout", `${entry.pending} async call(s) not finished within ${DRAIN_SECONDS}s of the session's end; they were stopped`, undefined)
        }
      }
    })

    return {
      at: (binding) => hooks.some((hook) => hook.bindings.includes(binding)),
      fire,
      decide,
      drain,
      fault: (hook, event, arm, message, parent) => faultOf(hook, event, arm, message, parent)
    } satisfies Hooks
  })
