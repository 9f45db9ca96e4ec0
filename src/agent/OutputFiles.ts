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
import { eachExportFile } from "../planes/ExportReader.js"
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
  // mtime has whole-ms resolution here; a file written in the task's first ms still counts.
  // The runtime's own `out/result.txt` (the answer, sent as text already) is not an output file.
  // Only sizes and dates are read here: the files are not hashed (the plane does that when asked).
  const own = (path: string) => `${exported.root}/${path}`.replace(/^(\.\/)+/, "").replace(/\/+/g, "/") === resultPath
  const changed: Array<{ readonly path: string; readonly size: number }> = []
  const walked = eachExportFile(workdir, exported.root, (path, _fd, stat) => {
    if (Math.floor(stat.mtimeMs) >= Math.floor(since) && !own(path)) changed.push({ path, size: stat.size })
  })
  if (Either.isLeft(walked)) return { files: [], summary: "" }
  changed.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  const files: Array<FilePart> = []
  const lines: Array<string> = []
  for (const { path: name, size } of changed.slice(0, maxOutputFiles)) {
    // What the resource plane would refuse (over max_bytes) is neither inlined nor linked.
    const served = size <= exported.maxBytes
    const inline = served && size <= inlineLimit ? readSmall(workdir, `${exported.root}/${name}`, size) : undefined
    if (inline !== undefined) {
      files.push({ kind: "file", name, bytes: inline })
      lines.push(`${exported.root}/${name} (${size} bytes)`)
    } else if (served && doorUrl !== undefined) {
      const uri = `${doorUrl}resources/files/${name.split("/").map(encodeURIComponent).join("/")}`
      files.push({ kind: "file", name, uri })
      lines.push(`${exported.root}/${name} (${size} bytes, at ${uri})`)
    } else {
      lines.push(`${exported.root}/${name} (${size} bytes, not served${served ? "" : ": over exports.files.max_bytes"})`)
    }
  }
  if (changed.length > maxOutputFiles) lines.push(`… and ${changed.length - maxOutputFiles} more under ${exported.root}`)
  return { files, summary: lines.join("\n") }
}
