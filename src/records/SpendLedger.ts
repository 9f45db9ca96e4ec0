/**
 * The machine's daily token ledger (`spend.machine_tokens_per_day` in `$MURMUR_HOME/config.yaml`):
 * every agent session on this machine appends what each provider call cost to
 * `$MURMUR_HOME/spend/<UTC day>.tokens`, one number a line, and reads the day's sum before each
 * call. Lines are appended with O_APPEND, a few bytes each, so concurrent sessions' lines never
 * interleave; each process reads only what was appended since it last looked. The ledger is
 * reached without following a link (./WorkdirFs.ts); days older than `keepDays` are deleted
 * when a session opens it, so it holds at most a week of files of a few bytes per call.
 */
import { closeSync, fstatSync, mkdirSync, readdirSync, readSync } from "node:fs"
import { O_RDONLY } from "node:constants"
import { Context, Effect, Layer } from "effect"
import * as WorkdirFs from "./WorkdirFs.js"

export interface SpendLedgerShape {
  /** Tokens a UTC day on this machine; absent: no daily budget, and no ledger (`none`). */
  readonly perDay: number | undefined
  /** What the sessions of this machine spent today, this one included. */
  readonly spentToday: Effect.Effect<number, WorkdirFs.WorkdirPathRefused>
  /** Adds one provider call's tokens to today's line count. */
  readonly add: (tokens: number) => Effect.Effect<void, WorkdirFs.WorkdirPathRefused>
}

const keepDays = 7
const DAY = /^(\d{4}-\d{2}-\d{2})\.tokens$/

const dayOf = (now: Date) => now.toISOString().slice(0, 10)

/** Sums whole lines; a torn last line (another process mid-write) is left for the next read. */
const sumLines = (text: string): { readonly sum: number; readonly used: number } => {
  const end = text.lastIndexOf("\n") + 1
  let sum = 0
  for (const line of text.slice(0, end).split("\n")) {
    const value = Number(line)
    if (line !== "" && Number.isSafeInteger(value) && value > 0) sum += value
  }
  return { sum, used: Buffer.byteLength(text.slice(0, end)) }
}

const prune = (root: string, today: string) => {
  const oldest = dayOf(new Date(Date.parse(today) - keepDays * 86_400_000))
  for (const name of readdirSync(root)) {
    const day = DAY.exec(name)?.[1]
    if (day !== undefined && day < oldest) WorkdirFs.remove(root, name)
  }
}

export const makeSpendLedger = (directory: string, perDay: number, now: () => Date = () => new Date()): SpendLedgerShape => {
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  prune(directory, dayOf(now()))
  let seen = { day: "", offset: 0, sum: 0 }
  const fileOf = (day: string) => `${day}.tokens`
  const readNew = () => {
    const day = dayOf(now())
    if (seen.day !== day) seen = { day, offset: 0, sum: 0 }
    let fd: number
    try {
      fd = WorkdirFs.open(directory, fileOf(day), O_RDONLY)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return seen.sum
      throw error
    }
    try {
      const size = fstatSync(fd).size
      if (size <= seen.offset) return seen.sum
      const buffer = Buffer.alloc(size - seen.offset)
      const got = readSync(fd, buffer, 0, buffer.length, seen.offset)
      const { sum, used } = sumLines(buffer.subarray(0, got).toString("utf8"))
      seen = { day, offset: seen.offset + used, sum: seen.sum + sum }
      return seen.sum
    } finally {
      closeSync(fd)
    }
  }
  return {
    perDay,
    spentToday: WorkdirFs.attempt(readNew),
    add: (tokens) =>
      tokens <= 0 ? Effect.void : WorkdirFs.attempt(() => WorkdirFs.append(directory, fileOf(dayOf(now())), `${Math.round(tokens)}\n`))
  }
}

export class SpendLedger extends Context.Tag("capsule-runtime/SpendLedger")<SpendLedger, SpendLedgerShape>() {
  /** No ledger and no budget: a session composed without a murmur home (tests, a host's own layer). */
  static readonly none: Layer.Layer<SpendLedger> = Layer.succeed(SpendLedger, {
    perDay: undefined,
    spentToday: Effect.succeed(0),
    add: () => Effect.void
  })

  /** The ledger under `directory` (`$MURMUR_HOME/spend`) for the machine's daily budget. */
  static readonly layer = (directory: string, perDay: number): Layer.Layer<SpendLedger> =>
    Layer.sync(SpendLedger, () => makeSpendLedger(directory, perDay))
}
