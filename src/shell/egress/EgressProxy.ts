/**
 * One shell command's egress proxy endpoint: a unix socket the sandbox's relay
 * (../containment/egress-relay.c) connects to once per connection the command opens to
 * `127.0.0.1:3128`. Each connection carries one request (./EgressRequest.ts): the runtime checks it
 * (./EgressPolicy.ts), connects to an address that passed, and then only copies bytes both ways —
 * it never reads a response, so a redirect reaches the command as the response it is and any next
 * hop is a new request checked again. Every connection is reported once, when it closes.
 *
 * Bounded: concurrent connections per command and per session (past either: 503), the request
 * head's size and time, DNS plus connect time, and idle time in either direction.
 */
import { chmodSync, unlinkSync } from "node:fs"
import { connect, createServer, type Socket } from "node:net"
import { lookup } from "node:dns/promises"
import type { NetworkRule } from "../../project/NetworkMatch.js"
import type { EgressFields } from "../../records/TraceEvents.js"
import { addressRefusal, literalAddress, nameAllowed } from "./EgressPolicy.js"
import { type EgressTarget, headEnd, parseRequest } from "./EgressRequest.js"

export interface EgressLimits {
  /** Connections one command may hold open at once. */
  readonly perCommand: number
  /** Connections all of a session's commands may hold open at once. */
  readonly perSession: number
  /** Longest a request head may be. */
  readonly headBytes: number
  /** Time for the whole request head to arrive. */
  readonly headMs: number
  /** Time to resolve the name and connect. */
  readonly connectMs: number
  /** A connection with no byte in either direction for this long is closed. */
  readonly idleMs: number
}

export const DEFAULT_EGRESS_LIMITS: EgressLimits = {
  perCommand: 32,
  perSession: 64,
  headBytes: 16 * 1024,
  headMs: 10_000,
  connectMs: 10_000,
  idleMs: 60_000
}

/** Resolves a name to addresses (the system resolver by default). */
export type Resolve = (host: string) => Promise<ReadonlyArray<string>>

export const systemResolve: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

export interface EgressSessionState {
  readonly rules: ReadonlyArray<NetworkRule>
  readonly limits: EgressLimits
  readonly resolve: Resolve
  /** Connections open across the session. */
  active: number
  readonly report: (fields: EgressFields) => void
}

export interface CommandLabel {
  readonly binary: string
  readonly taskId: string | null
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  405: "Method Not Allowed",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported"
}

