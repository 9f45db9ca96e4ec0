/**
 * Reads a request body from the Node request with a byte limit, without a fiber per chunk.
 * A declared `content-length` over the limit is refused before a byte is read; a chunked body
 * is cut off as soon as it passes the limit.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"

export type BodyOutcome =
  | { readonly _tag: "Body"; readonly text: string }
  | { readonly _tag: "TooLarge"; readonly limit: number }
  | { readonly _tag: "Aborted" }

/**
 * The whole body when Node has already buffered all of it (the usual case for a small JSON-RPC
 * request): no event listener, no suspended fiber.
 */
const bufferedBody = (request: IncomingMessage, declared: number): BodyOutcome | undefined => {
  if (!Number.isFinite(declared) || request.readableLength < declared) return undefined
  const chunks: Array<Buffer> = []
  let chunk: Buffer | null
  while ((chunk = request.read() as Buffer | null) !== null) chunks.push(chunk)
  // Node's parser never buffers past content-length, so this is the whole body.
  return { _tag: "Body", text: Buffer.concat(chunks).toString("utf8") }
}

/**
 * The outcome when it is known without waiting: a declared length over the limit, an empty body,
 * or a body Node holds in full. `undefined` when the rest of the body has yet to arrive.
 */
export const readBodyNow = (request: IncomingMessage, limit: number): BodyOutcome | undefined => {
  const declared = Number(request.headers["content-length"] ?? Number.NaN)
  if (Number.isFinite(declared) && declared > limit) {
    request.resume()
    return { _tag: "TooLarge", limit }
  }
  if (declared === 0) return { _tag: "Body", text: "" }
  const buffered = bufferedBody(request, declared)
  if (buffered !== undefined) request.resume()
  return buffered
}

export const readBody = (request: IncomingMessage, limit: number): Effect.Effect<BodyOutcome> => {
  const now = readBodyNow(request, limit)
  return now === undefined ? readBodyLater(request, limit) : Effect.succeed(now)
}

/** Reads the rest of a body as it arrives (after `readBodyNow` found it incomplete). */
export const readBodyLater = (request: IncomingMessage, limit: number): Effect.Effect<BodyOutcome> =>
  Effect.async<BodyOutcome>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      request.off("data", onData)
      request.off("end", onEnd)
      request.off("error", onAbort)
      request.off("aborted", onAbort)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        // Keep draining (and discarding) so the 413 can be written; the response closes the connection.
        request.resume()
        resume(Effect.succeed({ _tag: "TooLarge", limit }))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed({ _tag: "Body", text: Buffer.concat(chunks, size).toString("utf8") }))
    }
    const onAbort = () => {
      cleanup()
      resume(Effect.succeed({ _tag: "Aborted" }))
    }
    request.on("data", onData)
    request.on("end", onEnd)
    request.on("error", onAbort)
    request.on("aborted", onAbort)
    return Effect.sync(cleanup)
  })
