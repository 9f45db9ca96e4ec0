/**
 * What a method of the door is, whatever binding calls it: params in (the `CallContext`), a JSON
 * result or an SSE body out, or a typed failure that ./RpcErrors.ts turns into a code.
 */
import type { Effect, Stream } from "effect"
import type { CallContext } from "./CallContext.js"
import type { RpcFailure } from "./RpcErrors.js"

export type MethodResult =
  | { readonly _tag: "Json"; readonly result: unknown }
  | { readonly _tag: "Sse"; readonly body: Stream.Stream<Uint8Array> }

export type Method = (call: CallContext) => Effect.Effect<MethodResult, RpcFailure>

export const json = (result: unknown): MethodResult => ({ _tag: "Json", result })
