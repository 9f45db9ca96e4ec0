/**
 * A script capsule served through the door (beyond the reference): each task writes its text to
 * `task.md` in the workdir, runs `run()` in a fresh worker, and completes with
 * `out/result.txt` as its answer. Its tools' chunks stream into the task, their request-input
 * puts the task in `input-required`, and cancelling the task terminates the worker. Those files are
 * opened without following links (./WorkdirFs.ts): a task that meets one fails, naming it.
 * The layer writes the session's `trace.jsonl` (./ScriptTrace.ts): `session_start` when built,
 * each task's lines, `session_end` when closed; a trace that cannot be opened fails the layer
 * with `TraceWriteFailed` (E-RUN-007), as an agent session's does.
 */
import { Effect, Layer } from "effect"
import type { TraceWriteFailed } from "../records/Trace.js"
import { Capsule, CapsuleFailure, type CapsuleInfo } from "../services/Capsule.js"
import { join } from "node:path"
import { Sandbox } from "../sandbox/Sandbox.js"
import { explainGuestFailure } from "../sandbox/GuestFailure.js"
import { type PreparedScript, runScript } from "./ScriptLaunch.js"
import { openScriptTrace } from "./ScriptTrace.js"
import * as WorkdirFs from "../records/WorkdirFs.js"

export const scriptInfo = (prepared: PreparedScript): CapsuleInfo => {
  const { manifest } = prepared.project
  return {
    name: manifest.name,
    version: manifest.version,
    description: `Murmur script capsule ${manifest.name}@${manifest.version}`,
    tools: prepared.allowlist,
    shell: (manifest.capabilities.shell?.allow.length ?? 0) > 0,
    network: (manifest.capabilities.network?.allow.length ?? 0) > 0,
    conversationMode: "stateless"
  }
}

export const ScriptCapsule = {
  layer: (prepared: PreparedScript): Layer.Layer<Capsule, TraceWriteFailed, Sandbox> =>
    Layer.scoped(
      Capsule,
      Effect.gen(function*() {
        const sandbox = yield* Sandbox
        const { workdir } = prepared
        const trace = yield* openScriptTrace(prepared)
        const refused = (error: WorkdirFs.WorkdirPathRefused) => new CapsuleFailure({ reason: "HostError", message: error.message })
        return Capsule.of({
          info: scriptInfo(prepared),
          run: (input, io) =>
            trace.task({
              taskId: input.taskId,
              contextId: input.contextId,
              source: input.provenance.hostSource ?? "a2a",
              origin: input.provenance.origin,
              trust: input.provenance.trust,
              delegationId: input.provenance.delegationId,
              messageBytes: Buffer.byteLength(input.text),
              queuedMs: input.queuedMs ?? 0,
              received: input.provenance.hostSource === undefined
                ? { messageId: input.messageId, traceparent: input.provenance.traceparent ?? null }
                : undefined
            }, (sent) => Effect.gen(function*() {
              yield* WorkdirFs.attempt(() => {
                WorkdirFs.write(workdir, "task.md", input.text)
                WorkdirFs.remove(workdir, "out/result.txt")
              }).pipe(Effect.mapError(refused))
              let timedOut = false
              yield* runScript(prepared, {
                inTask: true,
                trust: input.provenance.trust,
                sent,
                host: {
                  text: io.text,
                  thinking: io.thinking,
                  requestInput: (prompt) =>
                    io.requestInput(prompt).pipe(Effect.tapError((error) => Effect.sync(() => void (timedOut ||= error.reason === "InputTimeout"))))
                }
              }).pipe(
                Effect.provideService(Sandbox, sandbox),
                // A timed-out request-input traps the guest; the task fails `input-timeout`, as in the reference.
                Effect.mapError((error) =>
                  timedOut
                    ? CapsuleFailure.inputTimeout()
                    : error._tag === "SandboxError"
                    // A script's guest never sees a host secret (its environment is stripped of them).
                    ? new CapsuleFailure({ reason: "Failed", message: explainGuestFailure(error, join(workdir, "logs", "guest.log"), []) })
                    : new CapsuleFailure({ reason: "HostError", message: error.message })
                )
              )
              // The reference fails a task whose input request timed out, whatever the capsule did next.
              if (timedOut) return yield* CapsuleFailure.inputTimeout()
              const response = yield* WorkdirFs.attempt(() => WorkdirFs.read(workdir, "out/result.txt") ?? "").pipe(Effect.mapError(refused))
              return { response }
            })).pipe(Effect.catchTag("TraceWriteFailed", (error) => new CapsuleFailure({ reason: "HostError", message: error.message })))
        })
      })
    )
}
