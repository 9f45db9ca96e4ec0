/**
 * OS containment of one shell-grant command: what the launch decides (`shellContainment`, from the
 * host probe and the manifest), the program line a command runs under (`containedCommand`), and
 * what that line really applies (`appliedContainment`), so a trace never claims more than ran.
 *
 * Sealed: `prlimit <rlimits> -- bwrap <namespaces, composed root> -- [/.murmur-relay 3128
 * /.murmur-egress 6 --] /.murmur-exec <seccomp fd> <noexec mounts> -- <program> <argv>`. Every
 * namespace is unshared (network included: a command has only its own loopback, where with
 * `network.allow` the relay (./EgressRelay.ts) carries its proxy connections to the runtime's
 * checking proxy, ../egress/EgressProxy.ts), the root holds only the allowlisted
 * binaries and their library closure read-only, the workdir read-write at its host path, the
 * `filesystem.read_only` subtrees read-only over it, a private `/tmp` and `/dev/shm` of
 * `resources.tmp_bytes` each, `/proc` (own pid namespace) and a read-only minimal `/dev`; the root
 * itself is read-only. bwrap's `--die-with-parent` plus the pid namespace take the whole tree down
 * when the runtime dies. The launcher (./ExecLauncher.ts) is pid 1 and becomes the command; it
 * remounts the writable mounts noexec, drops capabilities (under a root runtime: becomes
 * ./SandboxUid.ts's uid first), sets no_new_privs and loads the seccomp program (./Seccomp.ts).
 *
 * Advisory: `prlimit <rlimits> -- setpriv --pdeathsig KILL -- <binary> <argv>`: limits and death
 * with the runtime, nothing else.
 */
import { realpathSync } from "node:fs"
import { isAbsolute, relative, resolve } from "node:path"
import type { Capabilities, ResourceCapabilities, ShellCapabilities } from "../../project/manifest/Capabilities.js"
import { addExecutable, addLoaderCache, locate, RootBuilder } from "./ComposedRoot.js"
import { EGRESS_PORT, EGRESS_SOCKET_PATH, RELAY_PATH, relayBytes } from "./EgressRelay.js"
import { LAUNCHER_PATH, launcherBytes } from "./ExecLauncher.js"
import { executableOnPath, type HostTier, SYSTEM_DIRS } from "./HostProbe.js"
import { liveProcessCount, prlimitArgs, rlimitsFor, tmpBytesFor } from "./Resources.js"
import { SANDBOX_UID, type SandboxIdMap, sandboxIdMap } from "./SandboxUid.js"
import { seccompProgram } from "./Seccomp.js"

export interface SealedShell {
  readonly tier: "sealed"
  readonly bwrap: string
  /** util-linux `prlimit`; absent: no rlimits. */
  readonly prlimit: string | undefined
  /** `filesystem.read_only`, workdir-relative. */
  readonly readOnly: ReadonlyArray<string>
  readonly workdirExec: boolean
  readonly unixSockets: boolean
  /** `network.allow` is not empty: a command given an egress socket gets the relay and proxy. */
  readonly egress: boolean
  readonly resources: ResourceCapabilities
  readonly interpreterRuntime: (typeof ShellCapabilities.Type)["interpreterRuntime"]
  readonly stagedRuntime: (typeof ShellCapabilities.Type)["stagedRuntime"]
}

export interface AdvisoryShell {
  readonly tier: "advisory"
  /** Why the host gives no more. */
  readonly reason: string
  readonly prlimit: string | undefined
  /** util-linux `setpriv` (for `--pdeathsig`); absent: a command outlives a killed runtime. */
  readonly setpriv: string | undefined
  readonly resources: ResourceCapabilities
}

export type ShellContainment = SealedShell | AdvisoryShell

/** The mechanisms a command line applies. */
export type Mechanism =
  | "rlimits"
  | "pdeathsig"
  | "namespaces"
  | "network-unshared"
  | "composed-root"
  | "private-tmp-proc-dev"
  | "die-with-parent"
  | "new-session"
  | "capabilities-dropped"
  | "no-new-privs"
  | "seccomp"
  | "noexec-scratch"
  | "noexec-workdir"
  | "egress-proxy"
  | "sized-scratch"
  | "unprivileged-uid"

/** A util-linux helper: on `PATH`, else in the system directories. */
const helper = (name: string, path: string | undefined): string | undefined => executableOnPath(name, path, SYSTEM_DIRS)

/**
 * What the shell of a capsule runs under on this host: the probe's tier (./HostProbe.ts already
 * requires a working bwrap, this CPU's launcher and prlimit for sealed). `path` is the host's `PATH`.
 */
