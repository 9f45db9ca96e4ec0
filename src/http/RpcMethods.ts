/**
 * The JSON-RPC method table: each entry decodes its params, delegates to the services and
 * encodes the answer in the request's dialect. Streaming methods answer with an SSE body.
 */
import { Effect, Either, Option, Stream } from "effect"
import type { LogItem } from "../services/EventLog.js"
import { PushConfigs } from "../services/PushConfigs.js"
import { SessionIdentity } from "../services/SessionIdentity.js"
import { isTerminal, type Task } from "../services/Task.js"
import { SessionPort } from "../services/SessionPort.js"
import { type Acceptance, TaskNotFound } from "../services/TaskRegistry.js"
import { a2aEncoder, a2aTask, endsA2aStream } from "./A2aWire.js"
import { settledWithin } from "./BlockingWait.js"
import type { CallContext } from "./CallContext.js"
import { makeContextOwners } from "./ContextOwners.js"
import { DoorConfig } from "./DoorConfig.js"
import { ContentTypeNotSupported, ContextNotOwned, InvalidParams, MethodNotFound, TaskNotCancelable, UnsupportedOperation } from "./DoorErrors.js"
import { isAdmin, noScopes } from "./DoorScopes.js"
import { decodeSendParams, decodeTaskQuery, type SendRequest } from "./Params.js"
import { decodeListRequest, decodeSendRequest1 } from "./Params1.js"
import {
  referenceAck,
  referenceClosed,
  referenceError,
  referenceFrame,
  referenceGap,
  referenceLagged,
  referenceRejected,
  referenceSettled,
  referenceTask
} from "./ReferenceWire.js"
import { json, type Method, type MethodResult } from "./Method.js"
import { makePushMethods, pushNotKept } from "./PushMethods.js"
import { sseOnce, sseStream } from "./Sse.js"
import { listTasks } from "./TaskListing.js"


const requireId = (params: unknown, method: string) =>
  Effect.flatMap(decodeTaskQuery(params), (query) =>
    query.id === undefined ? Effect.fail(new InvalidParams({ detail: `${method} requires an id` })) : Effect.succeed({ ...query, id: query.id }))

