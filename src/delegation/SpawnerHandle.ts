/**
 * `MURMUR_SPAWNER` (door spec §8.1): the compact JSON handle a delegating parent injects into its
 * child. Every handle names the parent session, its context and the delegation; `url` + `trust`
 * (both or neither) say where and how the child reports its outcome. A handle that does not
 * parse, has one of the pair without the other, or points anywhere but a loopback door is refused
 * at launch (`E-RUN-020`): the child then contacts nothing rather than guess.
 *
 * This runtime's launcher adds the chain's depth (`depth`, the child's own: 1 for a direct child)
 * and its ceiling (`max_depth`), and `input: "stdin"`: the task, the parent door's token and the
 * delegation's completion secret arrive as one JSON document on the child's stdin
 * (./ChildReport.ts), never in its environment or argv, which other local users can read
 * (`/proc/<pid>/environ` keeps the initial block, `/proc/<pid>/cmdline` is world-readable).
 */
import { Either, ParseResult, Schema } from "effect"
import type { Trust } from "../services/Task.js"

export const SPAWNER_ENV = "MURMUR_SPAWNER"


const Handle = Schema.Struct({
  session_id: Schema.String.pipe(Schema.pattern(/^ses_[A-Za-z0-9]{1,64}$/)),
  context_id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._:@+=-]{1,256}$/)),
  delegation_id: Schema.String.pipe(Schema.pattern(/^dlg_[A-Za-z0-9]{1,64}$/)),
  url: Schema.optionalWith(Schema.String, { exact: true }),
  trust: Schema.optionalWith(Schema.Literal("trusted", "untrusted"), { exact: true }),
  depth: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1000)), { exact: true }),
  max_depth: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 1000)), { exact: true }),
  input: Schema.optionalWith(Schema.Literal("stdin"), { exact: true })
})

export interface SpawnerHandle {
  readonly sessionId: string
  readonly contextId: string
  readonly delegationId: string
  /** Present only when the parent wants a completion: its door and the trust to claim. */
  readonly completion?: { readonly url: string; readonly trust: Trust }
  /** Where the child sits in the chain (1: a direct child; absent: 1) and the chain's ceiling. */
  readonly depth?: number
  readonly maxDepth?: number
  /** The task and the secrets come on stdin (`DelegationInput`). */
  readonly input?: "stdin"
}

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"])

/** A parent door the child may post to: plain http on a loopback address, nothing else. */
export const loopbackDoor = (url: string): URL | undefined => {
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== "http:" || !LOOPBACK.has(parsed.hostname) || parsed.username !== "" || parsed.password !== "") return undefined
    return parsed
  } catch {
    return undefined
  }
}

/** Reads the variable's value; `Left` carries the launch error's message. */
export const parseSpawnerHandle = (value: string): Either.Either<SpawnerHandle, string> => {
  const unreadable = (why: string) => Either.left(`unreadable spawner handle in ${SPAWNER_ENV}: ${why}`)
  let json: unknown
  try {
    json = JSON.parse(value)
  } catch {
    return unreadable("not JSON")
  }
  const decoded = Schema.decodeUnknownEither(Handle, { onExcessProperty: "error" })(json)
  if (Either.isLeft(decoded)) return unreadable(ParseResult.TreeFormatter.formatErrorSync(decoded.left).split("\n").join(" "))
  const handle = decoded.right
  const base = {
    sessionId: handle.session_id,
    contextId: handle.context_id,
    delegationId: handle.delegation_id,
    ...(handle.depth === undefined ? {} : { depth: handle.depth }),
    ...(handle.max_depth === undefined ? {} : { maxDepth: handle.max_depth }),
    ...(handle.input === undefined ? {} : { input: handle.input })
  }
  if (handle.url === undefined && handle.trust === undefined) return Either.right(base)
  if (handle.url === undefined || handle.trust === undefined) return unreadable("url and trust come together or not at all")
  if (loopbackDoor(handle.url) === undefined) return unreadable(`url ${JSON.stringify(handle.url)} is not an http address on loopback`)
  return Either.right({ ...base, completion: { url: handle.url, trust: handle.trust } })
}

export const encodeSpawnerHandle = (handle: SpawnerHandle): string =>
  JSON.stringify({
    session_id: handle.sessionId,
    context_id: handle.contextId,
    delegation_id: handle.delegationId,
    ...(handle.completion === undefined ? {} : { url: handle.completion.url, trust: handle.completion.trust }),
    ...(handle.depth === undefined ? {} : { depth: handle.depth }),
    ...(handle.maxDepth === undefined ? {} : { max_depth: handle.maxDepth }),
    ...(handle.input === undefined ? {} : { input: handle.input })
  })
