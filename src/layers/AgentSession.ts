/**
 * An agent capsule's session (a manifest with `inference:`): the agent loop behind the door, one
 * task at a time, with its shell, trace, export planes, conversations and delegation launcher
 * wired here (`serve` and `run` only call it). The manifest's `lifecycle:` decides task acceptance (`queue` when
 * `task_acceptance` is absent, block or no block: a service keeps taking tasks), the queue depth and the request-input timeout;
 * the session's `trace.jsonl` is written in its records (outside the workdir) under `trace.capture`. `serve` is the
 * long-lived form: it keeps serving after each task whatever `after_task` says (`run` is the
 * one-task form that honours it).
 *
 * `MURMUR_CAPSULE_URL` (`localhost:<port>`) is added once the door is bound, so `--port 0`
 * gets it too.
 */
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { Effect, Either, Layer, type Redacted } from "effect"
import { AgentCapsule, type Lineage } from "../agent/AgentCapsule.js"
import { prepareAgent } from "../agent/AgentLaunch.js"
import { DelegationLauncher, defaultRuntime } from "../delegation/DelegationLauncher.js"
import { Conversations } from "../agent/Conversations.js"
import { ExportPlanes } from "../planes/ExportPlanes.js"
import { checkExportRoots, effectiveMaxTtl } from "../planes/PeerExport.js"
import { deliverCompletions, ShellCompletions } from "../agent/ShellCompletions.js"
import { DoorConfig } from "../http/DoorConfig.js"
import { credentialsOf, type DoorCredentials } from "../http/DoorCredentials.js"
import { layerServer, serveDoor } from "./DoorServer.js"
import { type Options, withCapsule } from "./Session.js"
import { TelemetryLive } from "./Telemetry.js"
import type { CapsuleProject } from "../project/CapsuleProject.js"
import { effectiveLifecycle, effectiveTraceCapture, type Lifecycle } from "../project/Manifest.js"
import { parseAllowList } from "../project/NetworkPolicy.js"
import { Shell } from "../shell/Shell.js"
import { makeShellEgress, ShellEgress } from "../shell/egress/ShellEgress.js"
import type { TaskAcceptance } from "../services/TaskRegistry.js"
import { readMachineConfig } from "../project/MachineConfig.js"
import { murmurHome } from "../project/MurmurHome.js"
import { SpendLedger } from "../records/SpendLedger.js"
import { Trace } from "../records/Trace.js"
import { SessionRecord } from "../services/SessionRecord.js"

/** `lifecycle.input_timeout_secs` in milliseconds (absent or 0: wait forever). */
export const inputTimeoutMs = (lifecycle: Lifecycle | undefined): number | undefined => {
  const value = lifecycle?.inputTimeoutSecs
  return value !== undefined && value > 0 ? value * 1000 : undefined
}

/** What an agent capsule's session takes besides the one `Options` shape. */
export interface AgentKindOptions extends Options {
  readonly sessionId: string
  readonly workdir: string | undefined
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** Overrides the manifest's task acceptance (`run`: the door's and the registry's). */
  readonly acceptance?: { readonly door: TaskAcceptance; readonly registry: TaskAcceptance } | undefined
  /** A delegated child's lineage (from `MURMUR_SPAWNER`), for its `session_start`. */
  readonly lineage?: Lineage | undefined
  /** How a delegation starts this runtime; default `[node, dist/main.js]`. */
  readonly runtime?: ReadonlyArray<string> | undefined
  /** A delegated child's place in its chain (from `MURMUR_SPAWNER`); absent: the chain's first capsule. */
  readonly spawnDepth?: { readonly depth: number; readonly maxDepth?: number | undefined } | undefined
}

/**
 * Prepares the agent capsule and returns its session layer (no door: it reads the door's
 * settings, and serves the manifest's task acceptance whatever they say), its workdir, records
 * and warnings.
 */
