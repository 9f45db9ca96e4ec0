/**
 * The cgroup v2 probe behind the `resources.cgroup_*` warning: it names what the host lacks (no
 * v2 hierarchy, no cgroup2 mount, controllers not delegated, not writable), from the same files
 * the kernel exposes, and the launch's warning carries that reason. On this machine, whatever it
 * finds, the probe answers with a reason and never throws.
 */
import { describe, expect, it } from "vitest"
import { cgroupWarning, type ProbeFiles, probeCgroup } from "../../../src/shell/containment/CgroupProbe.js"

const MOUNTINFO = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
const files = (entries: Record<string, string>, writable = true): ProbeFiles => ({
  read: (path) => entries[path],
  writable: () => writable
})

describe("probeCgroup", () => {
  it("names each thing the host lacks", () => {
    expect(probeCgroup(files({ "/proc/self/cgroup": "4:memory:/x\n" })).reason).toContain("no cgroup v2 hierarchy")
    expect(probeCgroup(files({ "/proc/self/cgroup": "0::/app\n", "/proc/self/mountinfo": "" })).reason).toBe("no cgroup v2 file system is mounted")
    const noControllers = probeCgroup(files({ "/proc/self/cgroup": "0::/app\n", "/proc/self/mountinfo": MOUNTINFO, "/sys/fs/cgroup/app/cgroup.controllers": "cpu pids\n" }))
    expect(noControllers).toEqual({ delegated: undefined, reason: "the runtime's cgroup /sys/fs/cgroup/app has no memory, io controllers delegated to it (cgroup.controllers: 'cpu pids')" })
    const all = { "/proc/self/cgroup": "0::/app\n", "/proc/self/mountinfo": MOUNTINFO, "/sys/fs/cgroup/app/cgroup.controllers": "cpuset cpu io memory pids\n" }
    expect(probeCgroup(files(all, false)).reason).toContain("is not writable by this user")
    expect(probeCgroup(files(all)).delegated).toBe("/sys/fs/cgroup/app")
  })

  it("puts the reason in the launch's warning, only when a cgroup key is declared", () => {
    expect(cgroupWarning([])).toBeUndefined()
    const warning = cgroupWarning(["cgroup_memory_bytes", "cgroup_pids_max"], () => ({ delegated: undefined, reason: "no cgroup v2 file system is mounted" }))
    expect(warning).toBe("warning[W-RUN-001]: capabilities.resources.cgroup_memory_bytes, capabilities.resources.cgroup_pids_max are not applied: no cgroup v2 file system is mounted")
    // The host's own answer: a reason, whatever this machine has.
    expect(probeCgroup().reason.length).toBeGreaterThan(0)
  })
})
