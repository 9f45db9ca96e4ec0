/**
 * Declared versus achieved containment (the reference's `containment.rs` contract). The declared
 * class is a floor the manifest asks for; the achieved class is read off the host's tier alone,
 * then capped at `advisory` by an executable workdir. No declaration raises what is achieved, and
 * a floor above what is achieved refuses the launch (`E-CAP-003`) instead of running weaker.
 */
import { Effect, Either } from "effect"
import type { Capabilities, ContainmentClass } from "../../project/manifest/Capabilities.js"
import { ProjectError } from "../../project/ProjectError.js"
import { type HostTier, probeHostOnce } from "./HostProbe.js"
import { interpreterChain, locate as locateProgram } from "./ComposedRoot.js"

export interface ContainmentDecision {
  readonly declared: ContainmentClass
  readonly achieved: ContainmentClass
  /** What the shell's commands run under; `sealed` carries the bwrap that applies it. */
  readonly host: HostTier
  /** Said at launch, each naming the key it concerns: what a declared grant does not get here. */
  readonly warnings: ReadonlyArray<string>
}

const RANK: Record<ContainmentClass, number> = { advisory: 0, scoped: 1, sealed: 2 }

const W = (key: string, message: string) => `warning[W-RUN-001]: '${key}' ${message}`

const hasShell = (caps: Capabilities) => (caps.shell?.allow.length ?? 0) > 0

const tierWarnings = (caps: Capabilities, host: HostTier): Array<string> => {
  const warnings: Array<string> = []
  if (!hasShell(caps)) return warnings
  if (host.tier === "advisory") {
    warnings.push(W("capabilities.shell", `commands run without OS containment (achieved: advisory): ${host.reason}; they have the host user's authority over the host filesystem and network`))
    if ((caps.filesystem?.readOnly.length ?? 0) > 0) warnings.push(W("capabilities.filesystem.read_only", "binds WASM guests only: shell commands can still write there without the sealed tier"))
    return warnings
  }
  // Sealed: network.allow reaches commands through the runtime's checking proxy (../egress/).
  return warnings
}

/** Decides a launch's containment, or refuses it (`E-CAP-003`) when the declared floor is above what this host achieves. */
export const decideContainment = (caps: Capabilities, host: HostTier): Either.Either<ContainmentDecision, ProjectError> => {
  const declared = caps.containment ?? "advisory"
  const hostClass: ContainmentClass = host.tier === "sealed" ? "sealed" : "advisory"
  const achieved: ContainmentClass = caps.filesystem?.workdirExec === true ? "advisory" : hostClass
  if (RANK[declared] > RANK[achieved]) {
    const why = host.tier === "advisory" ? host.reason : "capabilities.filesystem.workdir_exec: true caps containment at advisory"
    return Either.left(new ProjectError({ code: "E-CAP-003", message: `containment floor '${declared}' cannot be met: this host achieves '${achieved}' (${why})` }))
  }
  return Either.right({ declared, achieved, host, warnings: tierWarnings(caps, host) })
}

/** Probes this host (once per process) and decides; `MURMUR_BWRAP` in `hostEnv` names bwrap exactly. */
export const containmentFor = (caps: Capabilities, hostEnv: Readonly<Record<string, string | undefined>>) =>
  Effect.flatMap(probeHostOnce(hostEnv["PATH"], hostEnv["MURMUR_BWRAP"]), (host) =>
    Either.flatMap(decideContainment(caps, host), (decided) => {
      const unrunnable = unrunnableGrant(caps.shell?.allow ?? [], hostEnv["PATH"])
      return unrunnable === undefined ? Either.right(decided) : Either.left(new ProjectError({ code: "E-CAP-014", message: unrunnable }))
    }))

/**
 * A `shell.allow` name that is a script whose `#!/usr/bin/env <program>` names a program not on
 * `PATH` (a version-manager shim, say) would fail at every call with the shell's "No such file or
 * directory" and no hint: refused at start instead, naming what to grant. A granted name not on
 * `PATH` at all fails its calls as before (the model reads why).
 */
export const unrunnableGrant = (allow: ReadonlyArray<string>, path: string | undefined): string | undefined => {
  for (const name of allow) {
    const located = locateProgram(name, path)
    if (located === undefined) continue
    const chain = interpreterChain(located, path)
    if (chain.missing === undefined) continue
    return `capabilities.shell.allow '${name}' is ${located}, a script run by '${chain.programs.at(-1)} ${chain.missing}', and '${chain.missing}' is not on PATH (${path ?? "unset"}): ` +
      `put ${chain.missing} on the PATH the runtime starts with, or grant the program the script runs by its path instead of '${name}'`
  }
  return undefined
}
