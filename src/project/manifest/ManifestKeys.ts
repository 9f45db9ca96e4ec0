/**
 * Every key of the 0.3 manifest and what this runtime does with it: `enforced` (with where), or
 * `warned` (`W-RUN-001` when declared capsule-wide, `W-SEC-008` on an artifact entry where the
 * reference leaves it inert), or `refused`. test/project/ManifestKeys.test.ts walks the reader's
 * whole key tree against this table, so a key added to a reader without a line here fails the
 * suite: nothing is accepted silently.
 */
export type Disposition =
  | { readonly kind: "enforced"; readonly by: string }
  | { readonly kind: "warned"; readonly consequence: string }
  | { readonly kind: "refused"; readonly by: string }

const enforced = (by: string): Disposition => ({ kind: "enforced", by })
const warned = (consequence: string): Disposition => ({ kind: "warned", consequence })
const refused = (by: string): Disposition => ({ kind: "refused", by })

const CGROUPS = "cgroup limits are not applied by this runtime (the launch says what the host's cgroup v2 probe found: src/shell/containment/CgroupProbe.ts)"
const INERT_ON_ENTRY = "is inert on an artifact entry: the grant applies capsule-wide only"

/** Keys of the `capabilities:` block on an artifact entry, relative to `artifacts[].capabilities`. */
const ENTRY_CAPABILITIES: Readonly<Record<string, Disposition>> = {
  "": enforced("src/sandbox/grants/Grants.ts (toolGrant)"),
  "network": enforced("src/sandbox/grants/Grants.ts (toolGrant narrows the ceiling)"),
  "network.allow[]": enforced("src/project/NetworkPolicy.ts (narrow)"),
  "network.unix_sockets": warned(INERT_ON_ENTRY),
  "peer_fetch": warned(INERT_ON_ENTRY),
  "peer_fetch.allow[]": warned(INERT_ON_ENTRY),
  "filesystem": enforced("src/sandbox/grants/Grants.ts (toolGrant)"),
  "filesystem.scope": enforced("src/sandbox/grants/Grants.ts (the entry's preopen)"),
  "filesystem.workdir_exec": warned(INERT_ON_ENTRY),
  "filesystem.read_only[]": warned(INERT_ON_ENTRY),
  "shell": warned(INERT_ON_ENTRY),
  "spawn": warned(INERT_ON_ENTRY),
  "env": warned(INERT_ON_ENTRY),
  "limits": warned(INERT_ON_ENTRY),
  "resources": warned(INERT_ON_ENTRY),
  "state": enforced("src/sandbox/grants/StateDir.ts (a second preopen, state, at $MURMUR_HOME/state/<store>/)"),
  "state.store": enforced("src/sandbox/grants/StateDir.ts (one path segment, E-CAP-011; default the artifact's name)"),
  "task_io": enforced("src/hooks/HookEntry.ts (a hook's murmur:task-io/read gate; refused on other entries, ArtifactEntry.ts)"),
  "task_io.read": enforced("src/sandbox/host/HookImports.ts (without it every call answers not-granted)"),
  "conversation": enforced("src/hooks/HookEntry.ts (a hook's murmur:conversation/read gate; refused on other entries, ArtifactEntry.ts)"),
  "conversation.read": enforced("src/sandbox/host/HookImports.ts (without it every call answers not-granted)"),
  "plan": warned(INERT_ON_ENTRY),
  "containment": warned(INERT_ON_ENTRY)
}