export const agentKind = (project: CapsuleProject, options: AgentKindOptions) =>
  Effect.gen(function*() {
    const prepared = yield* prepareAgent(project, {
      sessionId: options.sessionId,
      workdir: options.workdir,
      hostEnv: options.hostEnv
    })
    const { manifest } = project
    const maxTtlSecs = yield* effectiveMaxTtl(manifest.exports, prepared.lifecycle)
    yield* checkExportRoots(prepared.workdir, manifest.exports)
    const acceptance = options.acceptance?.door ?? effectiveLifecycle(manifest).taskAcceptance
    const session: Options = {
      ...options,
      sessionId: prepared.sessionId,
      tasks: {
        ...options.tasks,
        ...(options.acceptance === undefined ? {} : { acceptance: options.acceptance.registry }),
        queueDepth: prepared.lifecycle.queueDepth,
        maxActive: 1
      },
      runner: { ...options.runner, inputTimeoutMs: inputTimeoutMs(prepared.lifecycle) }
    }
    const home = murmurHome(options.hostEnv)
    const machine = yield* readMachineConfig(home)
    // The machine's sessions share one ledger while it has a budget; without one nothing is written.
    const ledger = machine.machineTokensPerDay === undefined ? SpendLedger.none : SpendLedger.layer(join(home, "spend"), machine.machineTokensPerDay)
    const layer = Layer.unwrapEffect(Effect.map(DoorConfig, (door) => {
      // Children get the `delegations` token (scope `complete`), never a token that can do more.
      const credentials = credentialsOf(door)
      // Only a capsule that may delegate gets a launcher (and so the `delegate-task` tool).
      const launcher = prepared.spawnAllow.length === 0 ? DelegationLauncher.disabled : DelegationLauncher.layer({
        capsuleDirectory: project.directory,
        workdir: prepared.workdir,
        sessionId: prepared.sessionId,
        allow: prepared.spawnAllow,
        deadlineSecs: prepared.delegationDeadlineSecs,
        depth: options.spawnDepth?.depth ?? 0,
        // The smaller of this capsule's ceiling and the one its parent handed down.
        maxDepth: Math.min(prepared.lifecycle.delegationMaxDepth, options.spawnDepth?.maxDepth ?? Number.MAX_SAFE_INTEGER),
        maxChildren: prepared.lifecycle.delegationMaxChildren,
        runtime: options.runtime ?? defaultRuntime(process.execPath),
        hostEnv: options.hostEnv,
        doorToken: credentials.completionToken
      }).pipe(Layer.provide(NodeContext.layer))
      // The records sit beneath the capsule directory, outside every tree a guest or command writes.
      const trace = Trace.layer({ directory: prepared.records, within: project.directory, sessionId: prepared.sessionId, capture: effectiveTraceCapture(manifest) })
      // Sealed commands reach network.allow through the session's proxy; each connection is a trace line.
      const egressRules = Either.getOrElse(parseAllowList(manifest.capabilities.network?.allow ?? []), () => [])
      const egress = prepared.shell.containment.tier !== "sealed" || egressRules.length === 0 ? Layer.empty : Layer.scoped(
        ShellEgress,
        Effect.flatMap(Trace, (written) =>
          makeShellEgress({ rules: egressRules, record: (fields) => written.record("egress", undefined, fields).pipe(Effect.ignore) }))
      ).pipe(Layer.provide(trace))
      const capsule = AgentCapsule.layer(prepared, options.lineage).pipe(
        Layer.provide(Shell.layer().pipe(Layer.provide(egress))),
        Layer.provide(launcher),
        Layer.provide(ledger)
      )
      // The export planes are shared by the door (which serves them) and the capsule (share-file,
      // and the generation each finished task advances).
      const planes = ExportPlanes.layer({
        workdir: prepared.workdir,
        exports: manifest.exports ?? {},
        sessionId: prepared.sessionId,
        containment: prepared.containment.achieved,
        maxTtlSecs
      })
      // Threaded conversations: the record store lives under the murmur home (MURMUR_HOME, else
      // ~/.murmur), named by context.record_store (default: the capsule's name).
      // The store name is one path segment (E-CAP-011, checked when the manifest is read).
      const conversations = prepared.lifecycle.conversation !== "threaded" ? Conversations.stateless : Conversations.layer({
        store: manifest.context?.record === false
          ? undefined
          : { root: join(home, "conversations"), name: manifest.context?.recordStore ?? manifest.name },
        retain: manifest.context?.retain,
        maxBytes: manifest.context?.recordMaxBytes,
        maxTurns: manifest.context?.recordMaxTurns
      })
      // What the door does for the session (push deliveries) goes into the same trace.
      const record = Layer.effect(
        SessionRecord,
        Effect.map(Trace, (written) => SessionRecord.of({ record: (eventType, fields) => Effect.ignore(written.record(eventType, undefined, fields)) }))
      ).pipe(Layer.provide(trace))
      const completions = ShellCompletions.layer.pipe(Layer.provideMerge(planes), Layer.provideMerge(conversations), Layer.provideMerge(trace))
      // Only a session that keeps taking tasks (serve under `queue`, or run under `queue` + `sleep`)
      // can receive a detached command's completion as a task.
      // observability.otel_endpoint: this session's spans go there (else where the process sends them).
      const otelEndpoint = manifest.observability?.otelEndpoint
      return deliverCompletions(acceptance === "queue").pipe(
        // The same planes layer as in `completions`: built once, the capsule's and the door's.
        Layer.provideMerge(withCapsule(capsule, session, planes, record)),
        // Merged, not provided: the door serves the same export planes the capsule writes to.
        Layer.provideMerge(completions),
        Layer.provide(otelEndpoint === undefined ? Layer.empty : TelemetryLive(otelEndpoint)),
        // The manifest's acceptance is the session's, whatever the door was given.
        Layer.provide(Layer.succeed(DoorConfig, { ...door, acceptance, credentials }))
      )
    }))
    return { layer, workdir: prepared.workdir, records: prepared.records, warnings: prepared.warnings }
  })

