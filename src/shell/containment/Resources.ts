/**
 * Subprocess rlimits (spec §5.2) from `capabilities.resources`, applied by running the command
 * under util-linux `prlimit` (the limits are set on prlimit itself, then inherited across its exec
 * of bwrap or the command, so they are hard limits in place before the command's first
 * instruction). `max_processes` is headroom over the uid's live process count, as the reference
 * does. The cgroup fields and `workdir_max_bytes` are not enforced here. `tmp_bytes` is no rlimit:
 * it sizes the sealed tier's in-memory scratch mounts (./ShellContainment.ts), which RLIMIT_AS and
 * RLIMIT_FSIZE do not bound (tmpfs pages belong to no process, and the limit is per file).
 */
import { readdirSync, readFileSync } from "node:fs"
import type { ResourceCapabilities } from "../../project/manifest/Capabilities.js"

export const RESOURCE_DEFAULTS = {
  max_processes: 128,
  max_open_files: 1024,
  max_file_size_bytes: 4 * 1024 ** 3,
  cpu_seconds: 3600,
  memory_bytes: 2 * 1024 ** 3,
  tmp_bytes: 256 * 1024 ** 2
} as const

/** The rlimits a command gets: the declared fields over the defaults. */
export interface Rlimits {
  readonly nproc: number
  readonly nofile: number
  readonly fsize: number
  readonly cpu: number
  readonly as: number
}

/** Processes whose real uid is `uid`, counted from `/proc` (0 when /proc cannot be read). */
export const liveProcessCount = (uid: number): number => {
  let count = 0
  let entries: Array<string>
  try {
    entries = readdirSync("/proc")
  } catch {
    return 0
  }
  for (const entry of entries) {
    if (!/^\d+$/u.test(entry)) continue
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8")
      const match = /^Uid:\s+(\d+)/mu.exec(status)
      if (match !== null && Number(match[1]) === uid) count++
    } catch {
      // gone
    }
  }
  return count
}

export const rlimitsFor = (declared: ResourceCapabilities, liveProcesses: number): Rlimits => ({
  nproc: liveProcesses + (declared.max_processes ?? RESOURCE_DEFAULTS.max_processes),
  nofile: declared.max_open_files ?? RESOURCE_DEFAULTS.max_open_files,
  fsize: declared.max_file_size_bytes ?? RESOURCE_DEFAULTS.max_file_size_bytes,
  cpu: declared.cpu_seconds ?? RESOURCE_DEFAULTS.cpu_seconds,
  as: declared.memory_bytes ?? RESOURCE_DEFAULTS.memory_bytes
})

/** `prlimit` options setting every limit hard (soft = hard), core dumps off. */
export const prlimitArgs = (limits: Rlimits): Array<string> => [
  `--nproc=${limits.nproc}:${limits.nproc}`,
  `--nofile=${limits.nofile}:${limits.nofile}`,
  `--fsize=${limits.fsize}:${limits.fsize}`,
  `--cpu=${limits.cpu}:${limits.cpu}`,
  `--as=${limits.as}:${limits.as}`,
  "--core=0:0"
]

/** The size of each sealed scratch tmpfs (`/tmp`, `/dev/shm`), in bytes. */
export const tmpBytesFor = (declared: ResourceCapabilities): number => declared.tmp_bytes ?? RESOURCE_DEFAULTS.tmp_bytes
