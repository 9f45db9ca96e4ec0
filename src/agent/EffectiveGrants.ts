/**
 * `session_start.effective_grants`: the explain-scope report of what this launch actually grants
 * (docs/trace.md, "effective_grants"), built from the prepared grants rather than the manifest
 * alone, so it shows narrowing (a tool's scope, its network subset, credential-pattern refusals).
 * Environment variables appear by name only: the trace must never carry their values, and under
 * `capture: meta` it is shared more widely than the host environment.
 */
import { realpathSync } from "node:fs"
import { basename, relative } from "node:path"
import { refusedAllowEntries } from "../sandbox/grants/EnvGrant.js"
import type { GuestGrant } from "../sandbox/GuestJob.js"
import { appliedContainment } from "../shell/containment/ShellContainment.js"
import { effectiveLimits } from "../project/manifest/Capabilities.js"
import type { NetworkRule } from "../project/NetworkPolicy.js"
import type { PreparedAgent } from "./AgentLaunch.js"

const ruleText = (rule: NetworkRule): string =>
  `${rule.scheme === undefined ? "" : `${rule.scheme}://`}${rule.host}${rule.port === undefined ? "" : `:${rule.port}`}`

const sorted = (names: Iterable<string>) => [...names].sort()

/** A guest's grant, paths relative to the accessible workdir (`.` = all of it): no host paths. */
const guestReport = (workdir: string, role: "driver" | "tool", grant: GuestGrant) => ({
  role,
  // The preopen is a path without links (./Grants.ts), so the workdir is compared resolved too.
  preopen: grant.preopen === undefined ? null : relative(realpathSync(workdir), grant.preopen) || ".",
  // The store's name only: the state directory is under the murmur home, a host path.
  ...(grant.state === undefined ? {} : { state: basename(grant.state) }),
  env: sorted(Object.keys(grant.env)),
  network: grant.network.map(ruleText),
  inference_gateway: grant.gateway !== undefined
})

export const effectiveGrants = (prepared: PreparedAgent): Readonly<Record<string, unknown>> => {
  const caps = prepared.project.manifest.capabilities
  const limits = effectiveLimits(caps)
  const refused = refusedAllowEntries(caps.env?.allow ?? [], prepared.shell.stripPatterns).map((entry) => entry.name)
  const guests: Record<string, ReturnType<typeof guestReport>> = {
    [prepared.driver.name]: guestReport(prepared.workdir, "driver", prepared.driver.spec.grant)
  }
  for (const [name, spec] of Object.entries(prepared.tools)) guests[name] = guestReport(prepared.workdir, "tool", spec.grant)
  return {
    // What each shell command really runs under, mechanism by mechanism (docs/security.md).
    containment: {
      declared: prepared.containment.declared,
      achieved: prepared.containment.achieved,
      shell: prepared.shell.allow.length === 0 ? [] : appliedContainment(prepared.shell.containment)
    },
    filesystem: { preopen: ".", read_only: caps.filesystem?.readOnly ?? [], workdir_exec: caps.filesystem?.workdirExec ?? false },
    env_allow: sorted((caps.env?.allow ?? []).filter((name) => !refused.includes(name))),
    env_refused: sorted(refused),
    env_runtime: sorted(Object.keys(prepared.runtimeVars)),
    network_allow: caps.network?.allow ?? [],
    shell_allow: prepared.shell.allow,
    shell_baseline_env: prepared.shell.baselineEnv,
    shell_strip_env: prepared.shell.stripPatterns,
    limits: {
      memory_bytes: limits.memoryBytes,
      table_elements: limits.tableElements,
      instances: limits.instances,
      deadline_seconds: limits.deadlineSeconds,
      hook_deadline_seconds: limits.hookDeadlineSeconds,
      resources: caps.resources ?? {}
    },
    guests
  }
}