export const shellContainment = (
  host: HostTier,
  capabilities: Capabilities | undefined,
  path: string | undefined
): ShellContainment => {
  const resources = capabilities?.resources ?? {}
  const prlimit = helper("prlimit", path)
  if (host.tier === "advisory") return { tier: "advisory", reason: host.reason, prlimit, setpriv: helper("setpriv", path), resources }
  return {
    tier: "sealed",
    bwrap: host.bwrap,
    prlimit,
    readOnly: capabilities?.filesystem?.readOnly ?? [],
    workdirExec: capabilities?.filesystem?.workdirExec ?? false,
    unixSockets: capabilities?.network?.unixSockets ?? false,
    egress: (capabilities?.network?.allow.length ?? 0) > 0,
    resources,
    interpreterRuntime: capabilities?.shell?.interpreterRuntime ?? [],
    stagedRuntime: capabilities?.shell?.stagedRuntime ?? []
  }
}

/** Everything `containment` puts in place for each command of a runtime running as `uid`, in a stable order. */
export const appliedContainment = (containment: ShellContainment, uid: number = process.getuid?.() ?? 0): ReadonlyArray<Mechanism> => {
  const rlimits: Array<Mechanism> = containment.prlimit === undefined ? [] : ["rlimits"]
  if (containment.tier === "advisory") return [...rlimits, ...(containment.setpriv === undefined ? [] : ["pdeathsig" as const])]
  return [
    ...rlimits,
    "namespaces",
    "network-unshared",
    "composed-root",
    "private-tmp-proc-dev",
    "die-with-parent",
    "new-session",
    "capabilities-dropped",
    "no-new-privs",
    "seccomp",
    "noexec-scratch",
    ...(containment.workdirExec ? [] : ["noexec-workdir" as const]),
    ...(containment.egress ? ["egress-proxy" as const] : []),
    "sized-scratch",
    ...(uid === 0 ? ["unprivileged-uid" as const] : [])
  ]
}

/** The program line of one command; `fds[i]` is written to the child's fd `3 + i`, then closed. */
export interface CommandLine {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly fds: ReadonlyArray<Buffer>
  /** Under a root runtime: the id maps the spawner writes while bwrap waits (./SandboxUid.ts). */
  readonly idMap?: SandboxIdMap
}

export interface CommandInput {
  /** The binary as named in `shell.allow`. */
  readonly binary: string
  readonly argv: ReadonlyArray<string>
  /** Absolute path of the accessible workdir. */
  readonly workdir: string
  readonly allow: ReadonlyArray<string>
  /** The command environment's `PATH`. */
  readonly path: string | undefined
  /** Host path of the command's egress proxy socket (../egress/ShellEgress.ts); absent: no egress. */
  readonly egress?: string | undefined
}

const inside = (root: string, path: string) => {
  const rel = relative(root, path)
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel))
}