const answer = (client: Socket, status: number, reason: string) => {
  // Whatever else the command sends is read and dropped, so its close is seen.
  client.resume()
  const body = `egress ${status === 403 ? "denied" : "failed"}: ${reason}\n`
  client.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Error"}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/** Resolves with a connected socket to the first address that accepts, or rejects with the last error. */
const connectAny = (addresses: ReadonlyArray<string>, port: number, deadline: number): Promise<{ socket: Socket; address: string }> =>
  addresses.reduce<Promise<{ socket: Socket; address: string }>>(
    (previous, address) =>
      previous.catch(() =>
        new Promise((resolve, reject) => {
          const left = deadline - performance.now()
          if (left <= 0) return reject(new Error("connect timed out"))
          const socket = connect({ host: address, port, allowHalfOpen: true })
          const timer = setTimeout(() => {
            socket.destroy()
            reject(new Error("connect timed out"))
          }, left)
          socket.once("connect", () => {
            clearTimeout(timer)
            socket.removeAllListeners("error")
            resolve({ socket, address })
          })
          socket.once("error", (error) => {
            clearTimeout(timer)
            reject(error)
          })
        })
      ),
    Promise.reject(new Error("no address"))
  )

const withDeadline = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} timed out`)), ms)
    promise.then((value) => {
      clearTimeout(timer)
      resolve(value)
    }, (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })

export interface CommandEndpoint {
  readonly socketPath: string
  /** Stops accepting, closes the command's live connections and removes the socket; idempotent. */
  readonly close: () => void
  /** Resolves once closed and every connection has closed and been reported. */
  readonly drained: () => Promise<void>
}

/** Listens on `socketPath` for one command's connections. */
export const listenEndpoint = (socketPath: string, session: EgressSessionState, label: CommandLabel): Promise<CommandEndpoint> => {
  const live = new Set<Socket>()
  const waiting: Array<() => void> = []
  let closed = false
  const settle = () => {
    if (closed && live.size === 0) waiting.splice(0).forEach((wake) => wake())
  }
  let commandActive = 0
  const { limits } = session

  const handle = (client: Socket) => {
    const began = performance.now()
    let upstream: Socket | undefined
    let bytesUp = 0
    let bytesDown = 0
    let outcome: Omit<EgressFields, "task_id" | "binary" | "bytes_up" | "bytes_down" | "duration_ms"> = {
      method: null,
      host: null,
      port: null,
      decision: "denied",
      reason: "closed before a request"
    }
    let headTimer: ReturnType<typeof setTimeout> | undefined
    live.add(client)
    const counted = commandActive < limits.perCommand && session.active < limits.perSession
    if (counted) {
      commandActive++
      session.active++
    }
    client.on("error", () => client.destroy())
    client.once("close", () => {
      live.delete(client)
      clearTimeout(headTimer)
      upstream?.destroy()
      if (counted) {
        commandActive--
        session.active--
      }
      session.report({
        task_id: label.taskId,
        binary: label.binary,
        ...outcome,
        bytes_up: bytesUp,
        bytes_down: bytesDown,
        duration_ms: Math.round(performance.now() - began)
      })
      settle()
    })
    const idle = () => {
      outcome = { ...outcome, reason: `closed after ${limits.idleMs} ms idle` }
      client.destroy()
    }
    client.setTimeout(limits.idleMs, idle)
    if (!counted) {
      const reason = commandActive >= limits.perCommand
        ? `connection limit reached (${limits.perCommand} per command)`
        : `connection limit reached (${limits.perSession} per session)`
      outcome = { ...outcome, reason }
      return answer(client, 503, reason)
    }

    let buffered = Buffer.alloc(0)
    headTimer = setTimeout(() => {
      outcome = { ...outcome, reason: `no request head within ${limits.headMs} ms` }
      client.removeListener("data", onHead)
      answer(client, 408, outcome.reason!)
    }, limits.headMs)
    const onHead = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      const end = headEnd(buffered)
      if (end < 0 && buffered.length < limits.headBytes) return
      clearTimeout(headTimer)
      client.removeListener("data", onHead)
      client.pause()
      if (end < 0 || end > limits.headBytes) {
        outcome = { ...outcome, reason: `request head over ${limits.headBytes} bytes` }
        return answer(client, 431, outcome.reason!)
      }
      void proceed(buffered.subarray(0, end), buffered.subarray(end))
    }
    client.on("data", onHead)

    const proceed = async (head: Buffer, rest: Buffer) => {
      const request = parseRequest(head)
      if (request._tag === "Refused") {
        outcome = { ...outcome, method: request.method ?? null, reason: request.reason }
        return answer(client, request.status, request.reason)
      }
      const target: EgressTarget = request.target
      outcome = { method: request.method, host: target.host, port: target.port, decision: "denied" }
      if (!nameAllowed(session.rules, target)) {
        const reason = `'${target.scheme}://${target.host}:${target.port}' not in capabilities.network.allow`
        outcome = { ...outcome, reason }
        return answer(client, 403, reason)
      }
      const deadline = performance.now() + limits.connectMs
      let addresses: ReadonlyArray<string>
      try {
        const literal = literalAddress(target.host)
        addresses = literal !== undefined ? [literal] : await withDeadline(session.resolve(target.host), limits.connectMs, "name resolution")
      } catch (error) {
        outcome = { ...outcome, decision: "allowed", reason: `cannot resolve ${target.host}: ${(error as Error).message}` }
        return answer(client, 502, outcome.reason!)
      }
      const refusals = addresses.map((address) => addressRefusal(session.rules, target, address))
      const reachable = addresses.filter((_, index) => refusals[index] === undefined)
      if (reachable.length === 0) {
        const reason = refusals.find((refusal) => refusal !== undefined) ?? `${target.host} has no address`
        outcome = { ...outcome, reason }
        return answer(client, 403, reason)
      }
      outcome = { ...outcome, decision: "allowed" }
      let connected: { socket: Socket; address: string }
      try {
        connected = await connectAny(reachable, target.port, deadline)
      } catch (error) {
        outcome = { ...outcome, reason: `cannot connect to ${target.host}:${target.port}: ${(error as Error).message}` }
        return answer(client, 502, outcome.reason!)
      }
      upstream = connected.socket
      outcome = { ...outcome, address: connected.address }
      if (client.destroyed) return upstream.destroy()
      relay(client, upstream, request._tag === "Connect" ? undefined : request, rest)
    }

    const relay = (from: Socket, to: Socket, forward: { readonly head: Buffer; readonly bodyBytes: number | undefined } | undefined, rest: Buffer) => {
      to.on("error", () => {
        to.destroy()
        from.destroy()
      })
      to.once("close", () => from.destroy())
      to.setTimeout(limits.idleMs, () => {
        to.destroy()
        idle()
      })
      // Client bytes still to send upstream; `undefined`: until the client closes.
      let remaining = forward?.bodyBytes
      const send = (chunk: Buffer) => {
        const part = remaining === undefined ? chunk : chunk.subarray(0, remaining)
        if (remaining !== undefined) remaining -= part.length
        if (part.length === 0) return
        bytesUp += part.length
        if (!to.write(part)) {
          from.pause()
          to.once("drain", () => from.resume())
        }
      }
      if (forward === undefined) from.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      else {
        bytesUp += forward.head.length
        to.write(forward.head)
      }
      send(rest)
      from.on("data", send)
      from.once("end", () => to.end())
      to.on("data", (chunk: Buffer) => {
        bytesDown += chunk.length
        if (!from.write(chunk)) {
          to.pause()
          from.once("drain", () => to.resume())
        }
      })
      to.once("end", () => from.end())
      from.resume()
    }
  }

  const server = createServer({ allowHalfOpen: true, pauseOnConnect: false }, handle)
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(socketPath, () => {
      server.removeListener("error", reject)
      // The sandbox may run the relay under another uid than the runtime's; the socket's
      // directory (0700, the runtime's) keeps every other host user out.
      chmodSync(socketPath, 0o666)
      resolve({
        socketPath,
        close: () => {
          if (closed) return
          closed = true
          server.close()
          for (const socket of live) socket.destroy()
          try {
            unlinkSync(socketPath)
          } catch {
            // already gone
          }
          settle()
        },
        drained: () => new Promise((wake) => {
          waiting.push(wake)
          settle()
        })
      })
    })
  })
}
