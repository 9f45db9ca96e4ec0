/**
 * An agent capsule served through the door: each task runs the agent loop (./AgentLoop.ts).
 * The layer writes the launch's `session_start` when built and its `session_end` when closed.
 *
 * Outcome mapping (the reference's quirk, decided here): a failure arm of the loop (driver status
 * not `passed`, `stop_reason: error`, an unsupported stop reason, no tool blocks, `max_turns`)
 * writes "error: …" to `out/result.txt` and `task_end.exit_status` `failed` / `max_turns_reached`,
 * and the A2A task ends `failed` with the message "session ended: <reason>" — the reference's
 * final SSE frame (door spec §6.1) followed by the reason, said in the manifest's terms
 * (./FailureReason.ts). The reference's `tasks/get` still said `completed` for these
 * until 0.5.0 (#206); this runtime reports `failed` consistently in frames and `tasks/get`. A
 * host-side error (driver trap, deadline, unparseable response, trace write) fails the task with
 * "driver invocation failed: …" (or "agent loop failed: …"). A timed-out request-input fails it
 * with "input-timeout".
 */
import { Effect, Either, Layer, Option } from "effect"
import { parseAllowList } from "../project/NetworkPolicy.js"
import { Sandbox, silentHost } from "../sandbox/Sandbox.js"
import { Capsule, CapsuleFailure, type CapsuleInfo } from "../services/Capsule.js"
import { DelegationTracker } from "../services/DelegationTracker.js"
import { DoorAddress } from "../services/DoorAddress.js"
import { DetachedRegistry } from "../services/DetachedRegistry.js"
import { ResourcePlanes } from "../services/ResourcePlanes.js"
import { Shell } from "../shell/Shell.js"
import { SpendLedger } from "../records/SpendLedger.js"
import { Trace } from "../records/Trace.js"
import { sessionStartOf } from "../records/TraceEvents.js"
import type { PreparedAgent } from "./AgentLaunch.js"
import { capsuleUrlOf, withCapsuleUrl } from "./CapsuleUrl.js"
import { DelegationLauncher } from "../delegation/DelegationLauncher.js"
import { effectiveGrants } from "./EffectiveGrants.js"
import { Conversations } from "./Conversations.js"
import { audienceOf } from "../planes/PeerHandle.js"
import { FETCH_PEER_FILE, PeerFiles, runPeerTool, SHARE_FILE } from "../planes/PeerTools.js"
import { failedMessage } from "./FailureReason.js"
import { ShellCompletions } from "./ShellCompletions.js"
import { makeSpendGuard } from "./SpendCeiling.js"
import { DEFAULT_WORKDIR_MAX_BYTES, makeWorkdirQuota } from "../shell/WorkdirQuota.js"
import { type AgentEnv, emptyTotals, guestTemplate, runAgentTask } from "./AgentLoop.js"
import { makeHooks } from "../hooks/Hooks.js"
import { hookServices, type HookServiceEnv } from "./HookServices.js"
import { sessionHooks } from "./SessionHooks.js"
import { tokenCounter } from "./Tokens.js"

export const SESSION_ENDED = "session ended"

export const agentInfo = (prepared: PreparedAgent): CapsuleInfo => {
  const { manifest } = prepared.project
  return {
    name: manifest.name,
    version: manifest.version,
    description: `Murmur agent capsule ${manifest.name}@${manifest.version}`,
    tools: prepared.toolList.map((tool) => tool.name),
    shell: prepared.shell.allow.length > 0,
    network: (manifest.capabilities.network?.allow.length ?? 0) > 0,
    conversationMode: prepared.lifecycle.conversation,
    // File and data parts land in the workdir under inputs/ (./Attachments.ts).
    attachments: true
  }
}

/** A delegated child's lineage (its `MURMUR_SPAWNER`), written into its `session_start`. */
export interface Lineage {
  readonly spawnedBy: string
  readonly delegationId: string
}

/**
 * The peer tools this capsule is offered (`share-file` with `exports.peer_files`, `fetch-peer-file`
 * with `capabilities.peer_fetch`), asserting the audience of its own card (name and door URL).
 */
const peerFilesFor = (
  prepared: PreparedAgent,
  planes: ResourcePlanes["Type"],
  doorUrl: string | undefined,
  trace: Trace["Type"]
): Option.Option<PeerFiles["Type"]> => {
  const { manifest } = prepared.project
  const names = [
    ...(manifest.exports?.peerFiles === undefined ? [] : [SHARE_FILE]),
    ...(manifest.capabilities.peerFetch === undefined ? [] : [FETCH_PEER_FILE])
  ]
  if (names.length === 0) return Option.none()
  // Both lists were validated when the manifest was read.
  const rules = (entries: ReadonlyArray<string>) => Either.getOrElse(parseAllowList(entries), () => [])
  const ownAudience = Either.getOrElse(audienceOf(manifest.name, doorUrl ?? "http://localhost/"), () => manifest.name.toLowerCase())
  return Option.some({
    names,
    run: runPeerTool({
      planes,
      workdir: prepared.workdir,
      ownAudience,
      network: rules(manifest.capabilities.network?.allow ?? []),
      peerFetch: rules(manifest.capabilities.peerFetch?.allow ?? []),
      record: (eventType, fields) => trace.record(eventType, undefined, fields).pipe(Effect.ignore)
    })
  })
}

