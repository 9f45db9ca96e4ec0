/**
 * The session's `trace.jsonl` (reference §6, 0.3 shape). Each line is one JSON object that starts
 * with `event_type`, `event_id` (`evt_` + UUIDv7), `parent_id`, `session_id` and `timestamp`
 * (unix ms), followed by the event's fields in the order the caller gave them. The layer lives for
 * one launch. It opens `<directory>/trace.jsonl` append-only when built, so a launch that fails
 * before `session_start` leaves an empty file. It writes one `session_start` and at most one
 * `session_end`, and the tree runs session → task → turn → the turn's events. When the layer
 * closes it waits for lines in flight and writes nothing more. Each line is written through: one
 * awaited append under a lock, uninterruptible. So when `taskEnd` returns, the task's lines are in
 * the file. A failed write fails the call that made it with `TraceWriteFailed` (E-RUN-007, which
 * ends the session). What `trace.capture` keeps is described in docs/trace.md. The directory is the
 * session's records (`<capsule dir>/.murmur/sessions/<session>`, ../sandbox/SessionWorkdirs.ts),
 * outside every tree guests and commands write; it is held open from the start all the same, and
 * nothing beneath it is reached through a link (../sandbox/WorkdirFs.ts). A line is written whole
 * or not at all: a short write is cut back (`appendWhole`).
 */
