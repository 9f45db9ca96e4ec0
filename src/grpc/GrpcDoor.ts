/**
 * A2A 1.0's gRPC binding (A2A 1.0 §10): service `lf.a2a.v1.A2AService`, each rpc the 1.0 method of
 * its name, dispatched as a JSON-RPC or HTTP+JSON call is (../http/Dispatch.ts), so every binding
 * shares every check, every task and the door's stream slots. The handler speaks ProtoJSON: a
 * request message goes in as its `toJSON`, a JSON answer comes back through the response type's
 * `fromJSON`, and a stream is the HTTP+JSON binding's SSE body read back into `StreamResponse`s
 * (./SseData.ts).
 *
 * Before dispatch, each call is checked as an HTTP request is: the bearer token in `authorization`
 * metadata (missing or unknown: UNAUTHENTICATED; a known one without the method's scope is refused
 * by dispatch, PERMISSION_DENIED), then `a2a-version` (absent: 1.0, this service's version; one the
 * door does not speak: FAILED_PRECONDITION with `VERSION_NOT_SUPPORTED`). Errors carry their
 * `ErrorInfo` in `grpc-status-details-bin` (./GrpcStatus.ts).
 *
 * Each call runs in a fiber of the door's set: a client's cancel interrupts it (the stream's
 * finalizers unsubscribe and give its slot back), and at shutdown open calls get a moment to end
 * as the session closes their streams before the rest are interrupted.
 */
import type { EventEmitter } from "node:events"
import { HttpServerError } from "@effect/platform"
import { type Metadata, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream, status } from "@grpc/grpc-js"
import { Cause, Effect, FiberSet, Stream } from "effect"
import { header, provenanceOf } from "../http/CallContext.js"
import { type Dispatched, DoorDispatch, type Incoming } from "../http/Dispatch.js"
import { DoorConfig } from "../http/DoorConfig.js"
import { credentialsOf } from "../http/DoorCredentials.js"
import { VersionNotSupported } from "../http/DoorErrors.js"
import { negotiate } from "../http/ProtocolVersion.js"
import { toRpcError } from "../http/RpcErrors.js"
import {
  AgentCard,
  type A2AServiceServer,
  A2AServiceService,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig
} from "./generated/a2a.js"
import { Empty } from "./generated/google/protobuf/empty.js"
import { headersOf } from "./GrpcMetadata.js"
import { GrpcServer } from "./GrpcServer.js"
import { type GrpcStatus, grpcStatus, plainStatus } from "./GrpcStatus.js"
import { sseData } from "./SseData.js"

/** A message type's ProtoJSON conversions (ts-proto's `MessageFns`). */
interface Codec<T> {
  readonly fromJSON: (json: any) => T
  readonly toJSON: (message: T) => unknown
}

/** What a call's handler sees of it, unary or streaming. */
type Call = EventEmitter & { readonly cancelled: boolean; readonly metadata: Metadata }

/** How long calls still open at shutdown get to end with the session's streams before they are interrupted. */
const drainMs = 1_000

const missingToken = "this door needs `authorization: Bearer <token>` metadata"
const invalidToken = "the bearer token is not one of this door's"

/**
 * Writes one message, waiting for `drain` when grpc-js's buffer is full (backpressure). A call
 * closed under the writer (its client gone) ends the writer by interruption, as a cancel does.
 */
const write = (call: ServerWritableStream<unknown, StreamResponse>, message: StreamResponse) =>
  Effect.suspend(() => {
    if (call.destroyed) return Effect.interrupt
    if (call.write(message)) return Effect.void
    return Effect.async<void>((resume) => {
      const settle = (next: Effect.Effect<void>) => () => {
        call.off("drain", drained)
        call.off("close", closed)
        resume(next)
      }
      const drained = settle(Effect.void)
      const closed = settle(Effect.interrupt)
      call.once("drain", drained)
      call.once("close", closed)
      return Effect.sync(() => {
        call.off("drain", drained)
        call.off("close", closed)
      })
    })
  })

/** A stream result's `StreamResponse`s: the SSE body's data, or a JSON answer as the one message. */
const streamResponses = (result: Extract<Dispatched, { _tag: "Result" }>["result"]) =>
  result._tag === "Sse"
    ? Stream.map(sseData(result.body), (data) => StreamResponse.fromJSON(JSON.parse(data)))
    : Stream.make(StreamResponse.fromJSON(result.result))

