/**
 * What OS containment this host can give subprocesses, probed once per process. The sealed tier
 * needs bubblewrap (`bwrap`) that really creates the namespaces: a binary on `PATH` is not proof
 * (a kernel may forbid user namespaces), so the probe runs one sandboxed `true` and trusts only
 * its exit status. The sealed tier also needs its launcher and seccomp program built for this CPU
 * (x86_64) and util-linux `prlimit` for the rlimits: without all of it the host is advisory, so the
 * tier never claims what a command would not get. Nothing else is consulted, so no manifest can
 * talk a host into a tier.
 */
import { execFile } from "node:child_process"
import { accessSync, constants } from "node:fs"
import { delimiter, isAbsolute, join } from "node:path"
import { Effect } from "effect"
import { LAUNCHER_ARCHES } from "./ExecLauncher.js"

export type HostTier =
  | { readonly tier: "sealed"; readonly bwrap: string }
  | { readonly tier: "advisory"; readonly reason: string }

export const SYSTEM_DIRS: ReadonlyArray<string> = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]

/** The first executable `name` in `path`'s directories, then `extra`; relative entries are skipped. */
export const executableOnPath = (name: string, path: string | undefined, extra: ReadonlyArray<string> = []): string | undefined => {
  for (const dir of [...(path ?? "").split(delimiter), ...extra]) {
    if (!isAbsolute(dir)) continue
    const candidate = join(dir, name)
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

const trial = (bwrap: string) =>
  Effect.async<string | undefined>((resume) => {
    const args = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    execFile(bwrap, args, { timeout: 10_000 }, (error, _stdout, stderr) =>
      resume(Effect.succeed(error === null ? undefined : (String(stderr).trim().split("\n")[0] || error.message))))
  })

/** Probes `bwrap` on `path` (the runtime's own PATH); `MURMUR_BWRAP` may name it exactly. */
export const probeHost = (path: string | undefined, explicit?: string): Effect.Effect<HostTier> =>
  Effect.gen(function*() {
    if (process.platform !== "linux") return { tier: "advisory", reason: `OS containment needs Linux (this host is ${process.platform})` } as const
    const bwrap = explicit ?? executableOnPath("bwrap", path)
    if (bwrap === undefined) return { tier: "advisory", reason: "bubblewrap (bwrap) is not installed on this host (Debian: apt-get install bubblewrap)" } as const
    if (!LAUNCHER_ARCHES.includes(process.arch)) {
      return { tier: "advisory", reason: `the sealed tier's launcher and seccomp program are built for x86_64 only (this host is ${process.arch})` } as const
    }
    if (executableOnPath("prlimit", path, SYSTEM_DIRS) === undefined) {
      return { tier: "advisory", reason: "util-linux prlimit is not installed, so the sealed tier's rlimits cannot be applied" } as const
    }
    const failure = yield* trial(bwrap)
    if (failure !== undefined) return { tier: "advisory", reason: `bubblewrap cannot create namespaces on this host: ${failure}` } as const
    return { tier: "sealed", bwrap } as const
  })

const cache = new Map<string, HostTier>()

/** `probeHost`, run once per (path, explicit) for the life of the process. */
export const probeHostOnce = (path: string | undefined, explicit?: string): Effect.Effect<HostTier> => {
  const key = `${explicit ?? ""}\0${path ?? ""}`
  const known = cache.get(key)
  if (known !== undefined) return Effect.succeed(known)
  return probeHost(path, explicit).pipe(Effect.tap((tier) => Effect.sync(() => cache.set(key, tier))))
}