import { createHash } from "node:crypto"
import { chmodSync, close, fstatSync, ftruncate, linkSync, lstatSync, mkdirSync, unlinkSync, write, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { promisify } from "node:util"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import type { TraceCapture } from "../project/manifest/SessionBlocks.js"
import * as WorkdirFs from "./WorkdirFs.js"
import { mintId } from "../services/Ids.js"
import {
  type FieldsOf,
  type FramingEvent,
  type SessionEndFields,
  type SessionStartFields,
  type TaskEndFields,
  type TaskStartFields,
  WIRE_HASH_FIELDS
} from "./TraceEvents.js"

/** A trace line or blob could not be written: the session ends with E-RUN-007. */
export class TraceWriteFailed extends Schema.TaggedError<TraceWriteFailed>()("TraceWriteFailed", {
  code: Schema.Literal("E-RUN-007"),
  path: Schema.String,
  message: Schema.String
}) {}

const writeFailed = (path: string, cause: unknown) =>
  new TraceWriteFailed({
    code: "E-RUN-007",
    path,
    message: `trace write failed (nothing partial was left): ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
  })

export interface TraceOptions {
  /** The session directory: it holds `trace.jsonl` and `blobs/`, and is created if missing. */
  readonly directory: string
  /**
   * Where the walk to `directory` starts (the capsule directory, for a session's records): the
   * directory is made and opened from it without following a link.
   */
  readonly within?: string | undefined
  readonly sessionId: string
  readonly capture: TraceCapture
}

export interface TraceBlob {
  /** The lowercase hex SHA-256 of the body, which is also the file's name. */
  readonly sha256: string
  readonly path: string
}

export const sha256Hex = (content: string | Uint8Array): string => createHash("sha256").update(content).digest("hex")

const HEADER_KEYS: ReadonlySet<string> = new Set(["event_type", "event_id", "parent_id", "session_id", "timestamp"])
const FRAMING: ReadonlySet<string> = new Set<FramingEvent>(["session_start", "session_end", "task_start", "task_end"])

/** The fields each capture mode leaves off the line, by event type. */
const OMITTED: Readonly<Record<TraceCapture, Readonly<Record<string, ReadonlyArray<string>>>>> = {
  none: { session_start: ["system_prompt"], inference: WIRE_HASH_FIELDS, tool_call: ["output"] },
  meta: { session_start: ["system_prompt"], tool_call: ["output"] },
  content: { session_start: ["system_prompt"] }
}

export interface LineHeader {
  readonly event_type: string
  readonly event_id: string
  readonly parent_id: string | null
  readonly session_id: string
  readonly timestamp: number
}

/** One line: the header, then the fields in their own order, without header keys, omitted keys or `undefined`s. */
export const encodeLine = (header: LineHeader, fields: object, omit: ReadonlyArray<string> = []): string => {
  const line: Record<string, unknown> = { ...header }
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || HEADER_KEYS.has(key) || omit.includes(key)) continue
    line[key] = value
  }
  return `${JSON.stringify(line)}\n`
}

const writeAt = promisify(write)
const truncateTo = promisify(ftruncate)
const closeFd = promisify(close)

/**
 * Appends `text` whole or not at all to a file that is `size` bytes long, and returns its new
 * size: a short write (a disk that fills mid-line, `ENOSPC`) is cut back to `size`, so the file
 * never holds a torn line and the next line starts clean. The caller tracks the size (it is the
 * file's only writer) rather than asking for it: an `fstat` per line was a second thread-pool
 * round trip on every trace line (docs/benchmarks.md, "the agent turn, issue 24").
 */
export const appendWhole = async (fd: number, text: string, size: number): Promise<number> => {
  const bytes = Buffer.from(text)
  let written = 0
  try {
    while (written < bytes.length) {
      const { bytesWritten } = await writeAt(fd, bytes, written, bytes.length - written, null)
      if (bytesWritten === 0) throw new Error(`short write: ${written} of ${bytes.length} bytes`)
      written += bytesWritten
    }
  } catch (error) {
    if (written > 0) await truncateTo(fd, size)
    throw error
  }
  return size + bytes.length
}

const exists = (path: string) => {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/** Writes `content` as `target` unless it exists: through a temporary file and `link`, so a blob is never partial or rewritten. */
const storeOnce = (target: string, temporary: string, content: string | Uint8Array): void => {
  if (exists(target)) return
  try {
    writeFileSync(temporary, content, { flag: "wx", mode: 0o600 })
  } catch (error) {
    // A body cut short by a full disk leaves no partial temporary behind (one that existed is not ours).
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") removeQuietly(temporary)
    throw error
  }
  try {
    linkSync(temporary, target)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  } finally {
    removeQuietly(temporary)
  }
}

const removeQuietly = (path: string) => {
  try {
    unlinkSync(path)
  } catch {
    // already gone
  }
}

export class Trace extends Context.Tag("capsule-runtime/agent/Trace")<Trace, {
  /** Writes the launch's one `session_start` (parent `null`); returns its id, the session node. */
  readonly sessionStart: (fields: SessionStartFields) => Effect.Effect<string, TraceWriteFailed>
  /** Writes `task_start` under the session node; returns its id, the task node. */
  readonly taskStart: (fields: TaskStartFields) => Effect.Effect<string, TraceWriteFailed>
  /** Writes `task_end` under its `task_start` node (matched by `task_id`). */
  readonly taskEnd: (fields: TaskEndFields) => Effect.Effect<void, TraceWriteFailed>
  /**
   * Writes any other event under `parentId` (`undefined` = the session node) and returns its id.
   * An agent-loop `inference` id is the turn node for that turn's `tool_call`, `shell` and so on.
   */
  readonly record: <T extends string>(
    eventType: T,
    parentId: string | undefined,
    fields: FieldsOf<T>
  ) => Effect.Effect<string, TraceWriteFailed>
  /** Under `capture: content`, stores a body as `blobs/<sha256>` (write-once); otherwise `undefined`. */
  readonly blob: (content: string | Uint8Array) => Effect.Effect<TraceBlob | undefined, TraceWriteFailed>
  /**
   * A wire hash for a line: `undefined` under `none` (nothing is hashed, since the line drops it),
   * the body's SHA-256 under `meta`, and under `content` the same after storing the body as its
   * blob, so the hash on the line always resolves.
   */
  readonly digest: (content: string) => Effect.Effect<string | undefined, TraceWriteFailed>
  /** Writes the one `session_end`; later calls, or any call before a `session_start` line, write nothing. */
  readonly sessionEnd: (fields: SessionEndFields) => Effect.Effect<void, TraceWriteFailed>
}>() {
  static readonly layer = (options: TraceOptions) => Layer.scoped(Trace, makeTrace(options))
}

export const makeTrace = (options: TraceOptions) =>
  Effect.gen(function*() {
    const path = join(options.directory, "trace.jsonl")
    const blobDir = join(options.directory, "blobs")
    const omitted = OMITTED[options.capture]
    const lock = yield* Effect.makeSemaphore(1)
    let closed = false
    let sessionStarted = false
    let sessionNode: string | null = null
    let sessionEnded = false
    const taskNodes = new Map<string, string>()
    const storedBlobs = new Set<string>()
    let blobDirReady = false
    let temporaries = 0

    const directory = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const within = options.within ?? options.directory
          mkdirSync(within, { recursive: true })
          return WorkdirFs.hold(within, relative(within, options.directory) || ".")
        },
        catch: (cause) => writeFailed(path, cause)
      }),
      (held) => Effect.sync(held.close)
    )
    const fd = yield* Effect.acquireRelease(
      Effect.try({ try: () => WorkdirFs.openAppend(directory.root, "trace.jsonl"), catch: (cause) => writeFailed(path, cause) }),
      (fd) =>
        lock.withPermits(1)(Effect.suspend(() => {
          closed = true
          return Effect.tryPromise(() => closeFd(fd)).pipe(
            Effect.catchAll((error) => Effect.logWarning("closing trace.jsonl failed", error))
          )
        }))
    )

    // trace.jsonl's length: this layer is its only writer (under the lock), so it is counted, not asked for.
    let size = fstatSync(fd).size

    const write = (eventType: string, parentId: string | null, fields: object) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const eventId = mintId("evt")
        if (closed) {
          yield* Effect.logDebug("trace event after close dropped").pipe(Effect.annotateLogs({ eventType }))
          return eventId
        }
        const timestamp = yield* Clock.currentTimeMillis
        const text = encodeLine(
          { event_type: eventType, event_id: eventId, parent_id: parentId, session_id: options.sessionId, timestamp },
          fields,
          omitted[eventType]
        )
        size = yield* Effect.tryPromise({ try: () => appendWhole(fd, text, size), catch: (cause) => writeFailed(path, cause) })
        return eventId
      })).pipe(Effect.uninterruptible)

    const blob = Effect.fn("Trace.blob")(function*(content: string | Uint8Array) {
      if (options.capture !== "content" || closed) return undefined
      const sha256 = sha256Hex(content)
      const target = join(blobDir, sha256)
      if (!storedBlobs.has(sha256)) {
        const temporary = `.${sha256}.${process.pid}.${temporaries++}.tmp`
        yield* Effect.try({
          try: () =>
            WorkdirFs.inDirectory(directory.root, "blobs", (entry) => {
              if (!blobDirReady) {
                chmodSync(entry("."), 0o700)
                blobDirReady = true
              }
              storeOnce(entry(sha256), entry(temporary), content)
            }),
          catch: (cause) => writeFailed(target, cause)
        }).pipe(Effect.uninterruptible)
        storedBlobs.add(sha256)
      }
      return { sha256, path: target }
    })

    const digest = (content: string): Effect.Effect<string | undefined, TraceWriteFailed> =>
      options.capture === "none"
        ? Effect.succeed(undefined)
        : options.capture === "meta"
        ? Effect.sync(() => sha256Hex(content))
        : Effect.map(blob(content), (stored) => stored?.sha256 ?? sha256Hex(content))

    const sessionStart = Effect.fn("Trace.sessionStart")(function*(fields: SessionStartFields) {
      if (sessionStarted) return yield* Effect.dieMessage("Trace.sessionStart: session_start was already written for this launch")
      sessionStarted = true
      let line: SessionStartFields = fields
      if (typeof fields.system_prompt === "string") {
        // The blob goes first, so the line never names a body that is not on disk.
        yield* blob(fields.system_prompt)
        line = { ...fields, system_prompt_sha256: sha256Hex(fields.system_prompt) }
      }
      sessionNode = yield* write("session_start", null, line)
      return sessionNode
    })

    const taskStart = Effect.fn("Trace.taskStart")(function*(fields: TaskStartFields) {
      const eventId = yield* write("task_start", sessionNode, fields)
      taskNodes.set(fields.task_id, eventId)
      return eventId
    })

    const taskEnd = Effect.fn("Trace.taskEnd")(function*(fields: TaskEndFields) {
      yield* write("task_end", taskNodes.get(fields.task_id) ?? sessionNode, fields)
      taskNodes.delete(fields.task_id)
    })

    const record = Effect.fn("Trace.record")(function*(eventType: string, parentId: string | undefined, fields: object) {
      if (FRAMING.has(eventType)) return yield* Effect.dieMessage(`Trace.record: ${eventType} has its own method`)
      return yield* write(eventType, parentId ?? sessionNode, fields)
    })

    const sessionEnd = Effect.fn("Trace.sessionEnd")(function*(fields: SessionEndFields) {
      if (sessionNode === null || sessionEnded) return
      sessionEnded = true
      yield* write("session_end", sessionNode, fields)
    })

    return Trace.of({ sessionStart, taskStart, taskEnd, record, blob, digest, sessionEnd })
  }).pipe(Effect.annotateLogs({ service: "Trace" }))
