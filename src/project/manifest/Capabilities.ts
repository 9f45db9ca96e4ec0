/**
 * The `capabilities:` block of spec §1.5, read the same way capsule-wide and on an artifact entry.
 * `capabilitiesSpec` is the raw shape; `lowerCapabilities` applies the reference's parse-time
 * rules (E-MAN-003, worded as `invalid capability config for '<field>'`); `checkGrantShapes` adds
 * the launch-time checks this runtime makes at parse instead (E-CAP-001 empty allow entry,
 * E-CAP-002 scope). Network allow entries are kept as written; `NetworkPolicy.ts` parses rules.
 */
import { Schema } from "effect"
import {
  containmentFloorUnmet,
  invalidCapability,
  invalidFilesystemScope,
  invalidNetworkAllowEntry,
  invalidStateStore,
  isPathSegment,
  stagedRuntimeNeedsSealed
} from "./ManifestError.js"
import { block, blockItem, type Decoded, list, optBool, optString, optUint, refuse, string } from "./YamlReader.js"

/** `capabilities.shell.max_output_bytes` when the manifest does not say: most output one command may write. */
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024

const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })
const Strings = Schema.Array(Schema.String)

export const ContainmentClass = Schema.Literal("advisory", "scoped", "sealed")
export type ContainmentClass = typeof ContainmentClass.Type

export const NetworkCapabilities = Schema.Struct({ allow: Strings, unixSockets: Schema.Boolean })
export const PeerFetchCapabilities = Schema.Struct({ allow: Strings })
export const FilesystemCapabilities = Schema.Struct({
  scope: exact(Schema.String),
  workdirExec: Schema.Boolean,
  readOnly: Strings
})
export const InterpreterRuntimeGrant = Schema.Struct({
  binary: Schema.String,
  dirs: Schema.Array(Schema.Struct({ path: Schema.String, listDir: Schema.Boolean }))
})
export const StagedRuntimeGrant = Schema.Struct({ binary: Schema.String, sourcePath: Schema.String, pin: Schema.String })
export const ShellCapabilities = Schema.Struct({
  allow: Strings,
  stripEnv: Strings,
  baselineEnv: Strings,
  interpreterRuntime: Schema.Array(InterpreterRuntimeGrant),
  stagedRuntime: Schema.Array(StagedRuntimeGrant),
  /** Absent: the runtime's default (../ShellOutput.ts). */
  maxOutputBytes: exact(Schema.Number)
})
export const AllowList = Schema.Struct({ allow: Strings })

/** WASM guest limits, defaults applied; `hookDeadlineSeconds` is 30 unless the block says otherwise. */
export const ResourceLimits = Schema.Struct({
  memoryBytes: Schema.Number,
  tableElements: Schema.Number,
  instances: Schema.Number,
  deadlineSeconds: Schema.Number,
  hookDeadlineSeconds: Schema.Number
})
export type ResourceLimits = typeof ResourceLimits.Type

export const RESOURCE_FIELDS = [
  "max_processes",
  "max_open_files",
  "max_file_size_bytes",
  "cpu_seconds",
  "memory_bytes",
  "tmp_bytes",
  "cgroup_memory_bytes",
  "cgroup_pids_max",
  "cgroup_cpu_percent",
  "cgroup_io_bytes_per_sec",
  "workdir_max_bytes"
] as const
export type ResourceField = (typeof RESOURCE_FIELDS)[number]

/** Subprocess limits exactly as declared (the runtime owns the §5.2 defaults). */
export const ResourceCapabilities = Schema.partialWith(
  Schema.Record({ key: Schema.Literal(...RESOURCE_FIELDS), value: Schema.Number }),
  { exact: true }
)
export type ResourceCapabilities = typeof ResourceCapabilities.Type

export const Capabilities = Schema.Struct({
  network: exact(NetworkCapabilities),
  peerFetch: exact(PeerFetchCapabilities),
  filesystem: exact(FilesystemCapabilities),
  shell: exact(ShellCapabilities),
  spawn: exact(AllowList),
  env: exact(AllowList),
  limits: exact(ResourceLimits),
  resources: exact(ResourceCapabilities),
  state: exact(Schema.Struct({ store: exact(Schema.String) })),
  taskIo: exact(Schema.Struct({ read: Schema.Boolean })),
  conversation: exact(Schema.Struct({ read: Schema.Boolean })),
  plan: exact(Schema.Struct({ submit: Schema.Boolean })),
  containment: exact(ContainmentClass)
})
export type Capabilities = typeof Capabilities.Type

