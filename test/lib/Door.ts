/**
 * Test harness: a real session (scripted capsule, real door on 127.0.0.1:0) plus small
 * fetch-based JSON-RPC and SSE helpers.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as CapsuleRuntime from "../../src/CapsuleRuntime.js"
import * as Door from "../../src/Door.js"
import { withCapsule } from "../../src/layers/Session.js"
import type { Capsule } from "../../src/services/Capsule.js"
import { DelegationTracker } from "../../src/services/DelegationTracker.js"
import { DoorAddress } from "../../src/services/DoorAddress.js"
import type { EchoConfig } from "../../src/services/EchoCapsule.js"
import { EventLog } from "../../src/services/EventLog.js"
import { SessionIdentity } from "../../src/services/SessionIdentity.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"

export interface OpenDoor {
  readonly url: string
  /** `host:port` of the door's gRPC binding, when opened with `grpc: true`. */
  readonly grpc: string | undefined
  readonly sessionId: string
  readonly runner: Context.Tag.Service<TaskRunner>
  readonly registry: Context.Tag.Service<TaskRegistry>
  readonly log: Context.Tag.Service<EventLog>
  /** The session's delegations: a test registers one (`expect`) before it sends its completion. */
  readonly delegations: Context.Tag.Service<DelegationTracker>
  /** Runs an effect against the session's services. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  /** Ends the session as shutdown does (finalizers: stop tasks, close streams, close server). */
  readonly close: () => Promise<void>
}

export type DoorOptions = CapsuleRuntime.Options & {
  readonly door?: Partial<Door.Settings>
  readonly scripted?: Partial<EchoConfig>
  /** Also serve the gRPC binding, on a free port of its own (`Door.layerGrpc`). */
  readonly grpc?: boolean
}

export const openDoor = async (options: DoorOptions = {}): Promise<OpenDoor> => {
  const scope = Effect.runSync(Scope.make())
  const { door, grpc, scripted, ...session } = options
  const settings: Partial<Door.Settings> = { acceptance: "queue", ...door }
  const grpcServer: Layer.Layer<never, Door.GrpcBindError> = grpc === true ? Door.layerGrpc({ ...settings, port: 0 }) : Layer.empty
  const layer = Door.layer(
    CapsuleRuntime.layerEcho({ ...session, tasks: { queueDepth: 16, maxActive: 4, ...session.tasks }, echoMs: 100, ...scripted }),
    settings
  ).pipe(Layer.provide(Layer.merge(Door.layerServer(settings), grpcServer)))
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const identity = Context.get(context, SessionIdentity)
  let closed = false
  return {
    url: identity.url,
    grpc: Context.get(context, DoorAddress).grpc,
    sessionId: identity.sessionId,
    runner: Context.get(context, TaskRunner),
    registry: Context.get(context, TaskRegistry),
    log: Context.get(context, EventLog),
    delegations: Context.get(context, DelegationTracker),
    run: (effect) => Effect.runPromise(effect),
    close: async () => {
      if (closed) return
      closed = true
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

let nextId = 1

export interface RpcReply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

export const post = async (url: string, body: string, headers: Record<string, string> = {}): Promise<RpcReply> => {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed }
}

export const rpc = (
  url: string,
  method: string,
  params: unknown = {},
  options: { readonly id?: string | number | null; readonly headers?: Record<string, string> } = {}
): Promise<RpcReply> =>
  post(url, JSON.stringify({ jsonrpc: "2.0", id: options.id === undefined ? nextId++ : options.id, method, params }), options.headers)

/** A2A-shaped text message (with `kind` fields). */
export const a2aMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: "message",
  messageId: `msg-${nextId++}`,
  role: "user",
  parts: [{ kind: "text", text }],
  ...extra
})

/** Reference-shaped text message (no `kind` anywhere). */
export const referenceMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: `msg-${nextId++}`,
  role: "user",
  parts: [{ text }],
  ...extra
})

export interface SseEvent {
  readonly id?: number
  readonly event?: string
  readonly data?: string
  readonly comment?: string
}

/** Splits the complete SSE blocks off `buffer` (comments included); `rest` is the unfinished tail. */
export const takeSseEvents = (buffer: string): { readonly events: Array<SseEvent>; readonly rest: string } => {
  const events: Array<SseEvent> = []
  let rest = buffer
  let end: number
  while ((end = rest.indexOf("\n\n")) >= 0) {
    const block = rest.slice(0, end)
    rest = rest.slice(end + 2)
    const event: { id?: number; event?: string; data?: string; comment?: string } = {}
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) event.comment = line.slice(1)
      else if (line.startsWith("id: ")) event.id = Number(line.slice(4))
      else if (line.startsWith("event: ")) event.event = line.slice(7)
      else if (line.startsWith("data: ")) event.data = event.data === undefined ? line.slice(6) : `${event.data}\n${line.slice(6)}`
    }
    events.push(event)
  }
  return { events, rest }
}

/** Parses an SSE body into events (comments included) until the server closes it or `stop` says so. */
export async function* sseEvents(response: Response): AsyncGenerator<SseEvent> {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) return
      const parsed = takeSseEvents(buffer + decoder.decode(value, { stream: true }))
      buffer = parsed.rest
      yield* parsed.events
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/** Opens an SSE JSON-RPC call; returns the response for status/header checks and an event iterator. */
export const openStream = async (
  url: string,
  method: string,
  params: unknown = {},
  options: { readonly id?: string | number; readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {}
) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: options.id ?? nextId++, method, params }),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  return { response, events: sseEvents(response) }
}

/** Collects events until `until` returns true for one (included) or the stream ends. */
export const collect = async (events: AsyncGenerator<SseEvent>, until: (event: SseEvent) => boolean = () => false) => {
  const out: Array<SseEvent> = []
  for await (const event of events) {
    out.push(event)
    if (until(event)) break
  }
  return out
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `tasks/get` until the task reaches one of the states. */
export const waitForState = async (url: string, taskId: string, states: ReadonlyArray<string>, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const reply = await rpc(url, "tasks/get", { id: taskId })
    const state = reply.body?.result?.status?.state
    if (states.includes(state)) return reply.body.result
    await sleep(20)
  }
  throw new Error(`task ${taskId} did not reach ${states.join("|")} within ${timeoutMs} ms`)
}

/** A session around `capsule` behind a door on its own server (127.0.0.1, any free port): what `serve` composes. */
export const servedCapsule = <E, R>(
  capsule: Layer.Layer<Capsule, E, R>,
  options: CapsuleRuntime.Options & { readonly door?: Partial<Door.Settings> } = {}
) => {
  const { door, ...session } = options
  return Door.layer(withCapsule(capsule, session), door).pipe(Layer.provide(Door.layerServer(door)))
}
