/**
 * Settings of the door itself. Node enforces the header limits and read timeouts; the body
 * limit (413 before the body is buffered), the params nesting limit and the stream limit are
 * ours: each bounds what an unauthenticated client can make the door hold or compute.
 */
import { Context, Layer, type Redacted } from "effect"
import type { CardSigner } from "../services/CardSignature.js"
import type { TaskAcceptance } from "../services/TaskRegistry.js"
import type { DoorCredentials } from "./DoorCredentials.js"

export interface DoorSettings {
  readonly host: string
  readonly port: number
  readonly acceptance: TaskAcceptance
  /** Largest JSON-RPC body accepted, in bytes. */
  readonly maxBodyBytes: number
  /** Largest request head (request line and headers), in bytes: beyond it Node answers 431. */
  readonly maxHeaderBytes: number
  readonly maxHeadersCount: number
  /** A client must send its whole head within this (slow-loris guard). */
  readonly headersTimeoutMs: number
  /** … and its whole request, body included, within this. */
  readonly requestTimeoutMs: number
  readonly keepAliveTimeoutMs: number
  /** `:heartbeat` comment interval on streams. */
  readonly heartbeatMs: number
  /** Most SSE streams open at once across the door (`--max-watchers`); past it a call is refused. */
  readonly maxWatchers: number
  /** Deepest nesting of arrays and objects accepted in `params` (beyond it: -32602 before decoding). */
  readonly maxParamsDepth: number
  /** Longest a blocking `message/send` waits before answering the task as it stands (`--blocking-timeout`). */
  readonly blockingTimeoutMs: number
  /** `--auth-token`: every request but the agent card needs `Authorization: Bearer` it (./DoorAuth.ts). */
  readonly authToken?: Redacted.Redacted<string> | undefined
  /** The principals and their scopes (./DoorCredentials.ts); absent: made from `authToken` alone. */
  readonly credentials?: DoorCredentials | undefined
  /**
   * Webhook hosts a push may reach even at a loopback or private address (`--push-allow`: a
   * host, an IP, `*.suffix` or `*`); every other such address is refused (./push/PushTarget.ts).
   */
  readonly pushAllow: ReadonlyArray<string>
  /** Tries per push update, and how long each may take. */
  readonly pushAttempts: number
  readonly pushTimeoutMs: number
  /** Signs the A2A 1.0 cards with the operator's key (`--card-signing-key`). */
  readonly cardSigner?: CardSigner | undefined
}

export const defaultDoorSettings: DoorSettings = {
  host: "127.0.0.1",
  port: 0,
  acceptance: "queue",
  maxBodyBytes: 1024 * 1024,
  maxHeaderBytes: 16 * 1024,
  maxHeadersCount: 100,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  heartbeatMs: 15_000,
  maxWatchers: 64,
  maxParamsDepth: 64,
  blockingTimeoutMs: 20_000,
  pushAllow: [],
  pushAttempts: 5,
  pushTimeoutMs: 10_000
}

export class DoorConfig extends Context.Tag("capsule-runtime/http/DoorConfig")<DoorConfig, DoorSettings>() {
  static readonly layer = (settings: Partial<DoorSettings> = {}) =>
    Layer.succeed(DoorConfig, { ...defaultDoorSettings, ...settings })
}
