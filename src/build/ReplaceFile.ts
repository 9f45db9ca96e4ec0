/**
 * A file replaced whole: written to a temporary name of its own beside it, then renamed over it.
 * Concurrent writers (a test run beside `npm run build`, two builds of one digest) each write
 * their own temporary file, and the rename is atomic, so a reader sees one whole file or the
 * previous one, never a part.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs"

export const replaceFile = (path: string, data: string | Uint8Array, mode?: number): void => {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  try {
    writeFileSync(temporary, data, { flag: "wx", ...(mode === undefined ? {} : { mode }) })
    renameSync(temporary, path)
  } finally {
    rmSync(temporary, { force: true })
  }
}