/** The sealed command line; `undefined` when the binary is not on `PATH`. */
const sealedLine = (containment: SealedShell, input: CommandInput, uid: number): CommandLine | undefined => {
  const program = locate(input.binary, input.path)
  if (program === undefined) return undefined
  const workdir = resolve(input.workdir)
  const root = new RootBuilder()
  // Scratch is memory no rlimit counts: each tmpfs is sized, and bwrap's /dev (a tmpfs of its own) read-only.
  const tmpBytes = String(tmpBytesFor(containment.resources))
  root.push("--proc", "/proc", "--dev", "/dev", "--size", tmpBytes, "--tmpfs", "/dev/shm", "--remount-ro", "/dev")
  root.push("--size", tmpBytes, "--tmpfs", "/tmp")
  addExecutable(root, program, input.path)
  for (const name of input.allow) {
    const other = locate(name, input.path)
    if (other !== undefined) addExecutable(root, other, input.path)
  }
  for (const grant of containment.interpreterRuntime) {
    if (grant.binary === input.binary) grant.dirs.forEach((dir) => root.add(dir.path))
  }
  for (const grant of containment.stagedRuntime) {
    if (grant.binary === input.binary) root.add(grant.sourcePath)
  }
  addLoaderCache(root)
  root.add(workdir, "rw")
  const noexec = ["/tmp", "/dev", "/dev/shm"]
  const workdirMounts = [workdir]
  for (const entry of containment.readOnly) {
    const target = resolve(workdir, entry)
    if (!inside(workdir, target) || target === workdir) continue
    let real: string | undefined
    try {
      real = realpathSync(target)
    } catch {
      real = undefined
    }
    if (real === undefined) root.push("--tmpfs", target, "--remount-ro", target)
    else if (inside(realpathSync(workdir), real)) root.push("--ro-bind", real, target)
    else continue
    workdirMounts.push(target)
  }
  if (!containment.workdirExec) noexec.push(...workdirMounts)
  root.push("--perms", "0555", "--ro-bind-data", "3", LAUNCHER_PATH)
  const egress = containment.egress ? input.egress : undefined
  if (egress !== undefined) root.push("--perms", "0555", "--ro-bind-data", "5", RELAY_PATH, "--ro-bind", egress, EGRESS_SOCKET_PATH)
  root.push("--remount-ro", "/")
  const fds = [launcherBytes(), seccompProgram({ unixSockets: containment.unixSockets })]
  // The relay's own program lets it make the AF_UNIX socket it connects to the runtime with.
  if (egress !== undefined) fds.push(relayBytes(), seccompProgram({ unixSockets: true }))
  // RLIMIT_NPROC exempts the host's root: a root runtime's commands run as SANDBOX_UID.
  const idMap = uid === 0 ? sandboxIdMap(3 + fds.length, 4 + fds.length) : undefined
  const asSandboxUid = idMap === undefined
    ? []
    : [
      "--info-fd",
      String(idMap.infoFd),
      "--userns-block-fd",
      String(idMap.blockFd),
      ...["CAP_SETUID", "CAP_SETGID", "CAP_DAC_OVERRIDE", "CAP_FOWNER"].flatMap((cap) => ["--cap-add", cap]),
      // git refuses a repository its uid does not own ("dubious ownership"): the root-owned workdir is the command's own.
      ...["--setenv", "GIT_CONFIG_COUNT", "1", "--setenv", "GIT_CONFIG_KEY_0", "safe.directory", "--setenv", "GIT_CONFIG_VALUE_0", "*"]
    ]
  const bwrapArgs = [
    "--unshare-all",
    "--unshare-user",
    // The launcher is pid 1 and becomes the command: no bwrap init whose /proc/1/exe runs a host binary.
    "--as-pid-1",
    "--die-with-parent",
    "--new-session",
    "--hostname",
    "capsule",
    "--cap-drop",
    "ALL",
    "--cap-add",
    "CAP_SYS_ADMIN",
    "--cap-add",
    "CAP_SETPCAP",
    ...asSandboxUid,
    ...root.args,
    "--chdir",
    input.workdir,
    "--",
    ...(egress === undefined ? [] : [RELAY_PATH, String(EGRESS_PORT), EGRESS_SOCKET_PATH, "6", "--"]),
    LAUNCHER_PATH,
    "4",
    idMap === undefined ? "-" : String(SANDBOX_UID),
    ...noexec,
    "--",
    program,
    ...input.argv
  ]
  const ids = idMap === undefined ? {} : { idMap }
  if (containment.prlimit === undefined) return { file: containment.bwrap, args: bwrapArgs, fds, ...ids }
  // SANDBOX_UID's count is kept per user namespace: the sandbox's processes alone, no headroom.
  const limits = rlimitsFor(containment.resources, idMap === undefined ? liveProcessCount(uid) : 0)
  return { file: containment.prlimit, args: [...prlimitArgs(limits), "--", containment.bwrap, ...bwrapArgs], fds, ...ids }
}

/** The advisory command line: rlimits and pdeathsig around the binary as today. */
const advisoryLine = (containment: AdvisoryShell, input: CommandInput, uid: number): CommandLine => {
  const wrapped = containment.setpriv === undefined
    ? [input.binary, ...input.argv]
    : [containment.setpriv, "--pdeathsig", "KILL", "--", input.binary, ...input.argv]
  if (containment.prlimit === undefined) return { file: wrapped[0]!, args: wrapped.slice(1), fds: [] }
  const limits = rlimitsFor(containment.resources, liveProcessCount(uid))
  return { file: containment.prlimit, args: [...prlimitArgs(limits), "--", ...wrapped], fds: [] }
}

/**
 * The program line of one command under `containment`; `undefined` when the binary is not on the
 * command's `PATH` (the caller reports that as a failed spawn, as an uncontained spawn would).
 */
export const containedCommand = (
  containment: ShellContainment,
  input: CommandInput,
  uid: number = process.getuid?.() ?? 0
): CommandLine | undefined => {
  if (containment.tier === "sealed") return sealedLine(containment, input, uid)
  if (locate(input.binary, input.path) === undefined) return undefined
  return advisoryLine(containment, input, uid)
}