export const makeGrpcService = Effect.gen(function*() {
  const dispatch = yield* DoorDispatch
  const credentials = credentialsOf(yield* DoorConfig)
  const fibers = yield* FiberSet.make()
  const run = yield* FiberSet.runtime(fibers)<never>()
  // Registered after the set, so it runs before the set interrupts what is left. Finalizers run
  // uninterruptibly: the wait is made interruptible, or the timeout could not cut it short.
  yield* Effect.addFinalizer(() => Effect.interruptible(FiberSet.awaitEmpty(fibers)).pipe(Effect.timeout(drainMs), Effect.ignore))

  /** The call as dispatch takes it, or the status refusing it (token, then version, as over HTTP). */
  const admit = (call: Call, method: string, params: unknown, whenDone: Incoming["whenDone"]): Incoming | GrpcStatus => {
    const headers = headersOf(call.metadata)
    const principal = credentials.authenticate(header(headers, "authorization"))
    if (principal === "missing") return plainStatus(status.UNAUTHENTICATED, missingToken)
    if (principal === "invalid") return plainStatus(status.UNAUTHENTICATED, invalidToken)
    const negotiated = negotiate(headers, "")
    if (negotiated._tag === "Unsupported") return grpcStatus(toRpcError(new VersionNotSupported({ requested: negotiated.requested })))
    return { whenDone, headers, principal, provenance: provenanceOf(headers), id: null, method, params, version: "1.0", binding: "GRPC" }
  }

  /**
   * Dispatches a call and answers it with `answer`, or `refuse`s it with a status. The fiber is
   * interrupted when the client cancels; whatever dispatch holds for the call (a stream slot)
   * is given back when the fiber ends, however it ends.
   */
  const serve = (
    call: Call,
    method: string,
    params: unknown,
    answer: (outcome: Dispatched) => Effect.Effect<void>,
    refuse: (status: GrpcStatus) => void
  ): void => {
    const releases: Array<() => void> = []
    const incoming = admit(call, method, params, (release) => releases.push(release))
    if ("code" in incoming) return refuse(incoming)
    const fiber = run(
      dispatch(incoming).pipe(
        Effect.flatMap(answer),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.zipRight(
              Effect.logError("gRPC call failed", cause),
              Effect.sync(() => refuse(plainStatus(status.INTERNAL, "Internal error")))
            )
        ),
        Effect.ensuring(Effect.sync(() => releases.forEach((release) => release()))),
        Effect.annotateLogs({ service: "GrpcDoor", method })
      )
    )
    const cancel = () => fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
    call.once("cancelled", cancel)
    fiber.addObserver((exit) => {
      call.off("cancelled", cancel)
      // Interrupted with the client still there: the session is closing under the call.
      if (exit._tag === "Failure" && !call.cancelled) refuse(plainStatus(status.UNAVAILABLE, "the session is closing"))
    })
  }

  const unary = <Req, Res>(method: string, request: Codec<Req>, response: Codec<Res>) =>
  (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void =>
    serve(call, method, request.toJSON(call.request), (outcome) =>
      Effect.sync(() => {
        if (outcome._tag === "Error") return callback(grpcStatus(outcome.error), null)
        const result = outcome.result
        // A unary method never answers with a stream; a defect if it did.
        if (result._tag !== "Json") throw new Error(`${method} answered with a stream`)
        callback(null, response.fromJSON(result.result))
      }), (refusal) => callback(refusal, null))

  const streaming = <Req>(method: string, request: Codec<Req>) => (call: ServerWritableStream<Req, StreamResponse>): void => {
    const refuse = (refusal: GrpcStatus) => call.emit("error", refusal)
    serve(call, method, request.toJSON(call.request), (outcome) =>
      outcome._tag === "Error"
        ? Effect.sync(() => refuse(grpcStatus(outcome.error)))
        : Stream.runForEach(streamResponses(outcome.result), (message) => write(call, message)).pipe(
          // The stream ended (the task's last event, or the session closing): so does the call.
          Effect.zipRight(Effect.sync(() => call.end()))
        ), refuse)
  }

  const service: A2AServiceServer = {
    sendMessage: unary("SendMessage", SendMessageRequest, SendMessageResponse),
    sendStreamingMessage: streaming("SendStreamingMessage", SendMessageRequest),
    getTask: unary("GetTask", GetTaskRequest, Task),
    listTasks: unary("ListTasks", ListTasksRequest, ListTasksResponse),
    cancelTask: unary("CancelTask", CancelTaskRequest, Task),
    subscribeToTask: streaming("SubscribeToTask", SubscribeToTaskRequest),
    createTaskPushNotificationConfig: unary("CreateTaskPushNotificationConfig", TaskPushNotificationConfig, TaskPushNotificationConfig),
    getTaskPushNotificationConfig: unary("GetTaskPushNotificationConfig", GetTaskPushNotificationConfigRequest, TaskPushNotificationConfig),
    listTaskPushNotificationConfigs: unary(
      "ListTaskPushNotificationConfigs",
      ListTaskPushNotificationConfigsRequest,
      ListTaskPushNotificationConfigsResponse
    ),
    getExtendedAgentCard: unary("GetExtendedAgentCard", GetExtendedAgentCardRequest, AgentCard),
    deleteTaskPushNotificationConfig: unary("DeleteTaskPushNotificationConfig", DeleteTaskPushNotificationConfigRequest, Empty)
  }
  return service
})

/** Serves the door's gRPC binding on the `GrpcServer` in context until the scope closes. */
export const serveGrpcDoor = Effect.gen(function*() {
  const server = yield* GrpcServer
  yield* server.serve(A2AServiceService, yield* makeGrpcService)
})