/** Capsule-wide keys, relative to `capabilities`. */
const CAPABILITIES: Readonly<Record<string, Disposition>> = {
  "": enforced("src/sandbox/grants/Grants.ts"),
  "network": enforced("src/sandbox/grants/Grants.ts"),
  "network.allow[]": enforced("src/sandbox/host/WasiImports.ts (wasi:http allowlist), src/script/PeerMessage.ts, src/shell/egress/ (sealed shell egress)"),
  "network.unix_sockets": enforced("src/shell/containment (seccomp refuses AF_UNIX unless true)"),
  "peer_fetch": enforced("src/planes/PeerTools.ts (fetch-peer-file is offered)"),
  "peer_fetch.allow[]": enforced("src/planes/PeerTools.ts (a peer outside it is refused before any connection)"),
  "filesystem": enforced("src/sandbox/grants/Grants.ts"),
  "filesystem.scope": enforced("src/project/manifest/Capabilities.ts (validated and reported; capsule-wide it narrows no preopen, as in the reference)"),
  "filesystem.workdir_exec": enforced("src/shell/containment (exec in the workdir; caps containment at advisory)"),
  "filesystem.read_only[]": enforced("src/sandbox/host (guest filesystem), src/shell/containment (read-only binds for the shell)"),
  "shell": enforced("src/shell/Shell.ts"),
  "shell.allow[]": enforced("src/shell/Shell.ts"),
  "shell.strip_env[]": enforced("src/sandbox/grants/EnvGrant.ts"),
  "shell.baseline_env[]": enforced("src/shell/ShellGrant.ts"),
  "shell.interpreter_runtime[]": enforced("src/shell/containment (read-only dirs for that binary)"),
  "shell.interpreter_runtime[].binary": enforced("src/shell/containment"),
  "shell.interpreter_runtime[].dirs[]": enforced("src/shell/containment"),
  "shell.interpreter_runtime[].dirs[].path": enforced("src/shell/containment"),
  "shell.interpreter_runtime[].dirs[].list_dir": enforced("src/shell/containment"),
  "shell.staged_runtime[]": enforced("src/shell/containment (bound into the sealed root; E-CAP-004 without the sealed floor)"),
  "shell.staged_runtime[].binary": enforced("src/shell/containment"),
  "shell.staged_runtime[].source_path": enforced("src/shell/containment"),
  "shell.staged_runtime[].pin": enforced("src/project/manifest/Capabilities.ts (required, non-empty)"),
  "shell.max_output_bytes": enforced("src/shell/ShellOutput.ts (the command is killed past it; its log holds no more)"),
  "spawn": enforced("src/delegation/DelegationLauncher.ts (delegate-task)"),
  "spawn.allow[]": enforced("src/delegation/DelegationLauncher.ts (only these names start; each resolves to a capsule directory)"),
  "env": enforced("src/sandbox/grants/EnvGrant.ts"),
  "env.allow[]": enforced("src/sandbox/grants/EnvGrant.ts"),
  "limits": enforced("src/sandbox/wasm/MemoryCap.ts, src/sandbox/Sandbox.ts"),
  "limits.memory_bytes": enforced("src/sandbox/wasm/MemoryCap.ts"),
  "limits.table_elements": enforced("src/sandbox/wasm/MemoryCap.ts"),
  "limits.instances": enforced("src/sandbox/Sandbox.ts"),
  "limits.deadline_seconds": enforced("src/sandbox/Sandbox.ts"),
  "resources": enforced("src/shell/containment (rlimits under the sealed tier; a launch warning without it)"),
  "resources.max_processes": enforced("src/shell/containment (RLIMIT_NPROC)"),
  "resources.max_open_files": enforced("src/shell/containment (RLIMIT_NOFILE)"),
  "resources.max_file_size_bytes": enforced("src/shell/containment (RLIMIT_FSIZE)"),
  "resources.cpu_seconds": enforced("src/shell/containment (RLIMIT_CPU)"),
  "resources.memory_bytes": enforced("src/shell/containment (RLIMIT_AS)"),
  "resources.tmp_bytes": enforced("src/shell/containment (tmpfs size of the sealed /tmp and /dev/shm)"),
  "resources.cgroup_memory_bytes": warned(CGROUPS),
  "resources.cgroup_pids_max": warned(CGROUPS),
  "resources.cgroup_cpu_percent": warned(CGROUPS),
  "resources.cgroup_io_bytes_per_sec": warned(CGROUPS),
  "resources.workdir_max_bytes": enforced("src/shell/WorkdirQuota.ts (agent capsules: walked every 10 s and before each command; past it the session ends, E-RUN-013; a script capsule warns)"),
  "state": warned("capsule-wide it is inert (the reference's W-SEC-014): a state store is granted on an artifact entry"),
  "state.store": warned("capsule-wide it is inert (the reference's W-SEC-014); this runtime gives no state preopen"),
  "task_io": refused("src/project/Manifest.ts (per-hook only)"),
  "task_io.read": refused("src/project/Manifest.ts (per-hook only)"),
  "conversation": warned("capsule-wide it is inert: conversation.read is granted on a hook's entry"),
  "conversation.read": warned("capsule-wide it is inert: conversation.read is granted on a hook's entry"),
  "plan": enforced("src/agent/SubmitPlan.ts"),
  "plan.submit": enforced("src/agent/SubmitPlan.ts (true offers the runtime tool submit-plan)"),
  "containment": enforced("src/shell/containment/ContainmentDecision.ts (E-CAP-003)")
}

const prefixed = (prefix: string, table: Readonly<Record<string, Disposition>>) =>
  Object.fromEntries(Object.entries(table).map(([key, value]) => [key === "" ? prefix : `${prefix}.${key}`, value]))

