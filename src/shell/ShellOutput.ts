/**
 * What one shell command writes, held within fixed bounds however much it prints. The runtime
 * serves every task of its sessions, so a command printing a gigabyte must cost it kilobytes: per
 * stream only the first and last bytes the model reads stay in memory, the rest goes to a spill
 * file (created in the workdir's `logs/` and unlinked at once, so the command never sees it), and
 * the call's log budget (`capabilities.shell.max_output_bytes`) bounds what is kept at all. The
 * chunk that crosses the budget is cut there and `take` says so: the caller then stops the command
 * and stops reading. What was read past the budget is counted (`droppedBytes`), never kept.
 *
 * At the end the log (`logs/<name>`) is assembled from the spills under the reference's layout.
 */
import { closeSync, constants, openSync, readSync, unlinkSync, writeSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { MAX_SHELL_OUTPUT_BYTES, outputCapNote, SHELL_LOG_END, SHELL_LOG_STDERR, shellLogHeader } from "./ShellGrant.js"
import * as WorkdirFs from "../records/WorkdirFs.js"

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_RDWR, O_TRUNC, O_WRONLY } = constants

/** Of the `MAX_SHELL_OUTPUT_BYTES` the model reads per stream, the end's share (the rest is the start). */
const TAIL_BYTES = 4 * 1024
const HEAD_BYTES = MAX_SHELL_OUTPUT_BYTES - TAIL_BYTES
const COPY_BYTES = 64 * 1024

const writeAll = (fd: number, bytes: Uint8Array): void => {
  for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at)
}

class StreamOutput {
  /** Bytes read from the pipe, dropped ones included. */
  read = 0
  /** Bytes kept (within the budget): the first `MAX_SHELL_OUTPUT_BYTES` here, all of them in `spill` past that. */
  kept = 0
  readonly first = Buffer.allocUnsafe(MAX_SHELL_OUTPUT_BYTES)
  last: Buffer = Buffer.alloc(0)
  spill: number | undefined

  keep(bytes: Buffer) {
    if (this.kept < MAX_SHELL_OUTPUT_BYTES) bytes.copy(this.first, this.kept, 0, MAX_SHELL_OUTPUT_BYTES - this.kept)
    // Copied, so a 64 KiB chunk is not held alive by its last 4 KiB.
    this.last = bytes.length >= TAIL_BYTES
      ? Buffer.from(bytes.subarray(bytes.length - TAIL_BYTES))
      : Buffer.concat([this.last, bytes]).subarray(-TAIL_BYTES)
    this.kept += bytes.length
  }

  /** What the model reads: all of it up to `MAX_SHELL_OUTPUT_BYTES`, else its start and end around a marker. */
  view(): string {
    if (this.kept <= MAX_SHELL_OUTPUT_BYTES) return this.first.subarray(0, this.kept).toString("utf8")
    const omitted = this.kept - HEAD_BYTES - TAIL_BYTES
    return `${this.first.subarray(0, HEAD_BYTES).toString("utf8")}\n[... ${omitted} bytes omitted ...]\n${this.last.toString("utf8")}`
  }

  copyTo(fd: number): number {
    if (this.spill === undefined) {
      writeAll(fd, this.first.subarray(0, this.kept))
      return this.kept
    }
    const buffer = Buffer.allocUnsafe(COPY_BYTES)
    for (let at = 0; at < this.kept;) {
      const got = readSync(this.spill, buffer, 0, Math.min(COPY_BYTES, this.kept - at), at)
      if (got === 0) throw new Error(`spill ended at ${at} of ${this.kept} bytes`)
      writeAll(fd, buffer.subarray(0, got))
      at += got
    }
    return this.kept
  }
}

export type StreamName = "stdout" | "stderr"

export class OutputCapture {
  readonly stdout = new StreamOutput()
  readonly stderr = new StreamOutput()
  /** Set once a chunk crossed the budget. */
  private stopped = false
  /** Why the spill could not be written; the log then is not either. */
  private spillError: string | undefined

  constructor(private readonly workdir: string, readonly limit: number) {}

  /** Keeps what fits the budget; `false` once it is spent: stop the command, read no more. */
  take(name: StreamName, chunk: Buffer): boolean {
    const stream = this[name]
    stream.read += chunk.length
    if (this.stopped) return false
    const room = this.limit - this.stdout.kept - this.stderr.kept
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room)
    const before = stream.kept
    stream.keep(kept)
    if (stream.kept > MAX_SHELL_OUTPUT_BYTES) this.spillOut(stream, before, kept)
    if (kept.length < chunk.length) this.stopped = true
    return !this.stopped
  }

  private spillOut(stream: StreamOutput, before: number, bytes: Buffer) {
    if (this.spillError !== undefined) return
    try {
      if (stream.spill === undefined) {
        stream.spill = this.openSpill()
        writeAll(stream.spill, stream.first)
        writeAll(stream.spill, bytes.subarray(MAX_SHELL_OUTPUT_BYTES - before))
      } else {
        writeAll(stream.spill, bytes)
      }
    } catch (error) {
      this.spillError = (error as Error).message
    }
  }

  /** Made and unlinked from the same open `logs/` (no link followed), before the command can reach it. */
  private openSpill(): number {
    return WorkdirFs.inDirectory(this.workdir, "logs", (entry) => {
      const path = entry(`.spill-${randomBytes(8).toString("hex")}`)
      const fd = openSync(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
      unlinkSync(path)
      return fd
    })
  }

  /** Whether the budget stopped the command. */
  get capped(): boolean {
    return this.stopped
  }

  /** Bytes read past the budget and thrown away. */
  get droppedBytes(): number {
    return this.stdout.read + this.stderr.read - this.stdout.kept - this.stderr.kept
  }

  /** Whether the model's view leaves anything out (the log then has it, up to the budget). */
  get truncated(): boolean {
    return this.stopped || this.stdout.kept > MAX_SHELL_OUTPUT_BYTES || this.stderr.kept > MAX_SHELL_OUTPUT_BYTES
  }

  /**
   * Writes `logs/<name>` (never through a link, ./WorkdirFs.ts): the reference's layout with the
   * kept output, then the cap's note when it stopped the command. Returns the bytes written.
   */
  writeLog(name: string, binary: string, argv: ReadonlyArray<string>, exitCode: number): number {
    if (this.spillError !== undefined) throw new Error(this.spillError)
    const fd = WorkdirFs.open(this.workdir, `logs/${name}`, O_WRONLY | O_CREAT | O_TRUNC)
    try {
      const text = (value: string) => {
        const bytes = Buffer.from(value, "utf8")
        writeAll(fd, bytes)
        return bytes.length
      }
      let written = text(shellLogHeader(binary, argv, exitCode))
      written += this.stdout.copyTo(fd)
      written += text(SHELL_LOG_STDERR)
      written += this.stderr.copyTo(fd)
      written += text(SHELL_LOG_END)
      if (this.stopped) written += text(`${outputCapNote(this.limit, this.droppedBytes)}\n`)
      return written
    } finally {
      closeSync(fd)
    }
  }

  /** Closes the spills; safe to call more than once. */
  dispose(): void {
    for (const stream of [this.stdout, this.stderr]) {
      if (stream.spill !== undefined) closeSync(stream.spill)
      stream.spill = undefined
    }
  }
}
