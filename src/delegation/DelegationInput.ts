/**
 * What a delegating parent hands its child on stdin (`input: "stdin"` in the spawner handle): the
 * task text, the parent door's bearer token and the delegation's completion secret, as one JSON
 * document. Not argv: a task starting with `-` would be read as a flag (`--help`, `--json`), and
 * argv is world-readable in `/proc/<pid>/cmdline`. Not the environment: `/proc/<pid>/environ`
 * keeps the initial block for the process's whole life, whatever the process deletes. The parent
 * writes it as one line and keeps the pipe open for the child's life: the child reads the line
 * once, before anything else starts, then watches the pipe (`watchLifeline`). When the parent
 * dies, even by SIGKILL, the kernel closes its end and the child stops: a child never outlives
 * the runner that started it, which a signal alone cannot promise.
 */
import type { Readable } from "node:stream"
import { Effect, Either, ParseResult, Schema } from "effect"

/** The document's bound: a task text is at most this many bytes (a bigger one is refused at launch). */
export const MAX_INPUT_BYTES = 1024 * 1024

const READ_TIMEOUT_MS = 10_000

const Input = Schema.Struct({
  task: Schema.String,
  /** The parent door's bearer token: the child's completion carries it, and the child's own door asks for it. */
  token: Schema.optionalWith(Schema.String, { exact: true }),
  /** Proves a completion comes from this delegation (the parent's door refuses one without it). */
  secret: Schema.String.pipe(Schema.minLength(16))
})
export type DelegationInput = typeof Input.Type

/** One line: JSON has no raw newline, so the first one ends the document. */
export const encodeDelegationInput = (input: DelegationInput): string => `${JSON.stringify(input)}\n`

export const decodeDelegationInput = (text: string): Either.Either<DelegationInput, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Either.left("the delegation input on stdin is not JSON")
  }
  return Schema.decodeUnknownEither(Input, { onExcessProperty: "error" })(json).pipe(
    Either.mapLeft((error) => `the delegation input on stdin is unreadable: ${ParseResult.TreeFormatter.formatErrorSync(error).split("\n").join(" ")}`)
  )
}

/**
 * Reads the document from `stream` up to its first newline, or to its end from a parent that
 * closes the pipe (bounded in bytes and time); `Left`: the launch error's message.
 */
export const readDelegationInput = (stream: Readable): Effect.Effect<Either.Either<DelegationInput, string>> =>
  Effect.async<Either.Either<DelegationInput, string>>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const finish = (result: Either.Either<DelegationInput, string>) => {
      if (done) return
      done = true
      clearTimeout(timer)
      stream.off("data", onData)
      stream.off("end", onEnd)
      stream.off("error", onError)
      stream.pause()
      resume(Effect.succeed(result))
    }
    const onData = (chunk: Buffer) => {
      const newline = chunk.indexOf(0x0a)
      const part = newline < 0 ? chunk : chunk.subarray(0, newline)
      size += part.length
      if (size > MAX_INPUT_BYTES) return finish(Either.left(`the delegation input on stdin exceeds ${MAX_INPUT_BYTES} bytes`))
      chunks.push(part)
      if (newline >= 0) onEnd()
    }
    const onEnd = () => finish(decodeDelegationInput(Buffer.concat(chunks).toString("utf8")))
    const onError = (error: Error) => finish(Either.left(`the delegation input on stdin could not be read: ${error.message}`))
    const timer = setTimeout(() => finish(Either.left(`the delegation input on stdin did not end within ${READ_TIMEOUT_MS / 1000} s`)), READ_TIMEOUT_MS)
    stream.on("data", onData)
    stream.on("end", onEnd)
    stream.on("error", onError)
    return Effect.sync(() => finish(Either.left("interrupted")))
  })

/**
 * Calls `lost` once the parent's end of the pipe closes (the parent ended or was killed); what
 * comes on it after the document is read and dropped. Returns a function that stops watching.
 */
export const watchLifeline = (stream: Readable, lost: () => void): (() => void) => {
  let watching = true
  const onGone = () => {
    if (!watching) return
    watching = false
    lost()
  }
  const drop = () => {}
  stream.on("data", drop)
  stream.once("end", onGone)
  stream.once("close", onGone)
  stream.once("error", onGone)
  stream.resume()
  // Watching must not keep the process alive once its work is done.
  const handle = stream as Readable & { readonly unref?: () => void }
  handle.unref?.()
  return () => {
    watching = false
    stream.off("data", drop)
  }
}
