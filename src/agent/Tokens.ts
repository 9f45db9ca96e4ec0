/**
 * Token counts as the reference takes them: cl100k_base over the serialized text (spec §4.3,
 * `input_tokens` = the full driver payload, `output_tokens` = the raw response). Special-token
 * strings in the text (`<|endoftext|>`) count as ordinary text rather than failing the turn.
 * The tokenizer (~100 ms to load) is imported on first use, so commands that never run an
 * agent loop do not pay for it.
 *
 * Counting runs on the main thread, so its cost is bounded against hostile text: BPE is
 * quadratic in the length of one pre-tokenized word, so a run of more than `LONG_RUN`
 * non-space characters is cut into `LONG_RUN`-sized pieces counted apart (a count that can differ from the
 * exact one by about a token per piece), and a text over `EXACT_LIMIT` characters is estimated
 * at 4 bytes a token.
 */
import { Effect } from "effect"

export type TokenCounter = (text: string) => number

const LONG_RUN = 256
const EXACT_LIMIT = 8 * 1024 * 1024

/** JavaScript's `\s`, by code unit (a regular expression over megabytes can overflow the stack). */
const isSpace = (c: number) =>
  c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff

let loading: Promise<TokenCounter> | undefined

const ordinary = { disallowedSpecial: new Set<string>() }

const bounded = (count: (text: string) => number): TokenCounter => (text) => {
  if (text.length > EXACT_LIMIT) return Math.ceil(Buffer.byteLength(text) / 4)
  let total = 0
  let from = 0
  let run = 0
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at)
    if (isSpace(c)) run = 0
    // The cut never splits a surrogate pair.
    else if (++run > LONG_RUN && !isLowSurrogate(c)) {
      total += count(text.slice(from, at))
      from = at
      run = 1
    }
  }
  return total + count(text.slice(from))
}

export const tokenCounter: Effect.Effect<TokenCounter> = Effect.promise(() =>
  (loading ??= import("gpt-tokenizer/encoding/cl100k_base").then((cl100k) => bounded((text) => cl100k.countTokens(text, ordinary))))
)