export const DEFAULT_LIMITS: ResourceLimits = {
  memoryBytes: 536870912,
  tableElements: 100000,
  instances: 1000,
  deadlineSeconds: 600,
  hookDeadlineSeconds: 30
}

/** The limits a guest runs under: the declared block with defaults, or all defaults. */
export const effectiveLimits = (capabilities: Capabilities | undefined): ResourceLimits =>
  capabilities?.limits ?? DEFAULT_LIMITS

const strings = list(string)
const allowSpec = { allow: strings }
const readSpec = { read: optBool }
const u64 = optUint("u64")

export const capabilitiesSpec = {
  network: block({ allow: strings, unix_sockets: optBool }),
  peer_fetch: block(allowSpec),
  filesystem: block({ scope: optString, workdir_exec: optBool, read_only: strings }),
  shell: block({
    allow: strings,
    strip_env: strings,
    baseline_env: strings,
    interpreter_runtime: list(blockItem({ binary: optString, dirs: list(blockItem({ path: optString, list_dir: optBool })) })),
    staged_runtime: list(blockItem({ binary: optString, source_path: optString, pin: optString })),
    max_output_bytes: u64
  }),
  spawn: block(allowSpec),
  env: block(allowSpec),
  limits: block({
    memory_bytes: optUint("usize"),
    table_elements: optUint("usize"),
    instances: optUint("usize"),
    deadline_seconds: u64
  }),
  resources: block(Object.fromEntries(RESOURCE_FIELDS.map((field) => [field, field === "cgroup_cpu_percent" ? optUint("u32") : u64])) as {
    readonly [K in ResourceField]: typeof u64
  }),
  state: block({ store: optString }),
  task_io: block(readSpec),
  conversation: block(readSpec),
  plan: block({ submit: optBool }),
  containment: optString
}
export type RawCapabilities = Decoded<typeof capabilitiesSpec>
type RawShell = NonNullable<RawCapabilities["shell"]>

const PEER_FETCH_FORM = "must be a non-empty list of network destinations"
const NEVER_INFERRED = "must be set explicitly to true or false — a capability is never inferred"

const nonBlank = (value: string | undefined) => (value !== undefined && value.trim() !== "" ? value : undefined)

/** Shape-only check of a peer destination: `http(s)://host[:port]` or a bare `host[:port]`. */
const peerDestinationProblem = (entry: string): string | undefined => {
  const trimmed = entry.trim()
  if (trimmed === "") return `'${entry}' is empty; ${PEER_FETCH_FORM}`
  if (trimmed.includes("://")) {
    let url: URL
    try {
      url = new URL(trimmed)
    } catch {
      return `'${entry}' is not a valid URL (invalid URL); ${PEER_FETCH_FORM}`
    }
    const scheme = url.protocol.replace(/:$/, "").toLowerCase()
    if (scheme !== "http" && scheme !== "https") {
      return `'${entry}' has unsupported scheme '${scheme}' (expected http or https); ${PEER_FETCH_FORM}`
    }
    if (url.hostname === "") return `'${entry}' names no host; ${PEER_FETCH_FORM}`
    if (url.search !== "" || url.hash !== "" || !["", "/"].includes(url.pathname)) {
      return `'${entry}' must not include a path, query or fragment; ${PEER_FETCH_FORM}`
    }
    return undefined
  }
  if (trimmed.includes("/") || trimmed.split(/\s+/).length !== 1) return `'${entry}' is not a host[:port]; ${PEER_FETCH_FORM}`
  const colon = trimmed.lastIndexOf(":")
  if (colon >= 0 && !trimmed.slice(0, colon).endsWith("]")) {
    const port = trimmed.slice(colon + 1)
    if (colon === 0) return `'${entry}' names no host; ${PEER_FETCH_FORM}`
    if (!/^[0-9]+$/.test(port) || Number(port) > 65535) return `'${entry}' has an unparseable port '${port}'; ${PEER_FETCH_FORM}`
  }
  return undefined
}

