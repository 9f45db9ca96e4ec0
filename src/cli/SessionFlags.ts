/**
 * The flags every command that opens a session shares (`serve`, `run`): the door's address and
 * token, the workdir and how many old ones to keep, `--json`; and `serve`'s door and task limits.
 */
import { Options } from "@effect/cli"
import { Config } from "effect"
import { defaultKeepSessions } from "../layers/Directory.js"
import { choiceFlag, directoryFlag, integerFlag, textFlag } from "./Flags.js"

export { authToken } from "./AuthToken.js"
export { launching, reportLaunchFailure } from "./LaunchFailure.js"

export const host = textFlag("host", "HOST", "Address to bind; without a token keep it on loopback (W-SEC-032) (default 127.0.0.1)").pipe(Options.withDefault("127.0.0.1"))
export const port = integerFlag("port", {
  min: 0,
  max: 65535,
  placeholder: "PORT",
  description: "Port to bind (0: any free port; default the manifest's network.internal_port, else 0)"
}).pipe(Options.optional)
export const grpcPort = integerFlag("grpc-port", {
  min: 0,
  max: 65535,
  placeholder: "PORT",
  description: "Also serve A2A 1.0 over gRPC on this port of --host (0: any free port); the agent card lists it"
}).pipe(Options.optional)
export const pushAllow = textFlag(
  "push-allow",
  "HOST",
  "A push-notification webhook host allowed even at a loopback or private address (a name, an IP, *.suffix or *; repeatable)"
).pipe(Options.repeated)
export const cardSigningKey = textFlag("card-signing-key", "PATH", "PEM private key (mode 0600) that signs the A2A 1.0 agent cards (EC P-256/384/521, Ed25519 or RSA)").pipe(
  Options.optional
)
export const cardSigningKid = textFlag("card-signing-kid", "KID", "The signatures' key id (default: the key's SHA-256 fingerprint)").pipe(Options.optional)
export const workdir = directoryFlag("workdir", "Workdir of a capsule from a directory (default <dir>/workdir/<session>)").pipe(Options.optional)
export const keepSessions = integerFlag("keep-sessions", {
  min: 1,
  placeholder: "N",
  description: `Session workdirs kept under <dir>/workdir/ without --workdir, this one included; older ones are deleted at start (default ${defaultKeepSessions})`
}).pipe(Options.withDefault(defaultKeepSessions))
export const store = textFlag(
  "store",
  "STORE",
  "Where the session's tasks and frames are kept: sqlite:<path>, postgres://…, or memory (nothing kept). Default: a SQLite file per capsule directory under $MURMUR_HOME/runtime/ (~/.murmur without MURMUR_HOME); also read from MURMUR_STORE"
).pipe(Options.withFallbackConfig(Config.string("MURMUR_STORE")), Options.optional)
export const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON line when listening"))

export const tokensFile = textFlag("auth-tokens-file", "PATH", "Named door tokens with scopes (mode 0600; docs/protocol.md, Authentication), re-read on SIGHUP").pipe(
  Options.optional
)
export const acceptance = choiceFlag("task-acceptance", ["none", "single", "queue"] as const, "none: no task starts; single: one task per session; queue: tasks wait in lanes (default queue)").pipe(
  Options.withDefault("queue" as const)
)
const count = (name: string, min: number, placeholder: string, description: string, fallback: number) =>
  integerFlag(name, { min, placeholder, description }).pipe(Options.withDefault(fallback))

/** `serve`'s door and task limits. */
export const limits = {
  queueDepth: count("queue-depth", 0, "N", "Most tasks waiting to start (default 32)", 32),
  maxActive: count("max-active", 1, "N", "Most tasks running at once; a script capsule runs one (default 4)", 4),
  maxBody: count("max-body-bytes", 1, "BYTES", "Largest request body (default 1048576)", 1024 * 1024),
  retain: count("retain-tasks", 0, "N", "Finished tasks kept for tasks/get (default 1000)", 1000),
  retainBytes: count(
    "retain-bytes",
    0,
    "BYTES",
    "Bytes of finished tasks kept for tasks/get (their text); the oldest are forgotten first (default 268435456)",
    256 * 1024 * 1024
  ),
  retainDays: count("retain-days", 1, "DAYS", "Finished tasks older than this are forgotten, from memory and from the store (default 30)", 30),
  replayBytes: count("replay-bytes", 0, "BYTES", "Bytes of stream frames kept for Last-Event-ID replay, besides the 512-frame count (default 16777216)", 16 * 1024 * 1024),
  maxWatchers: count("max-watchers", 1, "N", "Most streams open at once (stream/watch, message/stream, tasks/resubscribe); more are refused (default 64)", 64),
  blockingTimeout: count("blocking-timeout", 1, "SECS", "Longest a blocking message/send waits; then it answers the task as it stands, saying why (default 20)", 20)
}
