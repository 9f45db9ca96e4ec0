/**
 * This process's peak resident set (Linux `VmHWM`), reset on demand through `/proc/self/clear_refs`
 * ("5" resets the high-water mark to the current resident set), so a test can bound what one
 * operation costs the runtime it hosts.
 */
import { readFileSync, writeFileSync } from "node:fs"

const statusBytes = (field: "VmRSS" | "VmHWM"): number => {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((entry) => entry.startsWith(`${field}:`))
  if (line === undefined) throw new Error(`/proc/self/status has no ${field}`)
  return Number(/(\d+)\s*kB/.exec(line)![1]) * 1024
}

/** Resets the peak to now; returns the resident set it starts from. */
export const resetPeakRss = (): number => {
  writeFileSync("/proc/self/clear_refs", "5")
  return statusBytes("VmRSS")
}

/** The peak resident set since the last `resetPeakRss`. */
export const peakRss = (): number => statusBytes("VmHWM")
