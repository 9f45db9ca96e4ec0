/**
 * The `capabilities:` block as written in `murmur.yaml` (capsule-wide, and on an artifact entry
 * where it narrows the ceiling), with the help an editor shows. The reader is
 * `capabilitiesSpec` in ./Capabilities.ts; test/cli/ManifestSchema.test.ts holds the two to the
 * same key tree through ./ManifestKeys.ts.
 */
import { Schema } from "effect"
import { flag, oneOf, opt, section, strings, text, u32, u64 } from "./DocumentFields.js"
import { DEFAULT_MAX_OUTPUT_BYTES, RESOURCE_FIELDS } from "./Capabilities.js"

const RESOURCE_HELP: Readonly<Record<(typeof RESOURCE_FIELDS)[number], string>> = {
  max_processes: "Most processes a shell command may run (RLIMIT_NPROC, under the sealed tier).",
  max_open_files: "Most open files per shell process (RLIMIT_NOFILE).",
  max_file_size_bytes: "Largest file a shell process may write, in bytes (RLIMIT_FSIZE).",
  cpu_seconds: "CPU seconds per shell process (RLIMIT_CPU).",
  memory_bytes: "Address space per shell process, in bytes (RLIMIT_AS).",
  tmp_bytes: "Size of each of a sealed command's private /tmp and /dev/shm (tmpfs, in memory), in bytes.",
  cgroup_memory_bytes: "cgroup memory ceiling; not applied by this runtime (W-RUN-001).",
  cgroup_pids_max: "cgroup process ceiling; not applied by this runtime (W-RUN-001).",
  cgroup_cpu_percent: "cgroup CPU share in percent; not applied by this runtime (W-RUN-001).",
  cgroup_io_bytes_per_sec: "cgroup I/O ceiling; not applied by this runtime (W-RUN-001).",
  workdir_max_bytes: "Workdir size ceiling (default 10 GiB): an agent capsule's workdir is walked every 10 s and before each command; past it the session ends (E-RUN-013). Not watched for a script capsule (W-RUN-001)."
}

const resourceFields = Object.fromEntries(
  RESOURCE_FIELDS.map((field) => [field, (field === "cgroup_cpu_percent" ? u32 : u64)({ description: RESOURCE_HELP[field] })])
) as { readonly [K in (typeof RESOURCE_FIELDS)[number]]: ReturnType<typeof u64> }

const allowList = (description: string) => ({ allow: strings({ description }) })

export const CapabilitiesDocument = Schema.Struct({
  network: section({
    allow: strings({ description: "Destinations guests may reach over wasi:http and peer messages, and sealed shell commands through the runtime's egress proxy: `host`, `host:port`, `*.domain` or a URL origin. An empty entry is E-CAP-001.", default: [] }),
    unix_sockets: flag({ description: "Let shell commands open Unix sockets (the seccomp filter refuses AF_UNIX otherwise).", default: false })
  }, { description: "Outgoing network. Absent: no network at all." }),
  peer_fetch: section(allowList("Peers (`host[:port]` or `http(s)://host[:port]`) the fetch-peer-file tool may fetch from."), {
    description: "Offers the fetch-peer-file tool, limited to these peers."
  }),
  filesystem: section({
    scope: text({ description: "A relative directory inside the workdir; on an artifact entry it becomes that tool's preopen. Absolute or escaping paths are E-CAP-002." }),
    workdir_exec: flag({ description: "Let shell commands execute files from the workdir; caps containment at advisory (E-CAP-003 under a higher floor).", default: false }),
    read_only: strings({ description: "Workdir paths the guest and the shell may read but not write.", default: [] })
  }, { description: "The workdir the guests and shell see." }),
  shell: section({
    allow: strings({ description: "Binaries the agent's shell may run, by name (at least one)." }),
    strip_env: strings({ description: "Variables removed from the shell's environment.", default: [] }),
    baseline_env: strings({ description: "Host variables kept in the shell's baseline environment.", default: [] }),
    interpreter_runtime: opt(
      Schema.Array(Schema.Struct({
        binary: text({ description: "An allowed binary (from shell.allow) that needs extra directories." }),
        dirs: opt(
          Schema.Array(Schema.Struct({
            path: text({ description: "An absolute host directory it may read." }),
            list_dir: flag({ description: "Whether the directory may be listed (must be set explicitly)." })
          })),
          { description: "Host directories bound read-only for that binary." }
        )
      })),
      { description: "Read-only host directories an allowed interpreter needs (its standard library).", default: [] }
    ),
    staged_runtime: opt(
      Schema.Array(Schema.Struct({
        binary: text({ description: "The binary's name inside the sealed root." }),
        source_path: text({ description: "Where it is on the host." }),
        pin: text({ description: "Its expected digest (required, non-empty)." })
      })),
      { description: "Binaries bound into the sealed root; needs containment: sealed (E-CAP-004).", default: [] }
    ),
    max_output_bytes: u64({
      description: "Most output (stdout and stderr together) one shell command may write; past it the command is killed and the rest dropped. Bounds its log file too.",
      default: DEFAULT_MAX_OUTPUT_BYTES
    })
  }, { description: "The shell tool: which binaries the agent may run and with what environment." }),
  spawn: section(allowList("Capsule names the delegate-task tool may start (each resolves to a capsule directory)."), {
    description: "Offers the delegate-task tool: child capsules run as their own processes."
  }),
  env: section(allowList("Host environment variables passed to guests and the shell."), { description: "Environment variables granted." }),
  limits: section({
    memory_bytes: u64({ description: "Most linear memory a WebAssembly guest may grow to, in bytes.", default: 536870912 }),
    table_elements: u64({ description: "Most table elements per guest.", default: 100000 }),
    instances: u64({ description: "Most component instances per guest.", default: 1000 }),
    deadline_seconds: u64({ description: "Wall-clock seconds a guest call may run before it is stopped.", default: 600 })
  }, { description: "WebAssembly guest limits." }),
  resources: section(resourceFields, { description: "Limits on shell processes (rlimits under the sealed tier; a launch warning without it)." }),
  state: section({ store: text({ description: "Name of the state store: one path segment (E-CAP-011); default the artifact's name." }) }, {
    description: "On an artifact entry: a directory that outlives the session, $MURMUR_HOME/state/<store>/ (mode 0700), preopened for the artifact's guest as `state`. Capsule-wide it is inert (W-RUN-001)."
  }),
  task_io: section({ read: flag({ description: "Grant murmur:task-io/read." }) }, {
    description: "Hook-only grant: refused capsule-wide and on non-hook entries (E-MAN-003)."
  }),
  conversation: section({ read: flag({ description: "Grant murmur:conversation/read." }) }, {
    description: "Hook-only grant: refused capsule-wide and on non-hook entries (E-MAN-003)."
  }),
  plan: section({ submit: flag({ description: "Offer the submit-plan tool." }) }, {
    description: "The submit-plan runtime tool: a plan of tool calls, independent steps run in parallel (at most 4 at once, 32 steps)."
  }),
  containment: oneOf(["advisory", "scoped", "sealed"], {
    description: "The least containment the shell must get; a host that cannot provide it refuses to launch (E-CAP-003).",
    default: "advisory"
  })
})
