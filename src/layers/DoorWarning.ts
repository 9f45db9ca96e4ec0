/**
 * The reference's `W-SEC-032`: a door bound beyond loopback with no token, and what any caller
 * that reaches it can then do. `serve` and `run` print it.
 */
import { isIPv4 } from "node:net"
import { Effect } from "effect"
import { DoorConfig } from "../http/DoorConfig.js"
import { credentialsOf } from "../http/DoorCredentials.js"
import { SessionIdentity } from "../services/SessionIdentity.js"

/** Whether a bind address keeps the door on this host: 127.0.0.0/8, ::1 or localhost (as the reference's `is_loopback_bind`). */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.trim().replace(/^\[(.*)\]$/, "$1").toLowerCase()
  if (bare === "localhost" || bare === "::1" || bare === "0:0:0:0:0:0:0:1") return true
  return isIPv4(bare) && bare.startsWith("127.")
}

/** The `W-SEC-032` line for this session's door, when it is open and bound beyond loopback. */
export const publicDoorWarning = Effect.gen(function*() {
  const config = yield* DoorConfig
  const identity = yield* SessionIdentity
  if (!credentialsOf(config).open || isLoopbackHost(config.host)) return undefined
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

