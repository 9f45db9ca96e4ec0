/**
 * The sealed command's uid when the runtime runs as root. The kernel exempts a real uid of the
 * host's root from RLIMIT_NPROC, so `max_processes` would not bind: bwrap's user namespace then maps
 * two ids, root to root (bwrap's own setup and the launcher) and `SANDBOX_UID` to itself, and the
 * launcher (./exec-launcher.c) becomes `SANDBOX_UID` before the command, keeping CAP_DAC_OVERRIDE
 * and CAP_FOWNER inside that namespace so the command still writes the root-owned workdir (files it
 * creates belong to `SANDBOX_UID` on the host; the root runtime reads and writes them as before).
 * The per-namespace process count the kernel keeps for that uid is the sandbox's alone.
 *
 * bwrap writes only one-line maps, so the runtime (root in the parent namespace) writes these:
 * bwrap reports its child on `--info-fd` and waits on `--userns-block-fd` until the maps are in.
 */
import { writeFileSync } from "node:fs"
import type { Readable, Writable } from "node:stream"

/** `nobody`/`nogroup`: an id no host service should own processes or files under. */
export const SANDBOX_UID = 65534

/** The two maps and the child fds (numbered after the command line's data fds) bwrap talks on. */
export interface SandboxIdMap {
  /** bwrap writes `{"child-pid": N, …}` here, then closes it. */
  readonly infoFd: number
  /** bwrap waits for one byte here before its child goes on. */
  readonly blockFd: number
  readonly uidMap: string
  readonly gidMap: string
}

export const sandboxIdMap = (infoFd: number, blockFd: number): SandboxIdMap => {
  const map = `0 0 1\n${SANDBOX_UID} ${SANDBOX_UID} 1\n`
  return { infoFd, blockFd, uidMap: map, gidMap: map }
}

/**
 * Writes the maps for the child bwrap names on `info`, then releases it on `block`. Anything
 * missing or failing kills the command (`kill`) instead: an unmapped child would not start anyway
 * (the launcher cannot become an unmapped uid), this only makes it prompt. `onChild` learns the
 * child's host pid: the uid change clears its parent-death signal until the launcher re-arms it, so
 * a bwrap killed in that window leaves the command running unless it is signalled itself.
 */
export const writeIdMaps = (
  map: SandboxIdMap,
  info: Readable,
  block: Writable,
  kill: () => void,
  onChild: (pid: number) => void = () => {}
): void => {
  const chunks: Array<Buffer> = []
  let size = 0
  info.on("error", () => {})
  block.on("error", () => {})
  info.on("data", (chunk: Buffer) => {
    // bwrap's report is a few hundred bytes; more is not bwrap.
    size += chunk.length
    if (size <= 4096) chunks.push(chunk)
  })
  info.once("end", () => {
    try {
      const pid: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"))["child-pid"]
      if (size > 4096 || typeof pid !== "number" || !Number.isInteger(pid) || pid <= 1) throw new Error("no child pid")
      onChild(pid)
      writeFileSync(`/proc/${pid}/uid_map`, map.uidMap)
      writeFileSync(`/proc/${pid}/gid_map`, map.gidMap)
      // The sandbox inherits bwrap's copy of this fd: our end is closed once the byte is out.
      block.end(Buffer.of(1), () => block.destroy())
    } catch {
      kill()
      block.destroy()
    }
  })
}
