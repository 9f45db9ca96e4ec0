/**
 * Threaded conversations (`lifecycle.conversation: threaded`): a task whose `contextId` continues
 * an earlier one starts from that conversation's messages (user turns, assistant turns, tool calls
 * and results), trimmed by `context.retain` (`max_messages`: whole records dropped from the front
 * until the rest fits, and the kept history starts at a user message; `max_age`: records older than
 * that dropped). Under `context.record: on` the conversation is also kept durably in
 * `<murmur home>/conversations/<record_store>/<context>/conversation.jsonl`, one JSON line per
 * record, appended with one write and an fsync: a crash (kill -9) mid-append leaves at worst a torn
 * last line, which reading skips and the next append starts after. A restarted `serve` with the
 * same store picks the thread up from there. Stateless capsules get no service: nothing is kept.
 *
 * A thread is bounded: its record holds at most `context.record_max_bytes` (default 8 MiB) and
 * `context.record_max_turns` records (default 1000). An append that would pass either drops the
 * oldest records, down to three quarters of both, rewriting the file whole (a temporary file
 * renamed over it), and says so to its caller (a `conversation_trimmed` trace line). A record
 * larger than the byte cap alone empties the thread. Memory holds only what the next task would be
 * sent (`context.retain`, within the caps), and a load reads at most the cap's worth of the file's
 * tail. A line is loaded only if the runtime could have written it: every message `user`,
 * `assistant` or `tool`; anything else (a forged `system` record) is skipped.
 *
 * The store is `<record_store>` beneath `<murmur home>/conversations/`, one path segment
 * (E-CAP-011), and nothing beneath that directory is reached through a link (../sandbox/WorkdirFs.ts).
 */
import { createHash } from "node:crypto"
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  writeSync
} from "node:fs"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import type { ContextRetain } from "../project/manifest/Retention.js"
import { DEFAULT_RECORD_MAX_BYTES, DEFAULT_RECORD_MAX_TURNS } from "../project/manifest/SessionBlocks.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { RecordTrim } from "../records/TraceEvents.js"
import type { Message } from "./DriverProtocol.js"

const { O_CREAT, O_APPEND, O_NOFOLLOW, O_RDONLY, O_RDWR } = constants

interface ConversationRecord {
  readonly v: 1
  /** Unix ms, for `max_age`. */
  readonly at: number
  readonly task_id: string
  readonly messages: ReadonlyArray<Message>
}

/** Threads held in memory at once when they can be read back from the store (least recently used go first). */
const THREADS_HELD = 64

export interface ConversationsOptions {
  /** `<murmur home>/conversations` and the store's name in it; absent under `context.record: off`. */
  readonly store: { readonly root: string; readonly name: string } | undefined
  readonly retain: ContextRetain | undefined
  /** `context.record_max_bytes`; default {@link DEFAULT_RECORD_MAX_BYTES}. */
  readonly maxBytes?: number | undefined
  /** `context.record_max_turns`; default {@link DEFAULT_RECORD_MAX_TURNS}. */
  readonly maxTurns?: number | undefined
}

export class Conversations extends Context.Tag("capsule-runtime/agent/Conversations")<Conversations, {
  /** The earlier messages of `contextId`, oldest first, trimmed by `context.retain`. */
  readonly history: (contextId: string) => Effect.Effect<ReadonlyArray<Message>>
  /** Appends one record (a turn's messages) to `contextId`'s conversation; says what it dropped to fit. */
  readonly append: (contextId: string, taskId: string, messages: ReadonlyArray<Message>) => Effect.Effect<RecordTrim | undefined>
  /** After a compaction: the context's record becomes these messages alone (one record, the file rewritten whole). */
  readonly replace: (contextId: string, taskId: string, messages: ReadonlyArray<Message>) => Effect.Effect<void>
}>() {
  static readonly layer = (options: ConversationsOptions) => Layer.sync(Conversations, () => makeConversations(options))

  /** `lifecycle.conversation: stateless`: no history before a task, nothing kept after it. */
  static readonly stateless: Layer.Layer<Conversations> = Layer.succeed(Conversations, {
    history: () => Effect.succeed([]),
    append: () => Effect.succeed(undefined),
    replace: () => Effect.void
  })
}

/** A context id as a directory name: ids are `[A-Za-z0-9._:@+=-]{1,256}`, so only dot-names and length need care. */
export const contextDirectory = (contextId: string): string =>
  contextId.length <= 200 && !/^\.+$/.test(contextId) && !/[/\\\0]/.test(contextId)
    ? contextId
    : `h-${createHash("sha256").update(contextId).digest("hex")}`

const FILE = "conversation.jsonl"

const ROLES: ReadonlySet<unknown> = new Set(["user", "assistant", "tool"])