const lowerShell = (raw: RawShell): typeof ShellCapabilities.Type => {
  const allow = raw.allow ?? []
  if (allow.length === 0) refuse(invalidCapability("capabilities.shell.allow", "must contain at least one binary"))
  const interpreterRuntime = (raw.interpreter_runtime ?? []).map((grant, index) => {
    const base = `capabilities.shell.interpreter_runtime[${index}]`
    const binary = nonBlank(grant.binary) ?? refuse(invalidCapability(`${base}.binary`, "must name a binary"))
    if (!allow.includes(binary)) {
      refuse(invalidCapability(`${base}.binary`, `'${binary}' is not in capabilities.shell.allow — interpreter_runtime can only narrow filesystem access for an already-allowlisted binary, never grant exec`))
    }
    const dirs = grant.dirs ?? []
    if (dirs.length === 0) refuse(invalidCapability(`${base}.dirs`, "must name at least one directory"))
    return {
      binary,
      dirs: dirs.map((dir, dirIndex) => {
        const field = `${base}.dirs[${dirIndex}]`
        const path = nonBlank(dir.path) ?? refuse(invalidCapability(`${field}.path`, "must name a host directory"))
        if (!path.startsWith("/")) {
          refuse(invalidCapability(`${field}.path`, `'${path}' must be an absolute host path (start with '/') — these are filesystem paths outside the workdir`))
        }
        const listDir = dir.list_dir ??
          refuse(invalidCapability(`${field}.list_dir`, `'${path}' must set list_dir explicitly to true or false — enumerability is never inferred`))
        return { path, listDir }
      })
    }
  })
  const stagedRuntime = (raw.staged_runtime ?? []).map((grant, index) => {
    const base = `capabilities.shell.staged_runtime[${index}]`
    const binary = nonBlank(grant.binary) ?? refuse(invalidCapability(`${base}.binary`, "must name a binary"))
    if (!allow.includes(binary)) {
      refuse(invalidCapability(`${base}.binary`, `'${binary}' is not in capabilities.shell.allow — staged_runtime can only stage the runtime tree behind an already-allowlisted binary, never grant exec`))
    }
    if (interpreterRuntime.some((other) => other.binary === binary)) {
      refuse(invalidCapability(`${base}.binary`, `'${binary}' also has a capabilities.shell.interpreter_runtime grant — the two are mutually exclusive per binary: staged_runtime bind-mounts the runtime tree into the capsule's own root, which is what makes widening the capsule's host filesystem scope unnecessary rather than something to add to it. Remove the interpreter_runtime grant for '${binary}'`))
    }
    const sourcePath = nonBlank(grant.source_path) ??
      refuse(invalidCapability(`${base}.source_path`, "must name the host directory holding the pinned runtime tree"))
    if (!sourcePath.startsWith("/")) {
      refuse(invalidCapability(`${base}.source_path`, `'${sourcePath}' must be an absolute host path (start with '/') — staged-runtime sources are host filesystem paths outside the workdir`))
    }
    const pin = nonBlank(grant.pin?.trim()) ??
      refuse(invalidCapability(`${base}.pin`, `'${sourcePath}' must declare a non-empty pin identifying which build this tree is — it is never inferred, because it is the value a human compares across two hosts to confirm the same runtime shipped to both`))
    return { binary, sourcePath, pin }
  })
  const maxOutputBytes = positive("capabilities.shell.max_output_bytes", raw.max_output_bytes)
  return {
    allow,
    stripEnv: raw.strip_env ?? [],
    baselineEnv: raw.baseline_env ?? [],
    interpreterRuntime,
    stagedRuntime,
    ...(maxOutputBytes === undefined ? {} : { maxOutputBytes })
  }
}

const positive = (field: string, value: number | undefined): number | undefined => {
  if (value === 0) refuse(invalidCapability(field, "must be greater than zero"))
  return value
}

