/**
 * A session's egress for sealed shell commands (docs/shell.md, "Egress"). The Shell opens one
 * endpoint per command with `network.allow` on the sealed tier: a unix socket in a private 0700
 * directory, bound into the sandbox, where the relay forwards what the command sends to
 * `127.0.0.1:3128` (../containment/EgressRelay.ts), plus the proxy variables for the command's
 * environment. The endpoint closes when the command ends, and every endpoint, with the directory,
 * when the session closes. Each connection becomes one `egress` trace line through `record`.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer, Runtime, Schema } from "effect"
import { EGRESS_PORT } from "../containment/EgressRelay.js"
import type { NetworkRule } from "../../project/NetworkMatch.js"
import type { EgressFields } from "../../records/TraceEvents.js"
import {
  type CommandEndpoint,
  type CommandLabel,
  DEFAULT_EGRESS_LIMITS,
  type EgressLimits,
  type EgressSessionState,
  listenEndpoint,
  type Resolve,
  systemResolve
} from "./EgressProxy.js"

/** An endpoint that could not be opened; the Shell refuses the spawn with it. */
export class EgressError extends Schema.TaggedError<EgressError>()("EgressError", {
  message: Schema.String
}) {}

export interface EgressEndpoint extends CommandEndpoint {
  /** `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` and their lowercase forms. */
  readonly env: Readonly<Record<string, string>>
}

export interface ShellEgressOptions {
  /** `capabilities.network.allow`, parsed. */
  readonly rules: ReadonlyArray<NetworkRule>
  readonly record: (fields: EgressFields) => Effect.Effect<void>
  readonly limits?: Partial<EgressLimits> | undefined
  /** Name resolution; the system resolver unless given. */
  readonly resolve?: Resolve | undefined
}

/** What a command's environment names its proxy with: every request through the relay, none direct. */
export const proxyEnv = (): Readonly<Record<string, string>> => {
  const url = `http://127.0.0.1:${EGRESS_PORT}`
  return { HTTP_PROXY: url, HTTPS_PROXY: url, NO_PROXY: "", http_proxy: url, https_proxy: url, no_proxy: "" }
}

/** Longest `sun_path` (108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107

export class ShellEgress extends Context.Tag("capsule-runtime/sandbox/ShellEgress")<ShellEgress, {
  /** Opens the endpoint of one command; the caller closes it when the command ends. */
  readonly open: (label: CommandLabel) => Effect.Effect<EgressEndpoint, EgressError>
}>() {
  static readonly layer = (options: ShellEgressOptions) => Layer.scoped(ShellEgress, makeShellEgress(options))
}

export const makeShellEgress = (options: ShellEgressOptions) =>
  Effect.gen(function*() {
    const directory = yield* Effect.acquireRelease(
      Effect.try({
        try: () => mkdtempSync(join(tmpdir(), "murmur-egress-")),
        catch: (error) => new EgressError({ message: `cannot create the egress socket directory: ${(error as Error).message}` })
      }),
      (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
    ).pipe(Effect.orDie)
    const runtime = yield* Effect.runtime<never>()
    const state: EgressSessionState = {
      rules: options.rules,
      limits: { ...DEFAULT_EGRESS_LIMITS, ...options.limits },
      resolve: options.resolve ?? systemResolve,
      active: 0,
      report: (fields) => Runtime.runFork(runtime)(options.record(fields))
    }
    // Every endpoint until its connections are reported: closing the session closes and awaits them
    // (a `close` event comes a tick after `destroy`), so no record is lost or written after.
    const open = new Set<CommandEndpoint>()
    yield* Effect.addFinalizer(() =>
      Effect.promise(() =>
        Promise.all([...open].map((endpoint) => {
          endpoint.close()
          return endpoint.drained()
        }))
      )
    )
    let next = 0

    return ShellEgress.of({
      open: Effect.fn("ShellEgress.open")(function*(label: CommandLabel) {
        yield* Effect.annotateCurrentSpan("binary", label.binary)
        const socketPath = join(directory, `${++next}.sock`)
        if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
          return yield* new EgressError({ message: `egress socket path ${socketPath} is longer than ${MAX_SOCKET_PATH} bytes (set TMPDIR shorter)` })
        }
        const endpoint = yield* Effect.tryPromise({
          try: () => listenEndpoint(socketPath, state, label),
          catch: (error) => new EgressError({ message: `cannot listen on ${socketPath}: ${(error as Error).message}` })
        })
        open.add(endpoint)
        void endpoint.drained().then(() => open.delete(endpoint))
        return { ...endpoint, env: proxyEnv() }
      })
    })
  }).pipe(Effect.annotateLogs({ service: "ShellEgress" }))
