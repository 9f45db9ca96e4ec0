/**
 * Token counts as the reference takes them: cl100k_base over the serialized text (spec §4.3,
 * `input_tokens` = the full driver payload, `output_tokens` = the raw response). Special-token
 * strings in the text (`<|endoftext|>`) count as ordinary text rather than failing the turn.
 * The tokenizer (~100 ms to load) is imported on first use, so commands that never run an
 * agent loop do not pay for it.
 */
import { Effect } from "effect"

export type TokenCounter = (text: string) => number

let loading: Promise<TokenCounter> | undefined

const ordinary = { disallowedSpecial: new Set<string>() }

export const tokenCounter: Effect.Effect<TokenCounter> = Effect.promise(() =>
  (loading ??= import("gpt-tokenizer/encoding/cl100k_base").then((cl100k) => (text: string) => cl100k.countTokens(text, ordinary)))
)
