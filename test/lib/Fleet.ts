/**
 * Harness for fleet tests: runner processes of cluster mode (`serve --cluster <postgres url>
 * --runner-address host:port`), each a real `node dist/main.js` a test can SIGKILL, plus the two
 * client calls such a test makes against whichever runner is alive: a JSON-RPC call and an SSE
 * stream that can be resumed elsewhere with `Last-Event-ID`.
 *
 * The contract a runner keeps: with `--json`, stdout carries exactly one line once it is ready,
 * `{"event":"listening","url":…,"runner":"host:port","sessions":[{"session_id","capsule","url"}]}`
 * (or, on a launch failure, the `exit` event of src/cli/LaunchFailure.ts).
 *
 * Event ids are handed on as the runners wrote them (strings), for `Last-Event-ID`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { cliCacheDir } from "./CapsuleDirs.js"
import { sseEvents } from "./Door.js"

const main = new URL("../../dist/main.js", import.meta.url).pathname

/** A port free on 127.0.0.1 when asked (another process may take it before it is used). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => (port === 0 ? reject(new Error("no port bound")) : resolve(port)))
    })
  })

export interface RunnerSession {
  readonly session_id: string
  readonly capsule: string
  readonly url: string
}

export interface RunnerOptions {
  /** The cluster's PostgreSQL URL (`--cluster`), e.g. from `freshSchemaUrl()` of ./Postgres.ts. */
  readonly cluster: string
  readonly dirs: ReadonlyArray<string>
  /** `--sessions N`. */
  readonly sessions?: number
  /** `--runner-address`; default 127.0.0.1 on a free port. Give the old one to restart a runner in its place. */
  readonly runnerAddress?: string
  /** Added to the child's environment (which is otherwise PATH, HOME and the CLI cache only). */
  readonly env?: Record<string, string>
  /** More flags, before the directories (`--public-url`, `--max-active`, …). */
  readonly extraArgs?: ReadonlyArray<string>
  /** How long to wait for the listening line (default 60 s: a cold start builds components). */
  readonly readyTimeoutMs?: number
}

export interface Runner {
  /** The door (`url` of the listening line). */
  readonly url: string
  readonly runnerAddress: string
  readonly sessions: Array<RunnerSession>
  /** The listening line as printed, for fields this harness does not name yet. */
  readonly listening: Record<string, unknown>
  readonly pid: number
  /** SIGKILL, resolved once the process is gone. */
  kill9(): Promise<void>
  /** Sends `signal` (default SIGTERM) and resolves with the exit code (null when a signal ended it); SIGKILLs and rejects past `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>
  /** The last 64 KiB of its stderr. */
  stderr(): string
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>
  readonly alive: () => boolean
}

const STDERR_KEEP = 64 * 1024

/** Starts one runner and resolves at its listening line; rejects, with its stderr, if it exits or stays silent first. */
export const startRunner = async (options: RunnerOptions): Promise<Runner> => {
  const runnerAddress = options.runnerAddress ?? `127.0.0.1:${await freePort()}`
  const args = [
    main, "serve", "--json", "--port", "0", "--cluster", options.cluster, "--runner-address", runnerAddress,
    ...(options.sessions === undefined ? [] : ["--sessions", String(options.sessions)]),
    ...(options.extraArgs ?? []),
    ...options.dirs
  ]
  // The same small environment as listeningCli in ./CapsuleDirs.ts, without its MURMUR_STORE=memory
  // (vitest's env sets it too): a runner's store is the cluster's.
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", CAPSULE_RUNTIME_CACHE_DIR: cliCacheDir, ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr!.setEncoding("utf8")
  child.stderr!.on("data", (chunk: string) => {
    stderr += chunk
    if (stderr.length > 2 * STDERR_KEEP) stderr = stderr.slice(-STDERR_KEEP)
  })
  const tail = () => stderr.slice(-STDERR_KEEP)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const alive = () => child.exitCode === null && child.signalCode === null

  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let stdout = ""
    let ready = false
    const fail = (why: string) => {
      clearTimeout(timer)
      if (alive()) child.kill("SIGKILL")
      reject(new Error(`runner ${runnerAddress} ${why}\nargs: ${args.slice(1).join(" ")}\nstderr:\n${tail()}`))
    }
    const timer = setTimeout(() => fail(`printed no listening line within ${options.readyTimeoutMs ?? 60_000} ms`), options.readyTimeoutMs ?? 60_000)
    child.stdout!.setEncoding("utf8")
    // Read stdout for the whole life of the child (not only up to the line), so a chatty runner never fills the pipe.
    child.stdout!.on("data", (chunk: string) => {
      if (ready) return
      stdout += chunk
      let end: number
      while (!ready && (end = stdout.indexOf("\n")) >= 0) {
        const line = stdout.slice(0, end).trim()
        stdout = stdout.slice(end + 1)
        if (line.length === 0) continue
        let parsed: Record<string, unknown>
        try {
          parsed = JSON.parse(line)
        } catch {
          return fail(`printed a line that is not JSON: ${line}`)
        }
        if (parsed["event"] === "listening") {
          ready = true
          clearTimeout(timer)
          resolve(parsed)
        } else if (parsed["event"] === "exit") {
          return fail(`failed to launch: ${line}`)
        }
      }
    })
    void exited.then((code) => {
      if (!ready) fail(`exited (${code ?? child.signalCode}) before listening`)
    })
  })

  const stop = async (signal: NodeJS.Signals = "SIGTERM", timeoutMs = 20_000): Promise<number | null> => {
    if (!alive()) return exited
    child.kill(signal)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        child.kill("SIGKILL")
        reject(new Error(`runner ${runnerAddress} did not exit within ${timeoutMs} ms of ${signal}; stderr:\n${tail()}`))
      }, timeoutMs)
    })
    try {
      return await Promise.race([exited, late])
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    url: String(listening["url"]),
    runnerAddress: typeof listening["runner"] === "string" ? listening["runner"] : runnerAddress,
    sessions: Array.isArray(listening["sessions"]) ? (listening["sessions"] as Array<RunnerSession>) : [],
    listening,
    pid: child.pid!,
    kill9: async () => {
      if (alive()) child.kill("SIGKILL")
      await exited
    },
    stop,
    stderr: tail,
    exited,
    alive
  }
}

