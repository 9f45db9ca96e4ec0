/**
 * A session for a capsule directory, whichever kind it is: an agent capsule (./AgentSession.ts)
 * or a script capsule (./ScriptSession.ts), loaded against the host's environment and run on the
 * host's worker sandbox. What `serve <dir>` does, as one layer for a larger application.
 */
import { Effect, Layer } from "effect"
import { loadAnyProject } from "../project/CapsuleProject.js"
import { mintId } from "../services/Ids.js"
import { agentSession } from "./AgentSession.js"
import { HostEnvironment, SandboxLive } from "./Host.js"
import { defaultSessionDoor, type SessionOptions } from "./Main.js"
import { scriptSession } from "./ScriptSession.js"

export interface CapsuleSessionOptions extends SessionOptions {
  /** The capsule's workdir; default `<dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
}

/** The capsule in `directory` behind a listening door (its `lifecycle:` sets an agent's acceptance). */
export const CapsuleSessionLive = (directory: string, options: CapsuleSessionOptions = {}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const host = yield* HostEnvironment
    const loaded = yield* loadAnyProject(directory, host.env)
    const sessionId = options.sessionId ?? mintId("ses")
    if (loaded.kind === "script") {
      return (yield* scriptSession(loaded.project, { ...options, sessionId, hostEnv: host.env })).layer
    }
    const door = { ...defaultSessionDoor, ...options.door }
    const agent = yield* agentSession(loaded.project, {
      sessionId,
      host: door.host,
      port: door.port,
      maxBodyBytes: door.maxBodyBytes,
      authToken: door.authToken,
      credentials: door.credentials,
      retainTerminal: options.registry?.retainTerminal ?? 1000,
      workdir: options.workdir,
      hostEnv: host.env
    })
    return agent.layer
  })).pipe(Layer.provide(SandboxLive(1)), Layer.provide(HostEnvironment.layer))
