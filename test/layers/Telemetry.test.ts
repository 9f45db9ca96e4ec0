/**
 * OpenTelemetry over OTLP/HTTP: an in-process receiver on 127.0.0.1:0 takes what `serve
 * examples/hello` exports (OTEL_EXPORTER_OTLP_ENDPOINT) for one agent task sent with a
 * `traceparent`, and the span tree is checked: the caller's trace continues into `Door.request`,
 * the task (`TaskRunner.execute`, with its id and capsule), each agent turn with its driver and
 * tool calls, the guest runs (driver and tool) and the shell command beneath it. Without an endpoint nothing is set up at all.
 * Needs `npm run build` (dist/ and the shipped guests).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createInterface } from "node:readline"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { TelemetryLive, tracesUrl } from "../../src/layers/Telemetry.js"
import { TracingEnabled } from "../../src/services/Tracing.js"
import { until } from "../lib/CapsuleDirs.js"

const ROOT = resolve(import.meta.dirname, "../..")

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string; readonly intValue?: number } }>
}

const receiver = async () => {
  const spans: Array<Span> = []
  const server: Server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      if (request.url === "/v1/traces") {
        const parsed = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Span> }> }> }
        for (const resource of parsed.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise<void>((done) => server.close(() => done())) }
}

const attribute = (span: Span, key: string) => span.attributes.find((entry) => entry.key === key)?.value.stringValue

const runJson = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; lines: Array<Record<string, unknown>> }>((done) => {
    const child = spawn(process.execPath, [join(ROOT, "dist", "main.js"), ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    const lines: Array<Record<string, unknown>> = []
    createInterface({ input: child.stdout! }).on("line", (line) => line.startsWith("{") && lines.push(JSON.parse(line)))
    child.stderr!.resume()
    child.once("exit", (code) => done({ code, lines }))
  })

describe("TelemetryLive", () => {
  it.effect("is nothing without an endpoint: no exporter, tracing off", () =>
    Effect.gen(function*() {
      assert.isFalse(yield* TracingEnabled)
    }).pipe(Effect.provide(TelemetryLive().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map())))))))

  it("appends /v1/traces to a base endpoint only", () => {
    assert.strictEqual(tracesUrl("http://collector:4318"), "http://collector:4318/v1/traces")
    assert.strictEqual(tracesUrl("http://collector:4318/"), "http://collector:4318/v1/traces")
    assert.strictEqual(tracesUrl("http://collector:4318/v1/traces"), "http://collector:4318/v1/traces")
  })

  it("exports the span tree of one agent task, continuing the caller's traceparent", async () => {
    const otlp = await receiver()
    const workdir = mkdtempSync(join(tmpdir(), "otel-"))
    const child = spawn(process.execPath, [join(ROOT, "dist", "main.js"), "serve", join(ROOT, "examples", "hello"), "--json", "--workdir", workdir], {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stderr!.resume()
    try {
      const url = await new Promise<string>((done, fail) => {
        createInterface({ input: child.stdout! }).once("line", (line) => done(JSON.parse(line).url))
        child.once("exit", (code) => fail(new Error(`serve exited ${code}`)))
      })
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const callerSpan = "00f067aa0ba902b7"
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpan}-01` },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: { message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "Ada" }] }, configuration: { blocking: true } }
        })
      })
      const task = (await response.json()).result as { id: string; status: { state: string } }
      assert.strictEqual(task.status.state, "completed")
      // SIGTERM: the session ends and the exporter flushes what it holds before the process exits.
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
      child.kill("SIGTERM")
      assert.strictEqual(await exited, 0)
      // The last batch is posted before the process exits, but this receiver may still be reading
      // it when the exit is seen (a loaded machine): wait for it, a few seconds at most.
      await until(() => otlp.spans.some((span) => span.name === "Door.request"), "the exporter's last batch", 5_000).catch(() => undefined)

      const inTrace = otlp.spans.filter((span) => span.traceId === traceId)
      const byId = new Map(inTrace.map((span) => [span.spanId, span]))
      const ancestors = (span: Span): Array<string> => {
        const names: Array<string> = []
        for (let parent = span.parentSpanId; parent !== undefined && parent !== "" && byId.has(parent); parent = byId.get(parent)!.parentSpanId) {
          names.push(byId.get(parent)!.name)
        }
        return names
      }
      const door = inTrace.find((span) => span.name === "Door.request" && attribute(span, "http.request.method") === "POST")
      assert.isDefined(door, `spans: ${otlp.spans.map((span) => span.name).join(", ")}`)
      assert.strictEqual(door!.parentSpanId, callerSpan)
      const execute = inTrace.find((span) => span.name === "TaskRunner.execute")!
      assert.isDefined(execute)
      assert.strictEqual(execute.parentSpanId, door!.spanId)
      assert.strictEqual(attribute(execute, "taskId"), task.id)
      assert.strictEqual(attribute(execute, "capsule"), "hello")
      const guestRuns = inTrace.filter((span) => span.name === "Sandbox.run")
      assert.isAtLeast(guestRuns.length, 3, "two driver turns and the greet tool")
      for (const run of guestRuns) assert.include(ancestors(run), "TaskRunner.execute")
      const shell = inTrace.find((span) => span.name === "Shell.run")
      assert.isDefined(shell)
      assert.include(ancestors(shell!), "TaskRunner.execute")
      const turns = inTrace.filter((span) => span.name === "AgentLoop.turn")
      assert.deepStrictEqual(turns.map((span) => span.parentSpanId), [execute.spanId, execute.spanId])
      const drivers = inTrace.filter((span) => span.name === "AgentLoop.driver")
      assert.sameMembers(drivers.map((span) => span.parentSpanId!), turns.map((span) => span.spanId), "a driver call per turn, beneath it")
      const greet = inTrace.find((span) => span.name === "AgentLoop.tool" && attribute(span, "tool") === "greet")
      assert.isDefined(greet)
      assert.strictEqual(attribute(greet!, "outcome"), "passed")
      assert.include(ancestors(greet!), "TaskRunner.execute")
      assert.strictEqual(byId.get(greet!.parentSpanId!)?.name, "AgentLoop.turn")
      assert.include(guestRuns.flatMap((run) => ancestors(run)), "AgentLoop.tool")
    } finally {
      child.kill("SIGKILL")
      await otlp.close()
      rmSync(workdir, { recursive: true, force: true })
    }
  })

  it("a delegated child's task continues its parent's trace (TRACEPARENT), and the completion carries it back", async () => {
    const otlp = await receiver()
    const workdir = mkdtempSync(join(tmpdir(), "otel-"))
    try {
      const run = await runJson(["run", join(ROOT, "examples", "delegation"), "--task", "Ada", "--json", "--workdir", workdir], { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url })
      assert.strictEqual(run.code, 0)
      // The child exports from its own process: under load its batch can land after the parent's exit.
      const spanOf = (capsule: string, origin?: string) =>
        otlp.spans.some((span) => span.name === "TaskRunner.execute" && attribute(span, "capsule") === capsule && (origin === undefined || attribute(span, "origin") === origin))
      for (let waited = 0; waited < 30_000 && !(spanOf("hello") && spanOf("delegation", "completion")); waited += 100) {
        await new Promise((done) => setTimeout(done, 100))
      }
      const executes = otlp.spans.filter((span) => span.name === "TaskRunner.execute")
      const capsules = new Map<string, Set<string>>()
      for (const span of executes) capsules.set(attribute(span, "capsule")!, (capsules.get(attribute(span, "capsule")!) ?? new Set()).add(span.traceId))
      // The parent's first task, the child's task, and the completion task back in the parent.
      const parentTraces = capsules.get("delegation")!
      const childTraces = capsules.get("hello")!
      assert.isDefined(childTraces)
      const [childTrace] = [...childTraces]
      assert.isTrue(parentTraces.has(childTrace!), "the child's task is in a trace of the parent's")
      const completion = executes.find((span) => attribute(span, "capsule") === "delegation" && attribute(span, "origin") === "completion")
      assert.strictEqual(completion?.traceId, childTrace)
    } finally {
      await otlp.close()
      rmSync(workdir, { recursive: true, force: true })
    }
  }, 60_000)
})
