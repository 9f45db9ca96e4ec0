/**
 * `murmur:message/send` (spec §2.8): an A2A `message/send` to a peer door, allowed only by the
 * capsule's network ceiling (checked before any connection), stamped `x-murmur-task-origin:
 * peer` and the sending task's trust. Answers the peer's task id, context id and state. A
 * redirect is never followed: the ceiling was checked for the peer URL only, so a 3xx answer is a
 * policy error and the message goes nowhere else.
 */
import { Effect, Either } from "effect"
import { mintId } from "../services/Ids.js"
import type { Trust } from "../services/Task.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import type { HostCall } from "./GuestJob.js"
import { checkPeerUrl, type NetworkRule } from "./NetworkPolicy.js"

export interface PeerTaskResult {
  readonly taskId: string
  readonly contextId: string
  readonly state: string
}

type SendCall = Extract<HostCall, { method: "sendMessage" }>

type Reply = { result?: { id?: unknown; contextId?: unknown; status?: { state?: unknown } }; error?: { message?: unknown } }

/** The `network policy:` error a redirecting peer gets: the capsule never follows it. */
export const redirectRefusal = (peerUrl: string, status: number, location: string | null): string =>
  `network policy: '${peerUrl}' answered a redirect (${status}${location === null ? "" : ` to '${location}'`}); message/send does not follow redirects`

const endpoint = (peerUrl: string) => (peerUrl.includes("://") ? peerUrl : `http://${peerUrl}`)

export const sendPeerMessage = (rules: ReadonlyArray<NetworkRule>, trust: Trust, call: SendCall, timeoutMs = 30_000) =>
  Effect.gen(function*() {
    const allowed = checkPeerUrl(rules, call.peerUrl)
    if (Either.isLeft(allowed)) return yield* Effect.fail({ message: allowed.left })
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: mintId("req"),
      method: "message/send",
      params: {
        message: {
          messageId: call.messageId,
          ...(call.contextId === undefined ? {} : { contextId: call.contextId }),
          role: "user",
          parts: [{ text: call.text }]
        }
      }
    })
    const traceHeaders = yield* outgoingTraceHeaders
    const answer = yield* Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(endpoint(call.peerUrl), {
          method: "POST",
          headers: { ...traceHeaders, "content-type": "application/json", "x-murmur-task-origin": "peer", "x-murmur-task-trust": trust },
          body,
          redirect: "manual",
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
        })
        if (response.status >= 300 && response.status < 400) {
          await response.body?.cancel()
          return Either.left(redirectRefusal(call.peerUrl, response.status, response.headers.get("location")))
        }
        return Either.right((await response.json()) as Reply)
      },
      catch: (error) => ({ message: `message/send to '${call.peerUrl}' failed: ${error instanceof Error ? error.message : String(error)}` })
    })
    if (Either.isLeft(answer)) return yield* Effect.fail({ message: answer.left })
    const reply = answer.right
    if (reply.error !== undefined) return yield* Effect.fail({ message: `peer answered an error: ${String(reply.error.message)}` })
    const result = reply.result
    if (typeof result?.id !== "string" || typeof result.contextId !== "string" || typeof result.status?.state !== "string") {
      return yield* Effect.fail({ message: "peer answered something that is not an A2A task" })
    }
    return { taskId: result.id, contextId: result.contextId, state: result.status.state } satisfies PeerTaskResult
  })
