/**
 * `murmur:message/send` (spec §2.8): an A2A `message/send` to a peer door, allowed only by the
 * capsule's network ceiling (checked before any connection), stamped `x-murmur-task-origin:
 * peer` and the sending task's trust. Answers the peer's task id, context id and state. A
 * redirect is never followed: the ceiling was checked for the peer URL only, so a 3xx answer is a
 * policy error and the message goes nowhere else.
 */
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Duration, Effect, Either, Layer, ParseResult, Schema } from "effect"
import { mintId } from "../services/Ids.js"
import type { Trust } from "../services/Task.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import type { HostCall } from "../sandbox/GuestJob.js"
import { checkPeerUrl, type NetworkRule } from "../project/NetworkPolicy.js"

export interface PeerTaskResult {
  readonly taskId: string
  readonly contextId: string
  readonly state: string
}

type SendCall = Extract<HostCall, { method: "sendMessage" }>

/** What a peer may answer: an A2A task (other fields ignored) or a JSON-RPC error. */
const PeerReply = Schema.Union(
  Schema.Struct({
    error: Schema.Struct({ message: Schema.optionalWith(Schema.Unknown, { default: () => "no message" }) })
  }),
  Schema.Struct({
    result: Schema.Struct({ id: Schema.String, contextId: Schema.String, status: Schema.Struct({ state: Schema.String }) })
  })
)

/** The `network policy:` error a redirecting peer gets: the capsule never follows it. */
export const redirectRefusal = (peerUrl: string, status: number, location: string | null): string =>
  `network policy: '${peerUrl}' answered a redirect (${status}${location === null ? "" : ` to '${location}'`}); message/send does not follow redirects`

const endpoint = (peerUrl: string) => (peerUrl.includes("://") ? peerUrl : `http://${peerUrl}`)

/**
 * Fetch with `redirect: "manual"`: a 3xx comes back as itself. The client's own trace
 * propagation is off because the caller's span (the one an `a2a_send` trace line names) is
 * the parent the peer must see, not a client span beneath it.
 */
const peerClient = Layer.merge(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.RequestInit, { redirect: "manual" }))

const failure = (message: string) => Effect.fail({ message })

export const sendPeerMessage = (rules: ReadonlyArray<NetworkRule>, trust: Trust, call: SendCall, timeoutMs = 30_000) =>
  Effect.gen(function*() {
    const allowed = checkPeerUrl(rules, call.peerUrl)
    if (Either.isLeft(allowed)) return yield* failure(allowed.left)
    // Scoped: the request (and any body left unread, e.g. a redirect's) is aborted once this ends.
    const client = (yield* HttpClient.HttpClient).pipe(HttpClient.withTracerPropagation(false), HttpClient.withScope)
    const request = HttpClientRequest.post(endpoint(call.peerUrl)).pipe(
      HttpClientRequest.setHeaders({ ...(yield* outgoingTraceHeaders), "x-murmur-task-origin": "peer", "x-murmur-task-trust": trust }),
      HttpClientRequest.bodyUnsafeJson({
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
    )
    const sendFailed = (error: { readonly message: string }) => failure(`message/send to '${call.peerUrl}' failed: ${error.message}`)
    const response = yield* client.execute(request).pipe(
      Effect.timeoutFail({ duration: Duration.millis(timeoutMs), onTimeout: () => ({ message: `no answer within ${timeoutMs} ms` }) }),
      Effect.catchAll(sendFailed)
    )
    if (response.status >= 300 && response.status < 400) {
      return yield* failure(redirectRefusal(call.peerUrl, response.status, response.headers["location"] ?? null))
    }
    const reply = yield* HttpClientResponse.schemaBodyJson(PeerReply)(response).pipe(
      Effect.catchTags({
        ParseError: (error) =>
          failure(`peer answered something that is not an A2A task: ${ParseResult.TreeFormatter.formatErrorSync(error).split("\n")[0]}`),
        ResponseError: sendFailed
      })
    )
    if ("error" in reply) return yield* failure(`peer answered an error: ${String(reply.error.message)}`)
    return { taskId: reply.result.id, contextId: reply.result.contextId, state: reply.result.status.state } satisfies PeerTaskResult
  }).pipe(Effect.scoped, Effect.provide(peerClient))
