/**
 * The WASI 0.2 imports of one guest instance, built from its grant alone. Nothing comes from
 * preview2-shim's process-global defaults (host env, host cwd, host stdio, open network):
 * env and preopens are the grant's (the filesystem confined by ./GuestFs.ts), stdout/stderr go
 * to sinks, `exit` cannot end the thread, sockets are denied, and `wasi:http/outgoing-handler` checks every request against the
 * network allowlist before any connection is made.
 *
 * The shim is untyped JS; this module is the boundary where its objects are adapted.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import { WASIShim } from "@bytecodealliance/preview2-shim/instantiation"
import * as shimIo from "@bytecodealliance/preview2-shim/io"
import * as shimClocks from "@bytecodealliance/preview2-shim/clocks"
import * as shimFilesystem from "@bytecodealliance/preview2-shim/filesystem"
import * as shimHttp from "@bytecodealliance/preview2-shim/http"
import type { GuestGrant } from "../GuestJob.js"
import { matchRequest } from "../../project/NetworkMatch.js"
import { isGatewayRequest, sendThroughGateway } from "./GatewayRewrite.js"
import { confine } from "./GuestFs.js"

/** Thrown by `wasi:cli/exit`: the guest asked to stop. */
export class GuestExit extends Error {
  constructor(readonly ok: boolean) {
    super(ok ? "guest exited" : "guest exited with a failure status")
  }
}

const BaseOutputStream = (shimIo as any).streams.OutputStream as new() => any

/** An output stream that hands every write to a sink and never touches the host's fds. */
class SinkStream extends BaseOutputStream {
  constructor(private readonly sink: (bytes: Uint8Array) => void) {
    super()
  }
  checkWrite() {
    return 1_048_576n
  }
  write(bytes: Uint8Array) {
    this.sink(bytes.slice())
  }
  blockingWriteAndFlush(bytes: Uint8Array) {
    this.sink(bytes.slice())
  }
  flush() {}
  blockingFlush() {}
  writeZeroes(length: bigint) {
    this.sink(new Uint8Array(Number(length)))
  }
  blockingWriteZeroesAndFlush(length: bigint) {
    this.sink(new Uint8Array(Number(length)))
  }
  // wasi-libc writes through check-write/subscribe/poll: the stream is always ready.
  subscribe() {
    return (shimClocks as any).monotonicClock.subscribeDuration(0n)
  }
}

export interface StdioSinks {
  readonly stdout: (bytes: Uint8Array) => void
  readonly stderr: (bytes: Uint8Array) => void
}

/** The scheme the request will really use: the shim sends a request without one over https. */
export const schemeOf = (scheme: any): string | undefined => {
  if (scheme === undefined || scheme === null) return "https"
  if (scheme.tag === "HTTP") return "http"
  if (scheme.tag === "HTTPS") return "https"
  return typeof scheme.val === "string" ? scheme.val.toLowerCase() : undefined
}

/** `traceparent`: the run's trace context when a request goes through the inference gateway. */
export const wasiImports = (grant: GuestGrant, sinks: StdioSinks, traceparent: () => string | undefined = () => undefined): Record<string, any> => {
  const shim = new WASIShim({
    sandbox: {
      preopens: {
        ...(grant.preopen === undefined ? {} : { ".": grant.preopen }),
        ...(grant.state === undefined ? {} : { state: grant.state })
      },
      env: { ...grant.env },
      args: [],
      enableNetwork: false
    }
  } as any)
  const base: Record<string, any> = shim.getImportObject()
  // Each preopen is confined to its own directory; `state` has no read-only subtrees (read_only names workdir paths).
  const preopens: ReadonlyArray<readonly [any, string]> = base["wasi:filesystem/preopens"].getDirectories()
  const named = (name: string) => preopens.filter(([, as]) => as === name)
  const Descriptor = (shimFilesystem as any).types.Descriptor
  if (grant.preopen !== undefined) confine(Descriptor, named("."), { preopen: grant.preopen, readOnly: grant.readOnly ?? [] })
  if (grant.state !== undefined) confine(Descriptor, named("state"), { preopen: grant.state, readOnly: [] })
  const stdout = new SinkStream(sinks.stdout)
  const stderr = new SinkStream(sinks.stderr)
  // With `enableNetwork: false` the shim's handler throws a string that is no `error-code`
  // (a trap); the real one, behind our allowlist, answers `HTTP-request-denied` properly.
  const realHandle = (shimHttp as any).outgoingHandler.handle
  return {
    ...base,
    "wasi:cli/environment": {
      ...base["wasi:cli/environment"],
      // The host's cwd is nobody's business: the guest's only directory is its preopen.
      initialCwd: () => undefined
    },
    "wasi:cli/stdout": { getStdout: () => stdout },
    "wasi:cli/stderr": { getStderr: () => stderr },
    "wasi:cli/exit": {
      exit: (status: { tag: string }) => {
        throw new GuestExit(status.tag === "ok")
      },
      exitWithCode: (code: number) => {
        throw new GuestExit(code === 0)
      }
    },
    // The shim sends with `node:http`, which never follows a redirect: a 3xx reaches the guest as
    // is (as in Wasmtime), so the host checked here is the only one contacted
    // (test/sandbox/OutgoingHttp.test.ts pins it across shim upgrades).
    "wasi:http/outgoing-handler": {
      handle: (request: any, options: any) => {
        const scheme = schemeOf(request.scheme())
        const authority: string | undefined = request.authority() ?? undefined
        const gateway = grant.gateway
        if (gateway !== undefined && isGatewayRequest(scheme, authority)) {
          // The upstream is checked against the driver's allowlist like any direct request.
          if (!matchRequest(grant.network, { scheme: gateway.scheme, authority: gateway.authority })) throw { tag: "HTTP-request-denied" }
          return sendThroughGateway(request, gateway, traceparent(), () => realHandle(request, options))
        }
        if (!matchRequest(grant.network, { scheme, authority })) throw { tag: "HTTP-request-denied" }
        return realHandle(request, options)
      }
    }
  }
}
