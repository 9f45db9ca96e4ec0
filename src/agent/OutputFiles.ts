/**
 * A task's output files: what it wrote under the capsule's declared `exports.files.root` during
 * the task (modified at or after the task started) comes back to the client as file parts of
 * one `files` artifact. A file of at most 64 KiB is inline (its bytes); a larger one is a link to
 * the door's resource plane (`/resources/files/<path>`, read there under the plane's own rules),
 * and without a door it is named only. At most 32 files; the summary says how many more there
 * were. Files over the export's `max_bytes` are never served, so they are named, not linked.
 * The runtime's own `out/result.txt` (the answer, already the task's text) is left out.
 */
import { constants, closeSync, readSync } from "node:fs"
import { Either } from "effect"
import { listExport } from "../planes/ExportReader.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { FilePart } from "../services/Task.js"

export const inlineLimit = 64 * 1024
const resultPath = "out/result.txt"
export const maxOutputFiles = 32

export interface OutputFiles {
  readonly files: ReadonlyArray<FilePart>
  /** One line per file, for readers without file parts (the reference dialect, the trace). */
  readonly summary: string
}

const readSmall = (workdir: string, path: string, size: number): string | undefined => {
  try {
    const fd = WorkdirFs.open(workdir, path, constants.O_RDONLY | constants.O_NONBLOCK)
    try {
      const buffer = Buffer.alloc(size)
      let read = 0
      while (read < size) {
        const got = readSync(fd, buffer, read, size - read, read)
        if (got === 0) break
        read += got
      }
      return buffer.subarray(0, read).toString("base64")
    } finally {
      closeSync(fd)
    }
  } catch {
    // Gone or turned into a link since it was listed: it is named, not read.
    return undefined
  }
}

/** The files under the export root changed since `since` (ms), as parts; none when nothing is declared or changed. */
export const outputFiles = (
  workdir: string,
  exported: { readonly root: string; readonly maxBytes: number } | undefined,
  since: number,
  doorUrl: string | undefined
): OutputFiles => {
  if (exported === undefined) return { files: [], summary: "" }
  const listed = listExport(workdir, exported.root, exported.maxBytes)
  if (Either.isLeft(listed)) return { files: [], summary: "" }
  // mtime has whole-ms resolution here; a file written in the task's first ms still counts.
  // The runtime's own `out/result.txt` (the answer, sent as text already) is not an output file.
  const own = (path: string) => `${exported.root}/${path}`.replace(/^(\.\/)+/, "").replace(/\/+/g, "/") === resultPath
  const changed = listed.right.filter((entry) => entry.mtime_ms >= Math.floor(since) && !own(entry.path))
  const files: Array<FilePart> = []
  const lines: Array<string> = []
  for (const entry of changed.slice(0, maxOutputFiles)) {
    const name = entry.path
    const inline = entry.sha256 !== null && entry.size_bytes <= inlineLimit ? readSmall(workdir, `${exported.root}/${entry.path}`, entry.size_bytes) : undefined
    if (inline !== undefined) {
      files.push({ kind: "file", name, bytes: inline })
      lines.push(`${exported.root}/${name} (${entry.size_bytes} bytes)`)
    } else if (entry.sha256 !== null && doorUrl !== undefined) {
      const uri = `${doorUrl}resources/files/${entry.path.split("/").map(encodeURIComponent).join("/")}`
      files.push({ kind: "file", name, uri })
      lines.push(`${exported.root}/${name} (${entry.size_bytes} bytes, at ${uri})`)
    } else {
      lines.push(`${exported.root}/${name} (${entry.size_bytes} bytes, not served${entry.sha256 === null ? ": over exports.files.max_bytes" : ""})`)
    }
  }
  if (changed.length > maxOutputFiles) lines.push(`… and ${changed.length - maxOutputFiles} more under ${exported.root}`)
  return { files, summary: lines.join("\n") }
}
