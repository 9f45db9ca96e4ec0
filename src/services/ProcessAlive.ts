import { readFileSync } from "node:fs"

/** Whether a process runs, for markers and locks that name their owner's pid (EPERM: alive, another user's). */
export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** `/proc/<pid>/stat`'s fields after the command name (the first is the state), or undefined without it. */
const statFields = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: count from the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/**
 * When the process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22): with its
 * pid it names one process, so a pid the kernel has handed to another is not taken for it.
 * Undefined without `/proc` (or without the process).
 */
export const processStart = (pid: number): string | undefined => statFields(pid)?.[19]

/**
 * Whether `pid` is still the process that started at `start` (a start unknown on either side:
 * its being alive). A zombie, exited and not yet reaped by its parent, is not running.
 */
export const sameProcess = (pid: number, start: string | undefined): boolean => {
  if (!processAlive(pid)) return false
  const fields = statFields(pid)
  if (fields === undefined) return true
  return fields[0] !== "Z" && (start === undefined || fields[19] === start)
}
