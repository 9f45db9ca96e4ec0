/**
 * Token counts as the reference takes them: cl100k_base over the serialized text (spec §4.3,
 * `input_tokens` = the full driver payload, `output_tokens` = the raw response). Special-token
 * strings in the text (`<|endoftext|>`) count as ordinary text rather than failing the turn.
 * The tokenizer (~100 ms to load) is imported on first use, so commands that never run an
 * agent loop do not pay for it.
 *
 * Counting runs on the main thread, so its cost is bounded against hostile text: BPE is
 * quadratic in the length of one pre-tokenized word, so a run of more than `LONG_RUN`
 * non-space characters is counted in `LONG_RUN`-sized pieces (a count that can differ from the
 * exact one by about a token per piece), and a text over `EXACT_LIMIT` characters is estimated
 * at 4 bytes a token.
 */
import { Effect } from "effect"

export type TokenCounter = (text: string) => number

const LONG_RUN = 256
const EXACT_LIMIT = 8 * 1024 * 1024
const longRun = new RegExp(`\\S{${LONG_RUN + 1},}`)
// matchAll clones this one (lastIndex 0 each time); it is never used statefully.
const longRuns = new RegExp(longRun.source, "g")

let loading: Promise<TokenCounter> | undefined

const ordinary = { disallowedSpecial: new Set<string>() }

const bounded = (count: (text: string) => number): TokenCounter => (text) => {
  if (text.length > EXACT_LIMIT) return Math.ceil(Buffer.byteLength(text) / 4)
  if (!longRun.test(text)) return count(text)
  let total = 0
  let from = 0
  for (const run of text.matchAll(longRuns)) {
    total += count(text.slice(from, run.index))
    for (let at = 0; at < run[0].length; at += LONG_RUN) total += count(run[0].slice(at, at + LONG_RUN))
    from = run.index + run[0].length
  }
  return total + count(text.slice(from))
}

export const tokenCounter: Effect.Effect<TokenCounter> = Effect.promise(() =>
  (loading ??= import("gpt-tokenizer/encoding/cl100k_base").then((cl100k) => bounded((text) => cl100k.countTokens(text, ordinary))))
)