/** A line the runtime could have written: version 1, a time, and only the roles it records. */
const asRecord = (line: string): ConversationRecord | undefined => {
  try {
    const record = JSON.parse(line) as ConversationRecord
    const ok = record?.v === 1 && typeof record.at === "number" && Array.isArray(record.messages) &&
      record.messages.every((message) => ROLES.has(message?.role) && Array.isArray(message.content))
    return ok ? record : undefined
  } catch {
    // A line cut by a crash mid-append: everything before it stands.
    return undefined
  }
}

/** Every whole record of `text`, with the bytes its line takes; a torn or foreign line is skipped. */
const parseRecords = (text: string): Array<Held> =>
  text.split("\n").flatMap((line) => {
    const record = line === "" ? undefined : asRecord(line)
    return record === undefined ? [] : [{ record, bytes: Buffer.byteLength(line) + 1 }]
  })

/** Every whole, loadable record of a file (no link followed to it); a torn or foreign line is skipped. */
export const readRecords = (path: string): Array<ConversationRecord> => {
  let fd: number
  try {
    fd = openSync(path, O_RDONLY | O_NOFOLLOW)
  } catch {
    return []
  }
  try {
    return parseRecords(readTail(fd, Number.MAX_SAFE_INTEGER).text).map((held) => held.record)
  } finally {
    closeSync(fd)
  }
}

/** At most the last `limit` bytes of `fd`, starting on a whole line when cut. */
const readTail = (fd: number, limit: number): { readonly text: string; readonly size: number } => {
  const { size } = fstatSync(fd)
  const from = Math.max(0, size - limit)
  const buffer = Buffer.alloc(size - from)
  let read = 0
  while (read < buffer.length) {
    const n = readSync(fd, buffer, read, buffer.length - read, from + read)
    if (n === 0) break
    read += n
  }
  let text = buffer.subarray(0, read).toString("utf8")
  if (from > 0) text = text.slice(text.indexOf("\n") + 1)
  return { text, size }
}

/** Keeps what `retain` allows of `records` at `now`, starting at a user message. */
export const retained = (records: ReadonlyArray<ConversationRecord>, retain: ContextRetain | undefined, now = Date.now()): Array<Message> => {
  const messages = records.filter((_, index) => index >= retainedFrom(records, retain, now)).flatMap((record) => record.messages)
  const start = messages.findIndex((message) => message.role === "user")
  return start < 0 ? [] : messages.slice(start)
}

/** The index of the first record `retain` keeps: younger than `max_age`, and the newest whole records within `max_messages`. */
const retainedFrom = (records: ReadonlyArray<ConversationRecord>, retain: ContextRetain | undefined, now: number): number => {
  let from = 0
  if (retain?.maxAgeSecs !== undefined) {
    while (from < records.length && now - records[from]!.at > retain.maxAgeSecs * 1000) from++
  }
  if (retain?.maxMessages !== undefined) {
    let total = records.slice(from).reduce((sum, record) => sum + record.messages.length, 0)
    while (from < records.length && total > retain.maxMessages) total -= records[from++]!.messages.length
  }
  return from
}

interface Held {
  readonly record: ConversationRecord
  /** Its line's bytes, newline included. */
  readonly bytes: number
}

interface Thread {
  /** What the next task would be sent of this thread (its retained records, within the caps). */
  readonly held: Array<Held>
  /** The record's size and length (the file's under a store, else what was ever kept in memory). */
  recordBytes: number
  recordTurns: number
}

const sumBytes = (held: ReadonlyArray<Held>) => held.reduce((sum, entry) => sum + entry.bytes, 0)