/** The reference's `parse_capabilities`: every parse-time rule, in its order. */
export const lowerCapabilities = (raw: RawCapabilities): Capabilities => {
  const out: { -readonly [K in keyof Capabilities]: Capabilities[K] } = {}
  if (raw.network) out.network = { allow: raw.network.allow ?? [], unixSockets: raw.network.unix_sockets ?? false }
  if (raw.peer_fetch) {
    const allow = raw.peer_fetch.allow ?? []
    if (allow.length === 0) refuse(invalidCapability("capabilities.peer_fetch.allow", PEER_FETCH_FORM))
    for (const entry of allow) {
      const problem = peerDestinationProblem(entry)
      if (problem !== undefined) refuse(invalidCapability("capabilities.peer_fetch.allow", problem))
    }
    out.peerFetch = { allow }
  }
  if (raw.filesystem) {
    const scope = nonBlank(raw.filesystem.scope)?.trim()
    out.filesystem = {
      ...(scope === undefined ? {} : { scope }),
      workdirExec: raw.filesystem.workdir_exec ?? false,
      readOnly: (raw.filesystem.read_only ?? []).map((entry) => entry.trim()).filter((entry) => entry !== "")
    }
  }
  if (raw.shell) out.shell = lowerShell(raw.shell)
  if (raw.spawn) out.spawn = { allow: raw.spawn.allow ?? [] }
  if (raw.env) out.env = { allow: raw.env.allow ?? [] }
  if (raw.limits) {
    const limits = raw.limits
    const deadline = positive("capabilities.limits.deadline_seconds", limits.deadline_seconds)
    out.limits = {
      memoryBytes: positive("capabilities.limits.memory_bytes", limits.memory_bytes) ?? DEFAULT_LIMITS.memoryBytes,
      tableElements: positive("capabilities.limits.table_elements", limits.table_elements) ?? DEFAULT_LIMITS.tableElements,
      instances: positive("capabilities.limits.instances", limits.instances) ?? DEFAULT_LIMITS.instances,
      deadlineSeconds: deadline ?? DEFAULT_LIMITS.deadlineSeconds,
      hookDeadlineSeconds: deadline ?? DEFAULT_LIMITS.hookDeadlineSeconds
    }
  }
  if (raw.resources) {
    const resources: { [K in ResourceField]?: number } = {}
    for (const field of RESOURCE_FIELDS) {
      const value = positive(`capabilities.resources.${field}`, raw.resources[field])
      if (value !== undefined) resources[field] = value
    }
    out.resources = resources
  }
  if (raw.state) {
    const store = raw.state.store?.trim()
    if (store !== undefined && !isPathSegment(store)) refuse(invalidStateStore(store))
    out.state = store === undefined ? {} : { store }
  }
  if (raw.task_io) {
    out.taskIo = { read: raw.task_io.read ?? refuse(invalidCapability("capabilities.task_io.read", NEVER_INFERRED)) }
  }
  if (raw.conversation) {
    out.conversation = { read: raw.conversation.read ?? refuse(invalidCapability("capabilities.conversation.read", NEVER_INFERRED)) }
  }
  if (raw.plan) out.plan = { submit: raw.plan.submit ?? refuse(invalidCapability("capabilities.plan.submit", NEVER_INFERRED)) }
  const containment = raw.containment?.trim()
  if (containment !== undefined && containment !== "") {
    if (containment !== "advisory" && containment !== "scoped" && containment !== "sealed") {
      refuse(invalidCapability("capabilities.containment", `must be one of: advisory, scoped, sealed; got '${containment}'`))
    }
    out.containment = containment as ContainmentClass
  }
  return out
}

/** Why `scope` cannot name a directory inside the workdir, or `undefined` when it can. */
export const scopeProblem = (scope: string): string | undefined => {
  if (scope.startsWith("/")) return "scope must be relative to the workdir"
  let depth = 0
  for (const part of scope.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (depth === 0) return "scope cannot escape the workdir via '..'"
      depth -= 1
    } else {
      depth += 1
    }
  }
  return undefined
}

/**
 * The launch-time grant checks (E-CAP-001 empty allow entry, E-CAP-002 bad scope) and the
 * containment combinations no host can satisfy (E-CAP-003 executable workdir under a floor above
 * advisory, E-CAP-004 staged runtime without the sealed floor), made here so `validate` reports them.
 */
export const checkGrantShapes = (capabilities: Capabilities): void => {
  for (const entry of capabilities.network?.allow ?? []) {
    if (entry.trim() === "") refuse(invalidNetworkAllowEntry(entry, "entry must not be empty"))
  }
  const scope = capabilities.filesystem?.scope
  const problem = scope === undefined ? undefined : scopeProblem(scope)
  if (scope !== undefined && problem !== undefined) refuse(invalidFilesystemScope(scope, problem))
  const declared = capabilities.containment ?? "advisory"
  if (declared !== "advisory" && capabilities.filesystem?.workdirExec === true) {
    refuse(containmentFloorUnmet(declared, "capabilities.filesystem.workdir_exec: true makes the workdir executable, which caps containment at advisory on every host; remove workdir_exec or declare containment: advisory"))
  }
  const staged = capabilities.shell?.stagedRuntime[0]
  if (staged !== undefined && declared !== "sealed") refuse(stagedRuntimeNeedsSealed(staged.binary, declared))
}
