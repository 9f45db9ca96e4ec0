/**
 * What an agent-loop `inference` line says about the request it sent (spec §6 [0.3]): the ids of
 * the messages sent and the wire hashes of the system string, the tool list, each message and
 * the response (docs/trace.md, "Message ids and wire hashes").
 *
 * A message gets its `msg_` id when it joins the transcript. The reference carries `id` inside
 * the message and strips it before building the payload (§4.2); keeping it beside the message
 * instead leaves nothing to strip, so the payload is built from the messages as they are.
 *
 * Hashing stays off the hot path: a message is hashed once, the first time it is sent (a
 * threaded resend of the whole history reuses it); system and tools once per task; so a turn
 * costs one hash per new message plus the response. Under `capture: none` nothing is hashed,
 * and under `content` each hashed body is stored as its blob (`Trace.digest`).
 */
import { Effect } from "effect"
import { mintId } from "../services/Ids.js"
import type { Trace, TraceWriteFailed } from "./Trace.js"
import type { ToolDefinition } from "../project/ToolDefinition.js"

/**
 * The task's messages in send order, with each one's id and (once hashed) its payload hash. A
 * message is whatever the driver protocol sends (../agent/DriverProtocol.ts): here it is only
 * serialized and hashed.
 */
export interface Transcript<Message = unknown> {
  readonly messages: Array<Message>
  readonly ids: Array<string>
  readonly shas: Array<string | undefined>
}

export const newTranscript = <Message>(): Transcript<Message> => ({ messages: [], ids: [], shas: [] })

export const append = <Message>(transcript: Transcript<Message>, message: Message): void => {
  transcript.messages.push(message)
  transcript.ids.push(mintId("msg"))
  transcript.shas.push(undefined)
}

/** The `inference` fields this module owns, in the schema's order. */
export interface WireFields {
  readonly message_ids: ReadonlyArray<string>
  readonly system_sha?: string
  readonly tools_sha?: string
  readonly response_sha?: string
  readonly message_shas?: ReadonlyArray<string>
}

/**
 * One per task. Each call describes one turn: `sent` is how many messages the request carried
 * (always the transcript's tail, see `outgoing`), `raw` the driver's response text.
 */
export const wireTracer = (trace: Trace["Type"], system: string, tools: ReadonlyArray<ToolDefinition>) => {
  let fixed: { readonly system: string | undefined; readonly tools: string | undefined } | undefined
  return <Message>(transcript: Transcript<Message>, sent: number, raw: string): Effect.Effect<WireFields, TraceWriteFailed> =>
    Effect.gen(function*() {
      const from = transcript.messages.length - sent
      const message_ids = transcript.ids.slice(from)
      if (fixed === undefined) fixed = { system: yield* trace.digest(system), tools: yield* trace.digest(JSON.stringify(tools)) }
      // `none`: digest hashes nothing, and the line would drop the hashes anyway.
      if (fixed.system === undefined || fixed.tools === undefined) return { message_ids }
      const message_shas: Array<string> = []
      for (let index = from; index < transcript.messages.length; index++) {
        const known = transcript.shas[index]
        const sha = known ?? (yield* trace.digest(JSON.stringify(transcript.messages[index])))
        transcript.shas[index] = sha
        if (sha !== undefined) message_shas.push(sha)
      }
      const response_sha = yield* trace.digest(raw)
      return {
        message_ids,
        system_sha: fixed.system,
        tools_sha: fixed.tools,
        ...(response_sha === undefined ? {} : { response_sha }),
        message_shas
      }
    })
}
