/**
 * One call, whatever binding brought it: the method table's handler, after the checks every
 * binding makes the same way (the method's scope, params nesting, a stream slot for a streaming
 * call, a completion's proof). The answer is the method's result or the error to encode; each
 * binding encodes them in its own shapes (./RpcRoute.ts for JSON-RPC, ./RestRoute.ts for
 * HTTP+JSON).
 */
import type { IncomingHttpHeaders } from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Context, Effect, Layer } from "effect"
import { DelegationTracker } from "../services/DelegationTracker.js"
import type { Provenance } from "../services/Task.js"
import type { A2aVersion, Binding } from "./A2aWire.js"
import { type CallContext, header, parseLastEventId, speaksA2a } from "./CallContext.js"
import { scopeChallenge, scopeMessage } from "./DoorAuth.js"
import { DoorConfig } from "./DoorConfig.js"
import { allows, type Principal, scopeOf, taskStarting } from "./DoorScopes.js"
import { InvalidParams, MethodNotFound, TooManyStreams } from "./DoorErrors.js"
import { nestsDeeperThan, type RpcId } from "./JsonRpc.js"
import type { MethodResult } from "./Method.js"
import { makeMethods, streamingMethods } from "./RpcMethods.js"
import { internalError, type RpcError, toRpcError } from "./RpcErrors.js"
import { makeStreamSlots } from "./StreamSlots.js"

export type Dispatched =
  | { readonly _tag: "Result"; readonly result: MethodResult }
  | { readonly _tag: "Error"; readonly error: RpcError; readonly status?: number; readonly headers?: Record<string, string> }

export interface Incoming {
  /** Calls `release` once the response is over (ended, or cut by the client). */
  readonly whenDone: (release: () => void) => void
  readonly headers: IncomingHttpHeaders
  readonly principal: Principal
  readonly provenance: Provenance
  readonly id: RpcId
  readonly method: string
  readonly params: unknown
  readonly version: A2aVersion
  readonly binding: Binding
}

/**
 * A known token without the method's scope: HTTP 403 with RFC 6750's challenge, and an error
 * whose data names the scope. Implementation-defined code, clear of A2A's -32001…-32009; 43
 * recalls HTTP 403.
 */
export const insufficientScopeCode = -32043

const failed = (error: RpcError, status?: number, headers?: Record<string, string>): Dispatched => ({
  _tag: "Error",
  error,
  ...(status === undefined ? {} : { status }),
  ...(headers === undefined ? {} : { headers })
})

/**
 * When an HTTP response is over: Node emits `close` on every response, finished or cut, so a
 * slot released on it is never lost.
 */
export const whenResponseDone = (request: HttpServerRequest.HttpServerRequest) => (release: () => void) => {
  const response = NodeHttpServerRequest.toServerResponse(request)
  if (response.closed) release()
  else response.once("close", release)
}

export const makeDispatch = Effect.gen(function*() {
  const methods = yield* makeMethods
  const config = yield* DoorConfig
  const delegations = yield* DelegationTracker
  const slots = makeStreamSlots(config.maxWatchers)

  /** Claims the delegation's completion around `started`; it counts once a task exists. */
  const completing = <E, R>(delegationId: string | undefined, secret: string | undefined, started: Effect.Effect<MethodResult, E, R>) =>
    Effect.flatMap(delegations.claim(delegationId, secret), () =>
      Effect.onExit(started, (exit) => {
        const outcome = exit._tag === "Success" ? exit.value : undefined
        type Shown = { id?: unknown; status?: { state?: unknown }; task?: Shown } | undefined
        // 1.0 answers the task under `task`; 0.3 and the reference answer it bare.
        const answered = outcome?._tag === "Json" ? outcome.result as Shown : undefined
        const task = answered?.task ?? answered
        const state = task?.status?.state
        const took = outcome !== undefined &&
          (outcome._tag !== "Json" || (typeof task?.id === "string" && state !== "rejected" && state !== "TASK_STATE_REJECTED"))
        return delegations.settle(delegationId!, took, typeof task?.id === "string" ? task.id : undefined)
      }))

  return (incoming: Incoming): Effect.Effect<Dispatched> => {
    const { method, params, principal, provenance } = incoming
    const handler = methods.get(method)
    if (handler === undefined) return Effect.succeed(failed(toRpcError(new MethodNotFound({ method }))))
    const scope = scopeOf(method, provenance.origin)
    if (scope !== undefined && !allows(principal, scope, method)) {
      return Effect.succeed(failed({
        code: insufficientScopeCode,
        message: `Forbidden: ${scopeMessage(principal, scope)}`,
        data: { error: "insufficient_scope", scope, method, principal: principal.name }
      }, 403, { "www-authenticate": scopeChallenge(scope) }))
    }
    if (nestsDeeperThan(params, config.maxParamsDepth)) {
      return Effect.succeed(failed(toRpcError(new InvalidParams({ detail: `params nest deeper than ${config.maxParamsDepth} levels` }))))
    }
    if (streamingMethods.has(method)) {
      const release = slots.acquire()
      if (release === undefined) return Effect.succeed(failed(toRpcError(new TooManyStreams({ limit: config.maxWatchers }))))
      // The slot is held while the response is open: a stream's whole life, or a JSON answer's moment.
      incoming.whenDone(release)
    }
    const { headers } = incoming
    const call: CallContext = {
      id: incoming.id,
      method,
      params,
      a2a: incoming.version === "1.0" || speaksA2a(headers, params),
      version: incoming.version,
      binding: incoming.binding,
      lastEventId: parseLastEventId(header(headers, "last-event-id")),
      provenance,
      principal
    }
    // A completion that would start a task must prove it is its delegation's one completion.
    const run = provenance.origin === "completion" && taskStarting.has(method)
      ? completing(provenance.delegationId, header(headers, "x-murmur-completion-secret")?.trim(), handler(call))
      : handler(call)
    return Effect.matchCauseEffect(run, {
      onSuccess: (result): Effect.Effect<Dispatched> => Effect.succeed({ _tag: "Result", result }),
      onFailure: (cause) => {
        const failure = Cause.failureOption(cause)
        if (failure._tag === "Some") return Effect.succeed(failed(toRpcError(failure.value)))
        // Interruption only (a client abort): no failure in it, so nothing of `RpcFailure` escapes.
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        return Effect.logError("A2A method handler died", cause).pipe(Effect.as(failed(internalError)))
      }
    })
  }
})

/**
 * The session's one dispatch, shared by every binding that serves it (JSON-RPC, HTTP+JSON,
 * gRPC): the door-side state it keeps (who owns which context, the push senders) is then the
 * same whichever binding a call came by.
 */
export class DoorDispatch extends Context.Tag("capsule-runtime/http/DoorDispatch")<
  DoorDispatch,
  (incoming: Incoming) => Effect.Effect<Dispatched>
>() {
  /**
   * A fresh dispatch for each door it is provided to: layers are shared by reference within a
   * build, and two doors in one application (two mounted sessions) must not share one.
   */
  static readonly layer = Layer.fresh(Layer.scoped(DoorDispatch, makeDispatch))
}
