/**
 * The one place typed errors become JSON-RPC error objects. Messages are the A2A 0.3 defaults
 * (conformance checks look for their keywords) or the reference's exact texts where it has one.
 */
import { Match } from "effect"
import type { CompletionRefused } from "../services/DelegationTracker.js"
import type { TaskNotAcceptingInput } from "../services/TaskRunner.js"
import type { PushConfigLimit, PushConfigNotFound } from "../services/PushConfigs.js"
import type { TaskNotFound } from "../services/TaskRegistry.js"
import type { DoorError } from "./DoorErrors.js"
import { supportedVersions } from "./ProtocolVersion.js"

export interface RpcError {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

export type RpcFailure = DoorError | TaskNotFound | TaskNotAcceptingInput | CompletionRefused | PushConfigNotFound | PushConfigLimit

export const internalError: RpcError = { code: -32603, message: "Internal error" }

/**
 * Refusal past `--max-watchers`. A2A defines no such error; this is in the implementation-defined
 * server-error range, clear of the codes A2A takes (-32001…-32009); 29 recalls HTTP 429.
 */
export const tooManyStreamsCode = -32029

/** Past the push-config bounds: implementation-defined, beside -32029 (both say "too many"). */
export const tooManyPushConfigsCode = -32031

export const toRpcError: (error: RpcFailure) => RpcError = Match.type<RpcFailure>().pipe(
  Match.tagsExhaustive({
    ParseError: (e) => ({ code: -32700, message: "Parse error", data: { detail: e.detail } }),
    InvalidRequest: (e) => ({ code: -32600, message: `Invalid Request: ${e.detail}` }),
    MethodNotFound: (e) => ({ code: -32601, message: "Method not found", data: { method: e.method } }),
    InvalidParams: (e) => ({ code: -32602, message: `Invalid params: ${e.detail}` }),
    TaskNotFound: (e) => ({ code: -32001, message: "Task not found", data: { taskId: e.taskId } }),
    TaskNotCancelable: (e) => ({ code: -32002, message: "Task cannot be canceled", data: { taskId: e.taskId, state: e.state } }),
    UnsupportedOperation: (e) => ({ code: -32004, message: "This operation is not supported", data: { detail: e.detail } }),
    TaskNotAcceptingInput: (e) => ({
      code: -32004,
      message: "This operation is not supported",
      data: { detail: e.reason, taskId: e.taskId, state: e.state }
    }),
    ContentTypeNotSupported: (e) => ({ code: -32005, message: "Incompatible content types", data: { detail: e.detail } }),
    TooManyStreams: (e) => ({
      code: tooManyStreamsCode,
      message: `Too many streams: this door serves at most ${e.limit} at once (--max-watchers); retry when one ends`,
      data: { limit: e.limit }
    }),
    ContextNotOwned: (e) => ({
      code: -32602,
      message: `Invalid params: contextId ${e.contextId} belongs to another client; start a new context (omit contextId)`,
      data: { error: "context_not_owned", contextId: e.contextId }
    }),
    CompletionMisaddressed: (e) => ({
      code: -32004,
      message: `completion is addressed to session ${e.addressed ?? "<unaddressed>"}, which is not the session running here`
    }),
    CompletionRefused: (e) => ({ code: -32004, message: e.message }),
    // As the official SDK answers an unknown config: the thing asked for is not there.
    PushConfigNotFound: (e) => ({
      code: -32001,
      message: "Push notification config not found",
      data: { taskId: e.taskId, pushNotificationConfigId: e.configId }
    }),
    PushConfigLimit: (e) => ({
      code: tooManyPushConfigsCode,
      message: `Too many push notification configs: at most ${e.limit} per ${e.per}; delete one first`,
      data: { limit: e.limit, per: e.per }
    }),
    VersionNotSupported: (e) => ({
      code: -32009,
      message: `The requested A2A protocol version '${e.requested}' is not supported. Supported versions: ${supportedVersions.join(", ")}`,
      data: { requested: e.requested }
    })
  })
)