export const AgentCapsule = {
  /** Needs the Sandbox, the Shell (hence a DetachedRegistry) and the launch's Trace. */
  /** The door's address (`MURMUR_CAPSULE_URL`) is the `DoorAddress`, when the session has a door. */
  /** `lineage`: the spawner's session and the delegation, for a delegated child. */
  layer: (
    launched: PreparedAgent,
    lineage?: Lineage
  ): Layer.Layer<
    Capsule,
    never,
    Sandbox | Shell | Trace | ShellCompletions | DelegationLauncher | DetachedRegistry | DelegationTracker | ResourcePlanes | Conversations | SpendLedger
  > =>
    Layer.scoped(
      Capsule,
      Effect.gen(function*() {
        const doorUrl = Option.getOrUndefined(Option.map(yield* Effect.serviceOption(DoorAddress), (address) => address.url))
        const prepared = doorUrl === undefined ? launched : yield* withCapsuleUrl(launched, capsuleUrlOf(doorUrl))
        const sandbox = yield* Sandbox
        const shell = yield* Shell
        const trace = yield* Trace
        // Each absent feature is an explicit no-op layer (ShellCompletions.none,
        // DelegationLauncher.disabled, ResourcePlanes.undeclared, Conversations.stateless).
        const completions = yield* ShellCompletions
        const launcher = yield* DelegationLauncher
        const detached = yield* DetachedRegistry
        const delegations = yield* DelegationTracker
        const planes = yield* ResourcePlanes
        const conversations = yield* Conversations
        const ledger = yield* SpendLedger
        const { manifest } = prepared.project
        const peerFiles = peerFilesFor(prepared, planes, doorUrl, trace)
        const started = Date.now()
        const totals = emptyTotals()
        yield* trace.sessionStart({
          ...sessionStartOf({
            manifest,
            tools: prepared.toolList.map((tool) => tool.name),
            shellCommands: prepared.shell.allow.length,
            containment: prepared.containment,
            inference: {
              model: prepared.model,
              maxTurns: prepared.maxTurns,
              maxSessionTokens: manifest.inference?.maxSessionTokens ?? null,
              machineTokensPerDay: ledger.perDay ?? null
            },
            lineage,
            systemPromptSource: prepared.systemPromptSource,
            credentialSource: manifest.inference?.apiKey === undefined ? "none" : manifest.inference.apiKeyEnv === undefined ? "manifest" : "environment"
          }),
          effective_grants: effectiveGrants(prepared),
          ...(prepared.systemPromptText === undefined ? {} : { system_prompt: prepared.systemPromptText })
        }).pipe(Effect.orDie)
        yield* Effect.addFinalizer(() =>
          trace.sessionEnd({
            total_turns: totals.turns,
            total_input_tokens: totals.inputTokens,
            total_output_tokens: totals.outputTokens,
            total_tool_calls: totals.toolCalls,
            total_shell_calls: totals.shellCalls,
            duration_ms: Date.now() - started,
            exit_status: totals.lastExit
          }).pipe(Effect.ignore)
        )
        // Held workers for the driver and the WASM tools, for the session: a provider that
        // answers fast brings the next driver call before a replacement has booted, hence two
        // for the driver (docs/benchmarks.md, "Agent").
        yield* sandbox.warm(guestTemplate(prepared, prepared.driver.name, prepared.driver.spec), Math.min(2, prepared.maxTurns))
        for (const [name, spec] of Object.entries(prepared.tools)) yield* sandbox.warm(guestTemplate(prepared, name, spec), 1)
        const spend = makeSpendGuard(manifest.inference?.maxSessionTokens, ledger)
        const quota = yield* makeWorkdirQuota(prepared.workdir, manifest.capabilities.resources?.workdir_max_bytes ?? DEFAULT_WORKDIR_MAX_BYTES)
        const hooks = yield* makeHooks({
          hooks: prepared.hooks,
          sandbox,
          sessionId: prepared.sessionId,
          workdir: prepared.workdir,
          record: (eventType, parent, fields) => trace.record(eventType, parent, fields)
        })
        const { driver } = prepared
        const hookEnv: HookServiceEnv = {
          prepared,
          trace,
          spend,
          conversations,
          countTokens: prepared.hooks.length === 0 ? () => 0 : yield* tokenCounter,
          runDriver: (body) => sandbox.run({ ...guestTemplate(prepared, driver.name, driver.spec), deadlineSeconds: driver.spec.deadlineSeconds, input: { data: body }, host: silentHost })
        }
        // Registered after session_end's finalizer, so it runs first: on-session-end, then the drain.
        yield* sessionHooks(hooks, prepared, hookServices(hookEnv, undefined), { started, totals })
        const env: AgentEnv = { prepared, sandbox, shell, trace, totals, completions, launcher, detachedWork: detached, delegations, peerFiles, conversations, spend, quota, doorUrl, hooks, hookEnv }
        return Capsule.of({
          info: agentInfo(prepared),
          run: (input, io) =>
            runAgentTask(env, input, io).pipe(
              // Every run that ends, however it ends, is a task that reached a terminal state.
              Effect.ensuring(planes.taskEnded),
              Effect.flatMap((outcome) =>
                outcome.exit === "ok" ? Effect.succeed({ response: outcome.text }) : Effect.fail(new CapsuleFailure({ reason: "Failed", message: failedMessage(SESSION_ENDED, outcome.text) }))
              )
            )
        })
      })
    )
}