const makeConversations = (options: ConversationsOptions): Conversations["Type"] => {
  const maxBytes = options.maxBytes ?? DEFAULT_RECORD_MAX_BYTES
  const maxTurns = options.maxTurns ?? DEFAULT_RECORD_MAX_TURNS
  const threads = new Map<string, Thread>()
  const store = options.store
  const directoryOf = (contextId: string) => join(store!.name, contextDirectory(contextId))
  let storeReady = false

  /** Drops from the front what `retain` would not send, then what passes the caps. */
  const fit = (held: Array<Held>, bytes: number, turns: number) => {
    held.splice(0, retainedFrom(held.map((entry) => entry.record), options.retain, Date.now()))
    let total = sumBytes(held)
    while (held.length > 0 && (total > bytes || held.length > turns)) total -= held.shift()!.bytes
  }

  const load = (contextId: string): Thread => {
    if (store === undefined) return { held: [], recordBytes: 0, recordTurns: 0 }
    let fd: number
    try {
      fd = WorkdirFs.open(store.root, join(directoryOf(contextId), FILE), O_RDONLY)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === "ENOENT" || code === "ENOTDIR") return { held: [], recordBytes: 0, recordTurns: 0 }
      throw error
    }
    try {
      const { size, text } = readTail(fd, maxBytes)
      const held = parseRecords(text)
      const recordTurns = held.length
      fit(held, maxBytes, maxTurns)
      return { held, recordBytes: size, recordTurns }
    } finally {
      closeSync(fd)
    }
  }

  const threadOf = (contextId: string): Thread => {
    let thread = threads.get(contextId)
    if (thread === undefined) thread = load(contextId)
    threads.delete(contextId)
    threads.set(contextId, thread)
    if (store !== undefined && threads.size > THREADS_HELD) threads.delete(threads.keys().next().value!)
    return thread
  }

  /** Runs `body` in the context's directory, made (0700) beneath the store without following a link. */
  const inContext = <A>(contextId: string, body: (entry: (name: string) => string) => A): A => {
    if (!storeReady) {
      mkdirSync(store!.root, { recursive: true, mode: 0o700 })
      WorkdirFs.inDirectory(store!.root, store!.name, (entry) => chmodSync(entry("."), 0o700))
      storeReady = true
    }
    return WorkdirFs.inDirectory(store!.root, directoryOf(contextId), (entry) => {
      chmodSync(entry("."), 0o700)
      return body(entry)
    })
  }

  /** One record as one write, then fsync: after a torn line the record starts on a line of its own. */
  const appendLine = (contextId: string, line: string) =>
    inContext(contextId, (entry) => {
      const fd = openSync(entry(FILE), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
      try {
        const { size } = fstatSync(fd)
        const last = Buffer.alloc(1)
        const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a
        writeSync(fd, torn ? `\n${line}` : line)
        fsyncSync(fd)
        return torn ? 1 : 0
      } finally {
        closeSync(fd)
      }
    })

  /** Replaces the file with `text` whole (WorkdirFs.replace: fsynced, renamed over it, no link followed). */
  const rewrite = (contextId: string, text: string) =>
    inContext(contextId, () => WorkdirFs.replace(store!.root, join(directoryOf(contextId), FILE), text, 0o600))

  const append = (contextId: string, taskId: string, messages: ReadonlyArray<Message>): RecordTrim | undefined => {
    if (messages.length === 0) return undefined
    const thread = threadOf(contextId)
    const record: ConversationRecord = { v: 1, at: Date.now(), task_id: taskId, messages }
    const line = `${JSON.stringify(record)}\n`
    const bytes = Buffer.byteLength(line)
    thread.held.push({ record, bytes })
    const limit = thread.recordBytes + bytes > maxBytes ? "max_bytes" : thread.recordTurns + 1 > maxTurns ? "max_turns" : undefined
    if (limit === undefined) {
      fit(thread.held, maxBytes, maxTurns)
      if (store !== undefined) thread.recordBytes += appendLine(contextId, line)
      thread.recordBytes += bytes
      thread.recordTurns += 1
      return undefined
    }
    // Down to three quarters of both caps, so the next appends do not each rewrite the file.
    fit(thread.held, bytes > maxBytes ? 0 : Math.floor(maxBytes * 0.75), Math.max(1, Math.floor(maxTurns * 0.75)))
    const keptBytes = sumBytes(thread.held)
    const trim: RecordTrim = {
      context_id: contextId,
      limit,
      dropped_turns: thread.recordTurns + 1 - thread.held.length,
      dropped_bytes: thread.recordBytes + bytes - keptBytes,
      kept_turns: thread.held.length,
      kept_bytes: keptBytes
    }
    if (store !== undefined) rewrite(contextId, thread.held.map((entry) => JSON.stringify(entry.record) + "\n").join(""))
    thread.recordBytes = keptBytes
    thread.recordTurns = thread.held.length
    return trim
  }

  const replace = (contextId: string, taskId: string, messages: ReadonlyArray<Message>) => {
    const thread = threadOf(contextId)
    const record: ConversationRecord = { v: 1, at: Date.now(), task_id: taskId, messages }
    const line = `${JSON.stringify(record)}\n`
    thread.held.splice(0, thread.held.length, { record, bytes: Buffer.byteLength(line) })
    if (store !== undefined) rewrite(contextId, line)
    thread.recordBytes = Buffer.byteLength(line)
    thread.recordTurns = 1
  }

  return Conversations.of({
    replace: (contextId, taskId, messages) =>
      Effect.sync(() => replace(contextId, taskId, messages)).pipe(
        Effect.catchAllDefect((defect) => Effect.logWarning(`compacted conversation record not written for context ${contextId}: ${String(defect)}`))
      ),
    history: (contextId) =>
      Effect.sync(() => retained(threadOf(contextId).held.map((entry) => entry.record), options.retain)).pipe(
        // An unreadable record (a planted link, say) starts the thread afresh; the operator hears of it.
        Effect.catchAllDefect((defect) => Effect.as(Effect.logWarning(`conversation record not read for context ${contextId}: ${String(defect)}`), []))
      ),
    append: (contextId, taskId, messages) =>
      Effect.sync(() => append(contextId, taskId, messages)).pipe(
        // The task's answer stands even if the disk refuses the record; the operator hears of it.
        Effect.catchAllDefect((defect) => Effect.as(Effect.logWarning(`conversation record not written for context ${contextId}: ${String(defect)}`), undefined)),
        Effect.withSpan("Conversations.append")
      )
  })
}
