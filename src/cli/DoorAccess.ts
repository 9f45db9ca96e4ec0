/**
 * What `serve` and `run` say and do about who can reach their door: the reference's `W-SEC-032`
 * when the door is bound beyond loopback with no token, and SIGHUP re-reading
 * `--auth-tokens-file` (a refused file keeps the table in force, and says why).
 */
import { isIPv4 } from "node:net"
import { Console, Effect, Either } from "effect"
import { Door, SessionIdentity } from "../index.js"

/** Whether a bind address keeps the door on this host: 127.0.0.0/8, ::1 or localhost (as the reference's `is_loopback_bind`). */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.trim().replace(/^\[(.*)\]$/, "$1").toLowerCase()
  if (bare === "localhost" || bare === "::1" || bare === "0:0:0:0:0:0:0:1") return true
  return isIPv4(bare) && bare.startsWith("127.")
}

/** The `W-SEC-032` line for this session's door, when it is open and bound beyond loopback. */
export const publicDoorWarning = Effect.gen(function*() {
  const config = yield* Door.DoorConfig
  const identity = yield* SessionIdentity
  // A door's settings carry the table it was made with (Door.layer makes it once).
  const open = config.credentials?.open ?? config.authToken === undefined
  if (!open || isLoopbackHost(config.host)) return undefined
  const methods = [
    ...(identity.card.capabilities.streaming ? ["message/send", "message/stream"] : []),
    "stream/watch",
    "tasks/get",
    "tasks/cancel",
    "session/stop"
  ]
  const { tools, shell, network } = identity.capsule
  return `warning[W-SEC-032]: the door is bound to ${config.host} and has no token (--auth-token-file, --auth-tokens-file) — any caller that reaches it ` +
    `can call ${methods.join(", ")}, and the agent card publishes to any A2A client the session id, tools [${tools.join(", ")}], ` +
    `shell: ${shell}, network: ${network}`
})

/** Prints the `W-SEC-032` line, if any, on stderr. */
export const warnPublicDoor = Effect.flatMap(publicDoorWarning, (line) => line === undefined ? Effect.void : Console.error(line))

/**
 * While the scope lasts, SIGHUP re-reads the tokens file: one stderr line with the principals now
 * served, or the `E-RUN-040` refusal and that the previous table stays.
 */
export const reloadOnHangup = (credentials: Door.Credentials) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const reload = () => {
        const outcome = credentials.reload()
        const line = Either.isRight(outcome)
          ? `door tokens reloaded from ${credentials.tokensFile}: ${outcome.right.join(", ")}`
          : `warning[${outcome.left.code}]: ${outcome.left.message}; the tokens in force stay`
        Effect.runSync(Console.error(line))
      }
      process.on("SIGHUP", reload)
      return reload
    }),
    (reload) => Effect.sync(() => void process.off("SIGHUP", reload))
  )
