/**
 * Whether the host delegates a cgroup v2 subtree to this runtime, which is what the
 * `resources.cgroup_*` keys need (spec §5.2): the process's own cgroup on a mounted cgroup2 file
 * system, with the memory, pids, cpu and io controllers available in it and writable by this
 * user. Read from /proc/self/cgroup, /proc/self/mountinfo and the cgroup's own files, like the
 * bubblewrap probe reads the host. The answer is said in the launch's warning, so an operator
 * knows what to delegate (systemd: `Delegate=yes` on the unit).
 */
import { accessSync, constants, readFileSync } from "node:fs"
import { join } from "node:path"

export const CGROUP_CONTROLLERS = ["memory", "pids", "cpu", "io"] as const

export interface CgroupProbe {
  /** The delegated cgroup's directory, when there is one with every controller. */
  readonly delegated: string | undefined
  /** Why the limits cannot be applied here, or what was found. */
  readonly reason: string
}

export interface ProbeFiles {
  readonly read: (path: string) => string | undefined
  readonly writable: (path: string) => boolean
}

const hostFiles: ProbeFiles = {
  read: (path) => {
    try {
      return readFileSync(path, "utf8")
    } catch {
      return undefined
    }
  },
  writable: (path) => {
    try {
      accessSync(path, constants.W_OK)
      return true
    } catch {
      return false
    }
  }
}

/** The cgroup2 mount point from mountinfo lines (`… <mount point> … - cgroup2 …`). */
const cgroup2Mount = (mountinfo: string): string | undefined => {
  for (const line of mountinfo.split("\n")) {
    const [before, after] = line.split(" - ")
    if (after?.split(" ")[0] === "cgroup2") return before?.split(" ")[4]
  }
  return undefined
}

export const probeCgroup = (files: ProbeFiles = hostFiles): CgroupProbe => {
  const own = files.read("/proc/self/cgroup")?.split("\n").find((line) => line.startsWith("0::"))
  if (own === undefined) return { delegated: undefined, reason: "this process is in no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)" }
  const mount = cgroup2Mount(files.read("/proc/self/mountinfo") ?? "")
  if (mount === undefined) return { delegated: undefined, reason: "no cgroup v2 file system is mounted" }
  const dir = join(mount, own.slice(3).trim())
  const available = (files.read(join(dir, "cgroup.controllers")) ?? "").trim().split(/\s+/).filter((name) => name !== "")
  const missing = CGROUP_CONTROLLERS.filter((name) => !available.includes(name))
  if (missing.length > 0) {
    return {
      delegated: undefined,
      reason: `the runtime's cgroup ${dir} has no ${missing.join(", ")} controller${missing.length === 1 ? "" : "s"} delegated to it (cgroup.controllers: '${available.join(" ")}')`
    }
  }
  if (!files.writable(dir) || !files.writable(join(dir, "cgroup.subtree_control"))) {
    return { delegated: undefined, reason: `the runtime's cgroup ${dir} is not writable by this user (not delegated)` }
  }
  return { delegated: dir, reason: `a delegated cgroup v2 subtree is at ${dir} (${available.join(" ")}), but this runtime does not place shell commands in it yet` }
}

/** The launch's warning for declared cgroup keys, or none when there are none. */
export const cgroupWarning = (declared: ReadonlyArray<string>, probe: () => CgroupProbe = probeCgroup): string | undefined =>
  declared.length === 0 ? undefined : `warning[W-RUN-001]: ${declared.map((key) => `capabilities.resources.${key}`).join(", ")} ${declared.length === 1 ? "is" : "are"} not applied: ${probe().reason}`