export const MANIFEST_KEYS: Readonly<Record<string, Disposition>> = {
  "name": enforced("src/project/Manifest.ts"),
  "version": enforced("src/project/Manifest.ts"),
  "mur_version": enforced("src/project/manifest/UnknownKeys.ts (W-SEC-019 on a mismatch)"),
  "config": refused("src/project/Manifest.ts (per artifact only)"),
  "artifacts[]": enforced("src/project/CapsuleProject.ts"),
  "artifacts[].name": enforced("src/project/manifest/ArtifactEntry.ts"),
  "artifacts[].version": enforced("src/project/Lockfile.ts"),
  "artifacts[].runtime": enforced("src/project/manifest/ArtifactEntry.ts (hooks run in src/hooks/, a script capsule's warn: not run)"),
  "artifacts[].source": enforced("src/project/CapsuleProject.ts"),
  "artifacts[].local_source": enforced("src/project/manifest/ArtifactEntry.ts"),
  "artifacts[].prompt_payload": enforced("src/project/manifest/Inference.ts"),
  "artifacts[].on_overflow": enforced("src/hooks/Hooks.ts (an async hook's queue when full); refused on other entries, E-MAN-003"),
  "artifacts[].config": enforced("src/sandbox/grants/EnvGrant.ts (MURMUR_ARTIFACT_CONFIG)"),
  ...prefixed("artifacts[].capabilities", ENTRY_CAPABILITIES),
  ...prefixed("capabilities", CAPABILITIES),
  "inference": enforced("src/agent/AgentLaunch.ts"),
  "inference.transport": enforced("src/project/manifest/NotActedOn.ts (process: warned, cannot run here)"),
  "inference.endpoint": enforced("src/agent/DriverAccess.ts"),
  "inference.model": enforced("src/agent/AgentLaunch.ts"),
  "inference.api_key": enforced("src/agent/DriverAccess.ts"),
  "inference.command": refused("src/project/manifest/Inference.ts (process transport only; that transport warns)"),
  "inference.system_prompt": enforced("src/agent/AgentLaunch.ts"),
  "inference.system_prompt_file": enforced("src/agent/AgentLaunch.ts"),
  "inference.system_prompt_artifact": enforced("src/agent/AgentLaunch.ts"),
  "inference.driver": enforced("src/agent/AgentLaunch.ts"),
  "inference.driver.artifact": enforced("src/agent/AgentLaunch.ts"),
  "inference.driver.config": enforced("src/agent/AgentLaunch.ts (MURMUR_INFERENCE_DRIVER_CONFIG)"),
  "inference.provider": enforced("src/project/manifest/Inference.ts (alias of driver)"),
  "inference.provider.artifact": enforced("src/project/manifest/Inference.ts (alias of driver)"),
  "inference.provider.config": enforced("src/project/manifest/Inference.ts (alias of driver)"),
  "inference.compaction": enforced("src/agent/Compaction.ts (with context.max_tokens: the history compacted before a request past the threshold)"),
  "inference.compaction.threshold": enforced("src/agent/Compaction.ts"),
  "inference.compaction.model": enforced("src/agent/Compaction.ts (the built-in compactor's model; the on-compaction hook's event)"),
  "inference.compaction.system_prompt": enforced("src/agent/Compaction.ts"),
  "inference.compaction.system_prompt_file": enforced("src/agent/AgentLaunch.ts (read at launch, E-RUN-009)"),
  "inference.compaction.dump_summaries": enforced("src/agent/Compaction.ts (out/compaction-summaries.jsonl)"),
  "inference.max_turns": enforced("src/agent/AgentLoop.ts"),
  "inference.max_task_reopens": refused("src/project/manifest/Inference.ts (moved to lifecycle.max_task_reopens in 0.3)"),
  "inference.max_tokens": enforced("src/agent/AgentLoop.ts (the driver request's max_tokens)"),
  "inference.max_session_tokens": enforced("src/agent/SpendCeiling.ts (checked before each provider call; the task ends spend_ceiling_reached)"),
  "context": enforced("src/project/manifest/SessionBlocks.ts"),
  "context.max_tokens": enforced("src/agent/Compaction.ts (the window compaction keeps requests within)"),
  "context.record": enforced("src/agent/Conversations.ts (durable conversation.jsonl of a threaded capsule)"),
  "context.record_store": enforced("src/layers/AgentSession.ts (the store directory under the murmur home; one path segment, E-CAP-011)"),
  "context.record_max_bytes": enforced("src/agent/Conversations.ts (a thread's record trimmed from the front past it)"),
  "context.record_max_turns": enforced("src/agent/Conversations.ts (a thread's record trimmed from the front past it)"),
  "context.seed_budget": enforced("src/agent/TaskHooks.ts (what on-task-start hooks seed is cut past it)"),
  "context.seed_overflow_margin": enforced("src/agent/TaskHooks.ts"),
  "context.retain": enforced("src/agent/Conversations.ts (max_messages, max_age trim the reloaded history)"),
  "observability": enforced("src/project/manifest/SessionBlocks.ts"),
  "observability.otel_endpoint": enforced("src/layers/Telemetry.ts (spans over OTLP/HTTP)"),
  "observability.eval": enforced("src/agent/EvalScores.ts (a line of <records>/eval.jsonl per task)"),
  "observability.eval.dataset_id": enforced("src/agent/EvalScores.ts (on each eval.jsonl line)"),
  "observability.eval.scorers[]": enforced("src/agent/EvalScores.ts (exit_ok, max_turns, max_tokens, tool_sequence; llm_judge through the capsule's driver)"),
  "trace": enforced("src/records/Trace.ts"),
  "trace.capture": enforced("src/records/Trace.ts"),
  "trace.include_tool_output": enforced("src/project/manifest/SessionBlocks.ts (retired alias of capture, warned)"),
  "trace.retain": enforced("src/records/TraceRetention.ts (older sessions' records deleted when a session starts)"),
  "network": enforced("src/project/manifest/SessionBlocks.ts"),
  "network.internal_port": enforced("src/cli/DoorPort.ts (serve and run bind it when --port is absent)"),
  "lifecycle": enforced("src/project/manifest/Lifecycle.ts"),
  "lifecycle.task_acceptance": enforced("src/services/TaskRegistry.ts"),
  "lifecycle.after_task": enforced("src/services/SessionLifecycle.ts"),
  "lifecycle.queue_depth": enforced("src/services/TaskRegistry.ts"),
  "lifecycle.input_timeout_secs": enforced("src/agent/AgentLoop.ts"),
  "lifecycle.conversation": enforced("src/agent/Conversations.ts (threaded: the context's earlier turns are reloaded)"),
  "lifecycle.max_task_reopens": enforced("src/agent/AgentLoop.ts (an on-task-end hook's reopen-task, within it and max_turns)"),
  "lifecycle.shell_grace_secs": enforced("src/shell/Shell.ts (detached work)"),
  "lifecycle.delegation_deadline_secs": enforced("src/delegation/DelegationLauncher.ts (the child is killed and reported terminated)"),
  "lifecycle.delegation_max_depth": enforced("src/delegation/DelegationLauncher.ts (delegate-task refused at the depth the spawner handle carries)"),
  "lifecycle.delegation_max_children": enforced("src/delegation/DelegationLauncher.ts (delegate-task refused while that many children run)"),
  "exports": enforced("src/project/manifest/Retention.ts"),
  "exports.files": enforced("src/planes/ExportPlanes.ts (the resource plane: GET /resources/files…)"),
  "exports.files.root": enforced("src/planes/ExportReader.ts (no link followed under it; E-CAP-007 in src/planes/PeerExport.ts)"),
  "exports.files.mode": enforced("src/planes/ExportPlanes.ts (read-only: GET only, 405 otherwise)"),
  "exports.files.max_bytes": enforced("src/planes/ExportReader.ts (too_large)"),
  "exports.peer_files": enforced("src/planes/ExportPlanes.ts (the peer plane, and share-file in src/planes/PeerTools.ts)"),
  "exports.peer_files.root": enforced("src/planes/ExportReader.ts (no link followed under it)"),
  "exports.peer_files.max_ttl": enforced("src/planes/PeerExport.ts (ceiling of every handle; E-CAP-008 under after_task: sleep)"),
  "exports.peer_files.max_bytes": enforced("src/planes/ExportReader.ts (too_large at redeem)")
}

/** The declared keys that earn a warning: a warned key whose parent is not itself warned (one line per block, not per field). */
export const warnedRoots = (): ReadonlyArray<readonly [string, string]> => {
  const out: Array<readonly [string, string]> = []
  for (const [path, disposition] of Object.entries(MANIFEST_KEYS)) {
    if (disposition.kind !== "warned") continue
    const parent = path.slice(0, Math.max(0, path.lastIndexOf(".")))
    if (MANIFEST_KEYS[parent]?.kind === "warned") continue
    out.push([path, disposition.consequence])
  }
  return out
}
