/**
 * Launching a script capsule: its components loaded (checked, transpiled, capped, compiled), the
 * grants of the capsule and of each allowlisted tool built, the workdir made; then `run()` in a
 * fresh worker, as many times as the caller wants (once for `run`, once per task for `serve`),
 * each run a task in the launch's `trace.jsonl` (./ScriptTrace.ts).
 */
export type { PreparedScript } from "./PreparedScript.js"
import { mkdirSync } from "node:fs"
import { Effect } from "effect"
import type { TraceWriteFailed } from "../records/Trace.js"
import { mintId } from "../services/Ids.js"
import type { Trust } from "../services/Task.js"
import { outgoingTraceHeaders } from "../services/Tracing.js"
import { artifactData, artifactLabel, type CapsuleProject } from "../project/CapsuleProject.js"
import { ComponentCache } from "../sandbox/component/ComponentCache.js"
import { containmentFor } from "../shell/containment/ContainmentDecision.js"
import type { ArtifactData } from "../sandbox/GuestJob.js"
import { guestLog } from "../sandbox/GuestLog.js"
import { capsuleGrant, ceilingRules, type GrantContext, toolGrant } from "../sandbox/grants/Grants.js"
import { effectiveLimits } from "../project/manifest/Capabilities.js"
import { sendPeerMessage } from "./PeerMessage.js"
import { ProjectError } from "../project/ProjectError.js"
import { type GuestHost, type GuestOutcome, Sandbox, type ToolSpec } from "../sandbox/Sandbox.js"
import type { SandboxError } from "../sandbox/SandboxError.js"
import type { PreparedScript } from "./PreparedScript.js"
import { openScriptTrace, type RecordSend } from "./ScriptTrace.js"
import { recordsExposed, sessionWorkdirs } from "../records/SessionWorkdirs.js"
import * as WorkdirFs from "../records/WorkdirFs.js"

export interface LaunchOptions {
  readonly sessionId: string
  /** `--workdir`; default `<capsule dir>/workdir/<session id>`. */
  readonly workdir?: string | undefined
  readonly hostEnv: Readonly<Record<string, string | undefined>>
}

export const prepareScript = (project: CapsuleProject, options: LaunchOptions): Effect.Effect<PreparedScript, ProjectError | SandboxError, ComponentCache> =>
  Effect.gen(function*() {
    const cache = yield* ComponentCache
    // A script capsule starts no subprocess, but a floor it declares is still a launch condition.
    const containment = yield* containmentFor(project.manifest.capabilities, options.hostEnv)
    const workdirs = sessionWorkdirs(project.directory, options.sessionId, options.workdir)
    const { accessible: workdir, records } = workdirs
    const exposed = recordsExposed(workdirs)
    if (exposed !== undefined) return yield* new ProjectError({ code: "E-RUN-002", message: exposed })
    mkdirSync(workdir, { recursive: true })
    const context: GrantContext = { manifest: project.manifest, workdir, hostEnv: options.hostEnv, runtimeVars: {} }
    const limits = effectiveLimits(project.manifest.capabilities)
    const capped = { memoryBytes: limits.memoryBytes, tableElements: limits.tableElements }
    const capsule = yield* cache.load(project.component!.bytes, capped, `capsule ${project.manifest.name} (${project.component!.path})`)
    const granted = yield* capsuleGrant(context)
    const warnings = [...project.warnings.map((w) => `warning[${w.code}]: ${w.message}`), ...granted.warnings]
    const tools: Record<string, ToolSpec> = {}
    for (const artifact of project.artifacts) {
      if (artifact.wasm === undefined) continue
      const tool = yield* toolGrant(context, artifact.entry)
      warnings.push(...tool.warnings)
      tools[artifact.entry.name] = {
        component: yield* cache.load(artifact.wasm, capped, artifactLabel(artifact)),
        grant: tool.grant,
        deadlineSeconds: limits.deadlineSeconds
      }
    }
    const artifacts: Array<ArtifactData> = project.artifacts.map(artifactData)
    return {
      project,
      sessionId: options.sessionId,
      workdir,
      records,
      capsule,
      grant: granted.grant,
      ceiling: yield* ceilingRules(project.manifest),
      deadlineSeconds: limits.deadlineSeconds,
      tools,
      allowlist: project.manifest.artifacts.filter((entry) => entry.runtime === "tool").map((entry) => entry.name),
      artifacts,
      containment,
      warnings
    } satisfies PreparedScript
  })

export interface ScriptHost {
  readonly inTask: boolean
  readonly trust: Trust
  readonly host: Omit<GuestHost, "sendMessage" | "stdout" | "stderr">
  /** Told of each `message/send` a peer answered with a task (its `a2a_send` line). */
  readonly sent: RecordSend
}

/** Runs the capsule's `run()` once in a fresh worker; a refused `logs/guest.log` fails the run once it ends. */
export const runScript = (
  prepared: PreparedScript,
  options: ScriptHost
): Effect.Effect<GuestOutcome, SandboxError | WorkdirFs.WorkdirPathRefused, Sandbox> =>
  Effect.gen(function*() {
    const sandbox = yield* Sandbox
    const log = guestLog(prepared.workdir)
    return yield* sandbox.run({
      role: { kind: "capsule" },
      component: prepared.capsule,
      grant: prepared.grant,
      deadlineSeconds: prepared.deadlineSeconds,
      allowlist: prepared.allowlist,
      tools: prepared.tools,
      inTask: options.inTask,
      sessionId: prepared.sessionId,
      artifacts: prepared.artifacts,
      host: {
        ...options.host,
        sendMessage: (call) =>
          Effect.tap(sendPeerMessage(prepared.ceiling, options.trust, call), (answer) =>
            // The same span as the request's, so the same traceparent it carried.
            Effect.flatMap(outgoingTraceHeaders, (headers) =>
              options.sent({
                peer_url: call.peerUrl,
                message_id: call.messageId,
                task_id: answer.taskId,
                context_id: answer.contextId,
                traceparent: headers["traceparent"] ?? null,
                trust: options.trust
              }))),
        stdout: log.write,
        stderr: log.write
      }
    }).pipe(Effect.ensuring(log.close), Effect.zipLeft(log.refused))
  })

/**
 * `run <dir>`: `run()` once, framed as the launch's one task (source `task_md`, trust
 * `untrusted` as its sends are stamped) and its session in `trace.jsonl`.
 */
export const runScriptOnce = (
  prepared: PreparedScript,
  options: Omit<ScriptHost, "sent">
): Effect.Effect<GuestOutcome, SandboxError | WorkdirFs.WorkdirPathRefused | TraceWriteFailed, Sandbox> =>
  Effect.scoped(Effect.gen(function*() {
    const trace = yield* openScriptTrace(prepared)
    // The guest may read a task.md left in a --workdir; its size is the task's message.
    // (A link or a directory there is the guest's to meet; here it only counts as no message.)
    const task = yield* Effect.try(() => WorkdirFs.read(prepared.workdir, "task.md")).pipe(Effect.orElseSucceed(() => undefined))
    return yield* trace.task({
      taskId: mintId("tsk"),
      contextId: mintId("ctx"),
      source: "task_md",
      origin: "user",
      trust: options.trust,
      messageBytes: task === undefined ? 0 : Buffer.byteLength(task),
      queuedMs: 0
    }, (sent) => runScript(prepared, { ...options, sent }))
  }))
