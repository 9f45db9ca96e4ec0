/**
 * `MURMUR_CAPSULE_URL` (spec §3.4: `localhost:<port>`) is known only once the door is bound,
 * after the capsule was prepared (`--port 0` picks the port then). It is added to every place
 * the runtime variables went: the driver's and the tools' environments and the shell's; and
 * `MURMUR.md` is staged again to name it, as the reference rewrites it after binding.
 */
import { Effect } from "effect"
import type { PreparedAgent } from "./AgentLaunch.js"
import type { ToolSpec } from "../sandbox/Sandbox.js"
import { stageAgentWorkdir } from "./Staging.js"

export const capsuleUrlOf = (doorUrl: string): string => `localhost:${new URL(doorUrl).port}`

export const withCapsuleUrl = (prepared: PreparedAgent, url: string): Effect.Effect<PreparedAgent> => {
  const add = (spec: ToolSpec): ToolSpec => ({ ...spec, grant: { ...spec.grant, env: { ...spec.grant.env, MURMUR_CAPSULE_URL: url } } })
  const restage = stageAgentWorkdir(prepared.project, {
    sessionId: prepared.sessionId,
    workdirs: { accessible: prepared.workdir, session: prepared.sessionWorkdir },
    capsuleUrl: url
  })
  // The same files were written moments ago at launch; failing now is a broken disk, not input.
  return Effect.as(Effect.orDie(restage), {
    ...prepared,
    runtimeVars: { ...prepared.runtimeVars, MURMUR_CAPSULE_URL: url },
    driver: { ...prepared.driver, spec: add(prepared.driver.spec) },
    tools: Object.fromEntries(Object.entries(prepared.tools).map(([name, spec]) => [name, add(spec)]))
  })
}