export const makeMethods = Effect.gen(function*() {
  // The session's tasks, runner and frames, here or on another runner of a fleet.
  const port = yield* SessionPort
  const identity = yield* SessionIdentity
  const config = yield* DoorConfig
  // What the card advertises: a session may start no task whatever the door was given (a manifest's task_acceptance).
  const startsTasks = identity.card.capabilities.streaming
  const owners = makeContextOwners()

  /** A task of a context the caller does not own answers as if it did not exist (no oracle for ids). */
  const visible = (call: CallContext, task: Task): Effect.Effect<Task, TaskNotFound> =>
    owners.sees(call.principal, task.contextId) ? Effect.succeed(task) : Effect.fail(new TaskNotFound({ taskId: task.id }))
  const lookup = (call: CallContext, taskId: string) => Effect.flatMap(port.get(taskId), (task) => visible(call, task))
  // Without the session's push configs here (a fleet's gateway), the push methods refuse.
  const kept = yield* Effect.serviceOption(PushConfigs)
  const push = Option.isSome(kept) ? yield* Effect.provideService(makePushMethods(lookup), PushConfigs, kept.value) : pushNotKept(identity.sessionId)
  // A session started again from a store: its contexts belong to whoever created them before.
  for (const task of yield* port.list()) {
    if (task.provenance.principal !== undefined && task.provenance.origin !== "completion") {
      owners.claim(task.contextId, { name: task.provenance.principal, scopes: noScopes })
    }
  }

  /**
   * The task a message id started before (idempotent submit) answers only its own principal:
   * another one reusing the id is refused, and learns nothing of the task.
   */
  const ownDuplicate = (call: CallContext, acceptance: Acceptance): Effect.Effect<void, InvalidParams> =>
    acceptance._tag === "Accepted" && acceptance.duplicate === true && !owners.sees(call.principal, acceptance.task.contextId)
      ? Effect.fail(new InvalidParams({ detail: "message.messageId was already used in this session; send a new message with a new id" }))
      : Effect.void

  /**
   * The context a new task may use: one the caller claims or already owns. A completion is
   * delivered into the delegating task's context whoever owns it, and claims nothing.
   */
  const claimContext = (call: CallContext, contextId: string | undefined): Effect.Effect<void, ContextNotOwned> => {
    if (contextId === undefined || call.provenance.origin === "completion") return Effect.void
    return owners.claim(contextId, call.principal) ? Effect.void : Effect.fail(new ContextNotOwned({ contextId }))
  }
  const claimMinted = (call: CallContext, task: Task) => {
    if (call.provenance.origin !== "completion") owners.claim(task.contextId, call.principal)
  }
  /** Streaming is not declared on the card when no task can start (A2A: -32004, reference: -32601). */
  const streamingRefused = (call: CallContext) =>
    call.a2a || call.method === "tasks/resubscribe"
      ? new UnsupportedOperation({ detail: "streaming is not declared: this session accepts no tasks" })
      : new MethodNotFound({ method: call.method })

  const sse = (body: Stream.Stream<Uint8Array>): MethodResult => ({ _tag: "Sse", body })
  /** A stream of one frame (a refusal, a snapshot), ended once written. */
  const sseOnly = (frame: string): MethodResult => sse(sseOnce(frame))

  /** A task in the call's shapes: the reference's, or A2A's in the call's version. */
  const encodeTask = (call: CallContext, task: Task, a2a: boolean, historyLength?: number) =>
    a2a ? a2aTask(task, { historyLength }, call.version) : referenceTask(task)

  /** Frames of one task after a cursor, in reference shapes, up to its final status. */
  const referenceTaskStream = (taskId: string, after: number) =>
    sseStream({
      open: port.open({ after, taskId }),
      encode: (item) => referenceItem(item, false),
      ends: (item) => item._tag === "Closed" || (item._tag === "Frame" && item.frame.event._tag === "Status" && item.frame.event.final),
      heartbeatMs: config.heartbeatMs
    })

  /** The Task first, then its events after a cursor, up to a terminal or input-required state. */
  const a2aTaskStream = (call: CallContext, task: Task, after: number) => {
    const encoder = a2aEncoder(call)
    return sseStream({
      open: port.open({ after, taskId: task.id }),
      first: encoder.task(task),
      encode: (item) =>
        item._tag === "Frame" ? encoder.frame(item.frame) : item._tag === "Gap" ? encoder.gap(item.firstAvailableId) : item._tag === "Lagged" ? encoder.lagged(item.missed) : undefined,
      ends: (item) =>
        item._tag === "Closed" ||
        (item._tag === "Frame" && item.frame.event._tag === "Status" && endsA2aStream(item.frame.event.state, item.frame.event.final)),
      heartbeatMs: config.heartbeatMs
    })
  }

  /** Resolves which task a message continues, if any. */
  const continuation = (call: CallContext, request: SendRequest) =>
    Effect.gen(function*() {
      if (request.taskId !== undefined) {
        const task = yield* lookup(call, request.taskId)
        if (request.contextId !== undefined && request.contextId !== task.contextId) {
          return yield* new InvalidParams({ detail: `contextId ${request.contextId} does not match task ${task.id}` })
        }
        if (isTerminal(task.state)) {
          return yield* new UnsupportedOperation({ detail: `task ${task.id} is ${task.state}; a terminal task cannot take more messages` })
        }
        return Option.some(task)
      }
      if (call.a2a) return Option.none<Task>()
      // The reference routes a message without task id to the active input-required task
      // (only one of its own dialect: an A2A client's task is answered by its taskId).
      const current = yield* port.current()
      return Option.filter(current, (task) =>
        task.state === "input-required" && task.dialect === "reference" && owners.sees(call.principal, task.contextId) &&
        (request.contextId === undefined || request.contextId === task.contextId))
    })

  /**
   * A message's params, and its file and data parts checked against the capsule: only a capsule
   * that takes attachments gets them, and only with a task's first message (a follow-up reaches
   * the capsule as text).
   */
  const decodeSend = (call: CallContext) =>
    Either.flatMap(
      call.version === "1.0" ? decodeSendRequest1(call.params) : decodeSendParams(call.params, call.a2a),
      (request): Either.Either<SendRequest, InvalidParams | ContentTypeNotSupported> => {
        const attached = request.message.parts.find((part) => part.kind !== "text")
        if (attached === undefined) return Either.right(request)
        if (identity.capsule.attachments !== true) {
          return Either.left(new ContentTypeNotSupported({ detail: `this capsule takes text parts only, not ${attached.kind} parts` }))
        }
        if (request.taskId !== undefined) {
          return Either.left(new ContentTypeNotSupported({ detail: `file and data parts go with a task's first message; a follow-up to ${request.taskId} takes text` }))
        }
        return Either.right(request)
      }
    )

  const sendMessage: Method = (call) =>
    Effect.gen(function*() {
      const request = yield* decodeSend(call)
      const target = yield* continuation(call, request)
      // A push config given with the message is checked before any task changes.
      const pushSpec = request.push === undefined ? undefined : yield* push.prepare(request.push)
      const cursor = yield* port.lastId()
      let task: Task
      let a2a = call.a2a
      if (Option.isSome(target)) {
        a2a = a2a || target.value.dialect === "a2a"
        task = yield* port.resume(target.value.id, request.message)
        if (pushSpec !== undefined) yield* push.attach(task, pushSpec, call.version, undefined, cursor)
      } else {
        if (!startsTasks) return yield* new MethodNotFound({ method: call.method })
        yield* claimContext(call, request.contextId)
        const acceptance = yield* port.submit({
          message: request.message,
          ...(request.contextId === undefined ? {} : { contextId: request.contextId }),
          provenance: { ...call.provenance, principal: call.principal.name },
          dialect: a2a ? "a2a" : "reference"
        })
        yield* ownDuplicate(call, acceptance)
        task = acceptance.task
        claimMinted(call, task)
        if (pushSpec !== undefined && acceptance._tag === "Accepted") yield* push.attach(task, pushSpec, call.version, task, cursor)
      }
      if (request.blocking && !isTerminal(task.state)) task = yield* settledWithin(port, task.id, config.blockingTimeoutMs)
      const encoded = encodeTask(call, task, a2a, request.historyLength)
      // 1.0 answers a `SendMessageResponse`: the task under its oneof name.
      return json(call.version === "1.0" ? { task: encoded } : encoded)
    })

  const streamMessage: Method = (call) =>
    Effect.gen(function*() {
      if (!startsTasks) return yield* streamingRefused(call)
      const decoded = decodeSend(call)
      if (Either.isLeft(decoded)) {
        // The reference reports a bad message inside the stream; A2A clients get a plain error.
        if (call.a2a) return yield* decoded.left
        return sseOnly(referenceError(`Invalid params: ${"detail" in decoded.left ? decoded.left.detail : ""}`))
      }
      const request = decoded.right
      const target = request.taskId === undefined ? Option.none<Task>() : yield* continuation(call, request)
      const pushSpec = request.push === undefined ? undefined : yield* push.prepare(request.push)
      const cursor = yield* port.lastId()
      if (Option.isSome(target)) {
        // A follow-up stream carries the new turn only: earlier frames (even after a
        // Last-Event-ID) would replay the input request that ended the previous stream.
        const a2a = call.a2a || target.value.dialect === "a2a"
        const task = yield* port.resume(target.value.id, request.message)
        if (pushSpec !== undefined) yield* push.attach(task, pushSpec, call.version, undefined, cursor)
        return sse(a2a ? a2aTaskStream(call, task, cursor) : referenceTaskStream(task.id, cursor))
      }
      yield* claimContext(call, request.contextId)
      const acceptance = yield* port.submit({
        message: request.message,
        ...(request.contextId === undefined ? {} : { contextId: request.contextId }),
        provenance: { ...call.provenance, principal: call.principal.name },
        dialect: call.a2a ? "a2a" : "reference"
      })
      yield* ownDuplicate(call, acceptance)
      claimMinted(call, acceptance.task)
      if (pushSpec !== undefined && acceptance._tag === "Accepted") yield* push.attach(acceptance.task, pushSpec, call.version, acceptance.task, cursor)
      if (acceptance._tag === "Rejected") {
        return sseOnly(call.a2a ? a2aEncoder(call).task(acceptance.task) : referenceRejected(acceptance.task))
      }
      if (acceptance.duplicate === true) {
        // The same message again: its task's stream from its first frame, or the task when it is over.
        const first = acceptance.task
        if (isTerminal(first.state)) return sseOnly(call.a2a ? a2aEncoder(call).task(first) : referenceSettled(first))
        return sse(call.a2a ? a2aTaskStream(call, first, 0) : referenceTaskStream(first.id, 0))
      }
      return sse(call.a2a ? a2aTaskStream(call, acceptance.task, cursor) : referenceTaskStream(acceptance.task.id, cursor))
    })

  /** The reference's `tasks/get` without an id: the active task, when the caller may see it. */
  const getCurrent = (call: CallContext) =>
    Effect.gen(function*() {
      const current = Option.filter(yield* port.current(), (task) => owners.sees(call.principal, task.contextId))
      const task = Option.isSome(current) ? current.value : yield* port.get("")
      return json(referenceTask(task))
    })

  // A hot method: no generator, one Effect (the lookup) on the usual path.
  const getTask: Method = (call) => {
    const query = decodeTaskQuery(call.params)
    if (Either.isLeft(query)) return Effect.fail(query.left)
    const { historyLength, id } = query.right
    if (id === undefined) return call.a2a ? Effect.fail(new InvalidParams({ detail: "tasks/get requires an id" })) : getCurrent(call)
    return Effect.map(lookup(call, id), (task) => json(encodeTask(call, task, call.a2a || task.dialect === "a2a", historyLength)))
  }

  const cancelTask: Method = (call) =>
    Effect.gen(function*() {
      const { id } = yield* requireId(call.params, call.method)
      const known = yield* lookup(call, id)
      const a2a = call.a2a || known.dialect === "a2a"
      const outcome = yield* port.cancel(id)
      switch (outcome._tag) {
        case "Canceled":
          return json(a2a ? a2aTask(outcome.task, { residue: outcome.residue }, call.version) : referenceTask(outcome.task, outcome.residue))
        case "AlreadyCanceled":
          return json(encodeTask(call, outcome.task, a2a))
        case "AlreadyTerminal":
          if (a2a) return yield* new TaskNotCancelable({ taskId: id, state: outcome.task.state })
          return json(referenceTask(outcome.task))
      }
    })

  const resubscribe: Method = (call) =>
    Effect.gen(function*() {
      if (!startsTasks) return yield* streamingRefused(call)
      const { id } = yield* requireId(call.params, call.method)
      const cursor = yield* port.lastId()
      const task = yield* lookup(call, id)
      if (isTerminal(task.state)) {
        return yield* new UnsupportedOperation({ detail: `task ${id} is ${task.state}; there is nothing to resubscribe to` })
      }
      const after = call.lastEventId ?? cursor
      if (task.state === "input-required" && call.lastEventId === undefined) {
        return sseOnly(a2aEncoder(call).task(task))
      }
      return sse(a2aTaskStream(call, task, after))
    })

  const stopSession: Method = () =>
    Effect.map(port.stop(), (outcome) =>
      json({ canceled: outcome.canceled, residue: outcome.residue, session_id: identity.sessionId }))

  const referenceItem = (item: LogItem, closedFrame: boolean): Uint8Array | string | undefined => {
    switch (item._tag) {
      case "Frame":
        return referenceFrame(item.frame)
      case "Gap":
        return referenceGap(item.firstAvailableId)
      case "Lagged":
        return referenceLagged(item.missed)
      case "Closed":
        return closedFrame ? referenceClosed : undefined
    }
  }

  const watch: Method = (call) => {
    // Without `admin`, a watcher sees the frames of its own contexts only (gaps, lag and the close pass).
    const all = isAdmin(call.principal)
    return Effect.succeed(sse(sseStream({
      open: port.open({ after: call.lastEventId ?? 0 }),
      first: referenceAck(identity.capsule.conversationMode),
      encode: (item) =>
        all || item._tag !== "Frame" || owners.ownerOf(item.frame.contextId) === call.principal.name ? referenceItem(item, true) : undefined,
      ends: (item) => item._tag === "Closed",
      heartbeatMs: config.heartbeatMs
    })))
  }

  /** 1.0 `ListTasks`: the caller's tasks (every task for `admin`), newest first, a page at a time. */
  const listTasksMethod: Method = (call) =>
    Effect.gen(function*() {
      const request = yield* decodeListRequest(call.params)
      const all = isAdmin(call.principal)
      const page = yield* listTasks(yield* port.list(), request, (task) => all || owners.sees(call.principal, task.contextId))
      return json({
        tasks: page.tasks.map((task) =>
          a2aTask(task, { historyLength: request.historyLength, withoutArtifacts: !request.includeArtifacts }, "1.0")
        ),
        nextPageToken: page.nextPageToken,
        pageSize: request.pageSize,
        totalSize: page.totalSize
      })
    })

  /** Declared by a door with tokens, for any principal it let in (as in the reference 0.5). */
  const extendedCard: Method = (call) =>
    identity.card.supportsAuthenticatedExtendedCard
      ? Effect.succeed(json(call.version === "1.0" ? identity.card1 : identity.card))
      : Effect.fail(new UnsupportedOperation({ detail: "this door has no authenticated extended card: it is open, and its public card is whole" }))


  // A Map, not an object literal: a method name is client data, and `constructor` or
  // `__proto__` must miss like any unknown name instead of finding Object.prototype's members.
  const table: ReadonlyMap<string, Method> = new Map<string, Method>([
    ["message/send", sendMessage],
    ["message/stream", streamMessage],
    ["tasks/get", getTask],
    ["tasks/cancel", cancelTask],
    ["tasks/resubscribe", resubscribe],
    ["session/stop", stopSession],
    ["stream/watch", watch],
    ["murmur.capsule/stop", stopSession],
    ["murmur.capsule/watch", watch],
    ["agent/getAuthenticatedExtendedCard", extendedCard],
    // A2A 1.0 (./ProtocolVersion.ts): the same methods under 1.0's names, answered in 1.0's shapes.
    ["SendMessage", sendMessage],
    ["SendStreamingMessage", streamMessage],
    ["GetTask", getTask],
    ["ListTasks", listTasksMethod],
    ["CancelTask", cancelTask],
    ["SubscribeToTask", resubscribe],
    ["GetExtendedAgentCard", extendedCard],
    ...push.methods
  ])
  return table
})

/** Methods that may answer with a stream: each call takes one of the door's stream slots. */
export const streamingMethods: ReadonlySet<string> = new Set([
  "message/stream",
  "tasks/resubscribe",
  "stream/watch",
  "murmur.capsule/watch",
  "SendStreamingMessage",
  "SubscribeToTask"
])