/** `run`'s settings: the agent kind's, and its door's. */
export interface AgentSessionOptions extends Omit<AgentKindOptions, "tasks" | "runner" | "events"> {
  readonly host: string
  readonly port: number
  readonly maxBodyBytes: number
  readonly retainTerminal: number
  /** `serve`'s resource limits; absent: the defaults. */
  readonly limits?: { readonly retainBytes: number; readonly replayBytes: number; readonly maxWatchers: number; readonly blockingTimeoutMs: number }
  /** The door's bearer token (`serve --auth-token`); none: the door is open. */
  readonly authToken?: Redacted.Redacted<string> | undefined
  /** The door's principals (`serve --auth-tokens-file`); absent: made from `authToken` alone. */
  readonly credentials?: DoorCredentials | undefined
}

/** The agent capsule behind a door on a server of its own (`run`), with its workdir and warnings. */
export const agentSession = (project: CapsuleProject, options: AgentSessionOptions) =>
  Effect.map(agentKind(project, {
    ...options,
    tasks: { retainTerminal: options.retainTerminal, ...(options.limits === undefined ? {} : { retainBytes: options.limits.retainBytes }) },
    ...(options.limits === undefined ? {} : { events: { capacityBytes: options.limits.replayBytes } })
  }), (kind) => {
    const door = {
      host: options.host,
      port: options.port,
      acceptance: options.acceptance?.door ?? effectiveLifecycle(project.manifest).taskAcceptance,
      maxBodyBytes: options.maxBodyBytes,
      authToken: options.authToken,
      credentials: options.credentials,
      ...(options.limits === undefined ? {} : { maxWatchers: options.limits.maxWatchers, blockingTimeoutMs: options.limits.blockingTimeoutMs })
    }
    return { ...kind, layer: serveDoor(kind.layer, door).pipe(Layer.provide(layerServer(door))) }
  })