export interface Fleet {
  readonly runners: Array<Runner>
  /** SIGKILLs every runner still alive (for afterEach). */
  readonly cleanup: () => Promise<void>
}

/**
 * Starts `n` runners one after the other: the first creates the cluster's tables, and parallel
 * starts would race on that. `options` may differ per runner (by index). If one fails to start,
 * those already up are killed before the error is thrown.
 */
export const startFleet = async (n: number, options: RunnerOptions | ((index: number) => RunnerOptions)): Promise<Fleet> => {
  const runners: Array<Runner> = []
  const cleanup = async () => {
    await Promise.all(runners.map((runner) => runner.kill9()))
  }
  try {
    for (let i = 0; i < n; i++) runners.push(await startRunner(typeof options === "function" ? options(i) : options))
  } catch (error) {
    await cleanup()
    throw error
  }
  return { runners, cleanup }
}

let nextId = 1

export interface JsonRpcResponse {
  readonly jsonrpc: "2.0"
  readonly id: string | number | null
  readonly result?: any
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown }
}

/** One JSON-RPC call; resolves with the parsed response body (a JSON-RPC error included), throws when the answer is not JSON. */
export const postRpc = async (
  url: string,
  method: string,
  params: unknown = {},
  options: { readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {}
): Promise<JsonRpcResponse> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  const text = await response.text()
  try {
    return JSON.parse(text) as JsonRpcResponse
  } catch {
    throw new Error(`${method} on ${url}: HTTP ${response.status}, not JSON: ${text.slice(0, 2_000)}`)
  }
}

export interface SseFrame {
  readonly id?: string
  readonly event?: string
  readonly data?: string
}

/** The stream was refused: not an SSE answer (a JSON-RPC error, a 4xx); `body` is what came instead. */
export class SseRefused extends Error {
  constructor(readonly status: number, readonly body: string) {
    super(`HTTP ${status}, not an event stream: ${body.slice(0, 2_000)}`)
  }
}

/**
 * A JSON-RPC call answered as SSE (`message/stream`, `tasks/resubscribe`, `stream/watch`), as
 * its events, comments and keep-alives left out. It returns when the server ends the stream and
 * throws when the connection breaks (the runner was killed) or `signal` aborts, so a test can
 * tell a finished stream from a lost one; leaving the loop early closes the connection. Resume
 * on another runner with `lastEventId`, sent as `Last-Event-ID`: the last `id` seen, skipping
 * frames without one (today's door opens `message/stream` and `tasks/resubscribe` with a task
 * snapshot that carries no id).
 */
export async function* sseFrames(
  url: string,
  method: string,
  params: unknown = {},
  options: { readonly lastEventId?: string; readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {}
): AsyncGenerator<SseFrame> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      ...(options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId }),
      ...options.headers
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    throw new SseRefused(response.status, await response.text())
  }
  for await (const event of sseEvents(response)) {
    // Keep-alive comments carry nothing a test reads.
    if (event.id === undefined && event.event === undefined && event.data === undefined) continue
    yield {
      ...(event.id === undefined ? {} : { id: String(event.id) }),
      ...(event.event === undefined ? {} : { event: event.event }),
      ...(event.data === undefined ? {} : { data: event.data })
    }
  }
}

