/**
 * A script capsule's session (a directory whose manifest has no `inference:`): each task writes
 * its text to `task.md`, runs the component's `run()` in a fresh worker and completes with
 * `out/result.txt`. One task at a time, since its tasks share the workdir; the manifest's
 * `lifecycle.input_timeout_secs` bounds a request for input.
 */
import type { CapsuleProject } from "../project/CapsuleProject.js"
import { ScriptCapsule } from "../script/ScriptCapsule.js"
import { prepareScript } from "../script/ScriptLaunch.js"
import { Effect } from "effect"
import { inputTimeoutMs } from "./AgentSession.js"
import { type Options, withCapsule } from "./Session.js"

/** What a script capsule's session takes besides the one `Options` shape. */
export interface ScriptKindOptions extends Options {
  readonly sessionId: string
  /** The workdir; default `<capsule dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
  /** The host environment the capsule's allowlists draw from. */
  readonly hostEnv: Readonly<Record<string, string | undefined>>
}

/** Prepares the script capsule and returns its session layer (no door), its workdir, records and warnings. */
export const scriptKind = (project: CapsuleProject, options: ScriptKindOptions) =>
  Effect.map(prepareScript(project, { sessionId: options.sessionId, workdir: options.workdir, hostEnv: options.hostEnv }), (prepared) => ({
    layer: withCapsule(ScriptCapsule.layer(prepared), {
      ...options,
      sessionId: prepared.sessionId,
      tasks: { ...options.tasks, maxActive: 1 },
      runner: { ...options.runner, inputTimeoutMs: inputTimeoutMs(project.manifest.lifecycle) }
    }),
    workdir: prepared.workdir,
    records: prepared.records,
    warnings: prepared.warnings
  }))
