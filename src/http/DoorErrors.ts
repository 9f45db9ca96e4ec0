/**
 * Errors the door raises itself (protocol and A2A errors). Domain errors come from the services
 * that raise them; `RpcErrors.ts` turns both into JSON-RPC codes.
 */
import { Schema } from "effect"

export class ParseError extends Schema.TaggedError<ParseError>()("ParseError", { detail: Schema.String }) {}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", { detail: Schema.String }) {}

export class MethodNotFound extends Schema.TaggedError<MethodNotFound>()("MethodNotFound", { method: Schema.String }) {}

export class InvalidParams extends Schema.TaggedError<InvalidParams>()("InvalidParams", { detail: Schema.String }) {}

export class TaskNotCancelable extends Schema.TaggedError<TaskNotCancelable>()("TaskNotCancelable", {
  taskId: Schema.String,
  state: Schema.String
}) {}

export class UnsupportedOperation extends Schema.TaggedError<UnsupportedOperation>()("UnsupportedOperation", {
  detail: Schema.String
}) {}

export class ContentTypeNotSupported extends Schema.TaggedError<ContentTypeNotSupported>()("ContentTypeNotSupported", {
  detail: Schema.String
}) {}

/** A `completion`-origin request addressed to another session (reference §4.3). */
export class CompletionMisaddressed extends Schema.TaggedError<CompletionMisaddressed>()("CompletionMisaddressed", {
  addressed: Schema.optional(Schema.String)
}) {}

/** A message naming a `contextId` another principal created (./ContextOwners.ts): refused, not continued. */
export class ContextNotOwned extends Schema.TaggedError<ContextNotOwned>()("ContextNotOwned", { contextId: Schema.String }) {}

/** A streaming call while `limit` streams are open (`--max-watchers`). */
export class TooManyStreams extends Schema.TaggedError<TooManyStreams>()("TooManyStreams", { limit: Schema.Number }) {}

/** A request naming an A2A version this door does not speak (A2A 1.0 `VersionNotSupportedError`). */
export class VersionNotSupported extends Schema.TaggedError<VersionNotSupported>()("VersionNotSupported", {
  requested: Schema.String
}) {}

export type DoorError =
  | ParseError
  | InvalidRequest
  | MethodNotFound
  | InvalidParams
  | TaskNotCancelable
  | UnsupportedOperation
  | ContentTypeNotSupported
  | CompletionMisaddressed
  | TooManyStreams
  | ContextNotOwned
  | VersionNotSupported
