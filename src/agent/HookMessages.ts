/**
 * The agent loop's messages as a hook sees them (`murmur:hook/lifecycle@0.8.0.message`, spec
 * §2.10) and back. A tool message travels as the envelope
 * `{"__murmur_tool_msg__": true, "tool_call_id", "is_error", "body"}`; any other message's
 * `content` is its JSON content-block array. Coming back, a tool message is kept only if its
 * envelope is intact with a non-empty `tool_call_id`; other content that is not a JSON block
 * array is taken as text; roles other than user, assistant and tool are dropped. Ids a hook
 * returns are never used (the transcript mints its own), `source-id` is carried.
 */
import type { HookMessage } from "../sandbox/GuestJob.js"
import { type ContentBlock, type Message, type TextBlock, toolMessage } from "./DriverProtocol.js"

const TOOL_MARK = "__murmur_tool_msg__"

export const toHookMessage = (message: Message, id?: string): HookMessage => ({
  role: message.role,
  content: message.role === "tool"
    ? JSON.stringify({ [TOOL_MARK]: true, tool_call_id: message.tool_call_id, is_error: message.is_error, body: message.content })
    : JSON.stringify(message.content),
  ...(id === undefined ? {} : { id })
})

const isBlocks = (value: unknown): value is ReadonlyArray<ContentBlock> =>
  Array.isArray(value) && value.every((block) => block !== null && typeof block === "object" && typeof (block as { type?: unknown }).type === "string")

const blocksOf = (content: string): ReadonlyArray<ContentBlock> => {
  try {
    const parsed: unknown = JSON.parse(content)
    if (isBlocks(parsed)) return parsed
    if (typeof parsed === "string") return [{ type: "text", text: parsed }]
  } catch {
    // Raw text: wrapped below.
  }
  return [{ type: "text", text: content }]
}

/** A hook's message as one the driver can be sent; `undefined` when it cannot be (dropped). */
export const fromHookMessage = (message: HookMessage): Message | undefined => {
  switch (message.role) {
    case "user":
      return { role: "user", content: blocksOf(message.content).map((block): TextBlock => block.type === "text" && typeof block["text"] === "string" ? { type: "text", text: block["text"] } : { type: "text", text: JSON.stringify(block) }) }
    case "assistant":
      return { role: "assistant", content: blocksOf(message.content) }
    case "tool": {
      try {
        const envelope = JSON.parse(message.content) as Record<string, unknown>
        const id = envelope["tool_call_id"]
        if (envelope[TOOL_MARK] !== true || typeof id !== "string" || id === "" || !isBlocks(envelope["body"])) return undefined
        const text = envelope["body"].map((block) => (typeof block["text"] === "string" ? block["text"] : JSON.stringify(block))).join("")
        return toolMessage(id, envelope["is_error"] === true, text)
      } catch {
        return undefined
      }
    }
    default:
      return undefined
  }
}

/** The hook's messages that can be sent, in order. */
export const fromHookMessages = (messages: unknown): ReadonlyArray<Message> =>
  Array.isArray(messages) ? messages.flatMap((message) => {
    const converted = fromHookMessage(message as HookMessage)
    return converted === undefined ? [] : [converted]
  }) : []
