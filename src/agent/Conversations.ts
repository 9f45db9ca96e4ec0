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
 */
import { createHash } from "node:crypto"
import { closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, writeSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Layer } from "effect"
import type { ContextRetain } from "../sandbox/manifest/Retention.js"
import type { Message } from "./DriverProtocol.js"

interface ConversationRecord {
  readonly v: 1
  /** Unix ms, for `max_age`. */
  readonly at: number
  readonly task_id: string
  readonly messages: ReadonlyArray<Message>
}

export interface ConversationsOptions {
  /** The store's directory (`<home>/conversations/<store>`); absent under `context.record: off`. */
  readonly storeDirectory: string | undefined
  readonly retain: ContextRetain | undefined
}

export class Conversations extends Context.Tag("capsule-runtime/agent/Conversations")<Conversations, {
  /** The earlier messages of `contextId`, oldest first, trimmed by `context.retain`. */
  readonly history: (contextId: string) => Effect.Effect<ReadonlyArray<Message>>
  /** Appends one record (a turn's messages) to `contextId`'s conversation. */
  readonly append: (contextId: string, taskId: string, messages: ReadonlyArray<Message>) => Effect.Effect<void>
}>() {
  static readonly layer = (options: ConversationsOptions) => Layer.sync(Conversations, () => makeConversations(options))
}

/** A context id as a directory name: ids are `[A-Za-z0-9._:@+=-]{1,256}`, so only dot-names and length need care. */
export const contextDirectory = (contextId: string): string =>
  contextId.length <= 200 && !/^\.+$/.test(contextId) ? contextId : `h-${createHash("sha256").update(contextId).digest("hex")}`

const FILE = "conversation.jsonl"

/** Every whole, parseable record of a file; a torn or foreign line is skipped. */
export const readRecords = (path: string): Array<ConversationRecord> => {
  if (!existsSync(path)) return []
  const records: Array<ConversationRecord> = []
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line === "") continue
    try {
      const record = JSON.parse(line) as ConversationRecord
      if (record?.v === 1 && Array.isArray(record.messages)) records.push(record)
    } catch {
      // A line cut by a crash mid-append: everything before it stands.
    }
  }
  return records
}

const endsTorn = (path: string): boolean => {
  if (!existsSync(path)) return false
  const fd = openSync(path, "r")
  try {
    const { size } = fstatSync(fd)
    if (size === 0) return false
    const last = Buffer.alloc(1)
    readSync(fd, last, 0, 1, size - 1)
    return last[0] !== 0x0a
  } finally {
    closeSync(fd)
  }
}

/** One record as one write, then fsync: after a torn line the record starts on a line of its own. */
const appendLine = (path: string, line: string) => {
  const text = `${endsTorn(path) ? "\n" : ""}${line}\n`
  const fd = openSync(path, "a", 0o600)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Keeps what `retain` allows of `records` at `now`, starting at a user message. */
export const retained = (records: ReadonlyArray<ConversationRecord>, retain: ContextRetain | undefined, now = Date.now()): Array<Message> => {
  let kept = retain?.maxAgeSecs === undefined ? [...records] : records.filter((record) => now - record.at <= retain.maxAgeSecs! * 1000)
  if (retain?.maxMessages !== undefined) {
    let total = kept.reduce((sum, record) => sum + record.messages.length, 0)
    while (kept.length > 0 && total > retain.maxMessages) total -= kept.shift()!.messages.length
  }
  const messages = kept.flatMap((record) => record.messages)
  const start = messages.findIndex((message) => message.role === "user")
  return start < 0 ? [] : messages.slice(start)
}

const makeConversations = (options: ConversationsOptions): Conversations["Type"] => {
  const memory = new Map<string, Array<ConversationRecord>>()
  const fileOf = (contextId: string) =>
    options.storeDirectory === undefined ? undefined : join(options.storeDirectory, contextDirectory(contextId), FILE)
  const recordsOf = (contextId: string) => {
    let records = memory.get(contextId)
    if (records === undefined) {
      const file = fileOf(contextId)
      records = file === undefined ? [] : readRecords(file)
      memory.set(contextId, records)
    }
    return records
  }
  return Conversations.of({
    history: (contextId) => Effect.sync(() => retained(recordsOf(contextId), options.retain)),
    append: (contextId, taskId, messages) =>
      Effect.sync(() => {
        if (messages.length === 0) return
        const record: ConversationRecord = { v: 1, at: Date.now(), task_id: taskId, messages }
        recordsOf(contextId).push(record)
        const file = fileOf(contextId)
        if (file === undefined) return
        mkdirSync(join(options.storeDirectory!, contextDirectory(contextId)), { recursive: true, mode: 0o700 })
        appendLine(file, JSON.stringify(record))
      }).pipe(
        // The task's answer stands even if the disk refuses the record; the operator hears of it.
        Effect.catchAllDefect((defect) => Effect.logWarning(`conversation record not written for context ${contextId}: ${String(defect)}`)),
        Effect.withSpan("Conversations.append")
      )
  })
}
