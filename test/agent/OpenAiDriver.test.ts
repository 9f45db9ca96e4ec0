/**
 * The OpenAI-compatible driver (drivers/openai), built from source with componentize-js and
 * run as a tool guest in a real worker against a fake provider: the request it sends (message
 * and tool mapping, model, max_tokens, Authorization only with a key), the response it returns
 * (end_turn, tool calls, max_tokens, usage), streaming (chunks in order, as they arrive), and
 * failures (HTTP 500, a network grant that does not allow the provider, a refused connection,
 * a provider slower than the deadline). The build is skipped while its stamp matches.
 */
import { Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DriverRequest } from "../../src/agent/DriverProtocol.js"
import { buildGuest, shippedGuest } from "../../src/build/ShippedGuests.js"
import { ComponentCache, type CompiledComponent } from "../../src/sandbox/component/ComponentCache.js"
import type { GuestGrant, ToolResultData } from "../../src/sandbox/GuestJob.js"
import type { NetworkRule } from "../../src/project/NetworkMatch.js"
import { type GuestHost, type GuestTemplate, Sandbox, silentHost } from "../../src/sandbox/Sandbox.js"
import { chunk, completion, type FakeProvider, type Reply, startFakeProvider, usageChunk } from "../lib/FakeProvider.js"

const limits = { memoryBytes: 256 * 1024 * 1024, tableElements: 100_000 }
const runtime = ManagedRuntime.make(Layer.merge(ComponentCache.layer({ directory: new URL("../../.cache/cli-components", import.meta.url).pathname }), Sandbox.layer()))

let provider: FakeProvider
let component: CompiledComponent
const workdirs: Array<string> = []

beforeAll(async () => {
  const built = await buildGuest(shippedGuest("drivers/openai"))
  provider = await startFakeProvider()
  component = await runtime.runPromise(Effect.flatMap(ComponentCache, (cache) => cache.load(new Uint8Array(readFileSync(built.file)), limits)))
}, 300_000)

afterAll(async () => {
  await runtime.dispose()
  await provider?.close()
  for (const dir of workdirs) rmSync(dir, { recursive: true, force: true })
})

const allowProvider = (): ReadonlyArray<NetworkRule> => [{ scheme: "http", host: "127.0.0.1", port: provider.port }]

interface Drive {
  readonly env?: Record<string, string>
  readonly network?: ReadonlyArray<NetworkRule>
  readonly gateway?: GuestGrant["gateway"]
  readonly deadlineSeconds?: number
  readonly traceparent?: string
}

interface Driven {
  readonly result: ToolResultData
  readonly response: any
  readonly chunks: ReadonlyArray<{ readonly kind: "text" | "thinking"; readonly text: string; readonly at: number }>
}

/** What the agent loop knows of a driver run before its call (a warm pool's key). */
const driverTemplate = (options: Drive, workdir: string): GuestTemplate => ({
  role: { kind: "tool", name: "openai" },
  component,
  grant: {
    preopen: workdir,
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_MODEL: "fake-model", ...options.env },
    network: options.network ?? allowProvider(),
    memoryBytes: limits.memoryBytes,
    instances: 1000,
    ...(options.gateway === undefined ? {} : { gateway: options.gateway })
  },
  allowlist: [],
  tools: {},
  inTask: true,
  sessionId: "ses_openai_driver",
  artifacts: []
})

const scratch = () => {
  const workdir = mkdtempSync(join(tmpdir(), "openai-driver-"))
  workdirs.push(workdir)
  return workdir
}

/** Runs the driver once as the agent loop does (a tool run inside a task) and decodes its data. */
const drive = (request: DriverRequest, replies: ReadonlyArray<Reply>, options: Drive = {}, template = driverTemplate(options, scratch())): Promise<Driven> => {
  provider.script(replies)
  const chunks: Array<{ kind: "text" | "thinking"; text: string; at: number }> = []
  const host: GuestHost = {
    ...silentHost,
    text: (text) => Effect.sync(() => void chunks.push({ kind: "text", text, at: Date.now() })),
    thinking: (text) => Effect.sync(() => void chunks.push({ kind: "thinking", text, at: Date.now() }))
  }
  return runtime.runPromise(Effect.gen(function*() {
    const sandbox = yield* Sandbox
    const outcome = yield* sandbox.run({
      ...template,
      deadlineSeconds: options.deadlineSeconds ?? 30,
      input: { data: JSON.stringify(request) },
      host,
      traceparent: options.traceparent
    })
    const result = outcome.result!
    return { result, response: JSON.parse(result.data ?? "null"), chunks }
  }))
}

const request = (fields: Partial<DriverRequest> = {}): DriverRequest => ({
  model: "request-model",
  max_tokens: 512,
  messages: [{ role: "user", content: [{ type: "text", text: "What is in the box?" }] }],
  tools: [],
  params: {},
  system: "[Capsule]\nname: demo",
  ...fields
})

const conversation: DriverRequest["messages"] = [
  { role: "user", content: [{ type: "text", text: "List the files." }] },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "I should look.", signature: "sig" },
      { type: "text", text: "Looking." },
      { type: "tool_call", id: "call_a", name: "ls", input: { path: "." } }
    ]
  },
  { role: "tool", tool_call_id: "call_a", is_error: false, content: [{ type: "text", text: "a.txt\nb.txt" }] },
  { role: "assistant", content: [{ type: "tool_call", id: "call_b", name: "cat", input: { file: "a.txt" } }] },
  { role: "tool", tool_call_id: "call_b", is_error: true, content: [{ type: "text", text: "no such file" }] }
]

const tools: DriverRequest["tools"] = [
  { name: "cat", description: "Print a file", parameters: { type: "object", properties: { file: { type: "string" } }, required: ["file"] } },
  { name: "ls", parameters: { type: "object", properties: {} } }
]

describe("openai driver", () => {
  it("maps the request onto chat/completions and an answer onto end_turn with usage", async () => {
    const { response, result } = await drive(request({ messages: conversation, tools, max_tokens: 777 }), [
      { kind: "json", body: completion({ text: "a.txt holds nothing.", finish: "stop", usage: { prompt_tokens: 42, completion_tokens: 7 } }) }
    ])
    expect(result.status).toBe("passed")
    expect(response).toEqual({ stop_reason: "end_turn", content: [{ type: "text", text: "a.txt holds nothing." }], usage: { input_tokens: 42, output_tokens: 7 } })
    expect(provider.requests).toHaveLength(1)
    const seen = provider.requests[0]!
    expect(seen.method).toBe("POST")
    expect(seen.path).toBe("/v1/chat/completions")
    expect(seen.headers["content-type"]).toBe("application/json")
    expect(seen.headers.authorization).toBeUndefined()
    expect(seen.body).toEqual({
      model: "fake-model",
      max_tokens: 777,
      messages: [
        { role: "system", content: "[Capsule]\nname: demo" },
        { role: "user", content: "List the files." },
        { role: "assistant", content: "Looking.", tool_calls: [{ id: "call_a", type: "function", function: { name: "ls", arguments: "{\"path\":\".\"}" } }] },
        { role: "tool", tool_call_id: "call_a", content: "a.txt\nb.txt" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_b", type: "function", function: { name: "cat", arguments: "{\"file\":\"a.txt\"}" } }] },
        { role: "tool", tool_call_id: "call_b", content: "no such file" }
      ],
      tools: [
        { type: "function", function: { name: "cat", description: "Print a file", parameters: tools[0]!.parameters } },
        { type: "function", function: { name: "ls", parameters: { type: "object", properties: {} } } }
      ]
    })
  })

  it("sends Authorization only with a key, takes the request's model without MURMUR_INFERENCE_MODEL, and applies the config", async () => {
    await drive(request(), [{ kind: "json", body: completion({ text: "ok" }) }], {
      env: { MURMUR_INFERENCE_API_KEY: "sk-test-123", MURMUR_INFERENCE_MODEL: "", MURMUR_INFERENCE_DRIVER_CONFIG: "{\"temperature\":0.25,\"max_tokens_param\":\"max_completion_tokens\"}" }
    })
    const seen = provider.requests[0]!
    expect(seen.headers.authorization).toBe("Bearer sk-test-123")
    expect(seen.body.model).toBe("request-model")
    expect(seen.body.temperature).toBe(0.25)
    expect(seen.body.max_completion_tokens).toBe(512)
    expect(seen.body.max_tokens).toBeUndefined()
    expect(seen.body.tools).toBeUndefined()
  })

  it("returns tool calls with their ids, names and parsed input", async () => {
    const { response } = await drive(request({ tools }), [{
      kind: "json",
      body: completion({
        toolCalls: [
          { id: "call_1", name: "ls", arguments: "{}" },
          { id: "call_2", name: "cat", arguments: "{\"file\":\"b.txt\"}" }
        ],
        finish: "tool_calls",
        usage: { prompt_tokens: 10, completion_tokens: 3 }
      })
    }])
    expect(response).toEqual({
      stop_reason: "tool_call",
      content: [
        { type: "tool_call", id: "call_1", name: "ls", input: {} },
        { type: "tool_call", id: "call_2", name: "cat", input: { file: "b.txt" } }
      ],
      usage: { input_tokens: 10, output_tokens: 3 }
    })
  })

  it("maps finish_reason length to max_tokens", async () => {
    const { response } = await drive(request(), [{ kind: "json", body: completion({ text: "The box holds", finish: "length" }) }])
    expect(response.stop_reason).toBe("max_tokens")
    expect(response.content).toEqual([{ type: "text", text: "The box holds" }])
  })

  it("streams: each content delta becomes a chunk, in order, as it arrives", async () => {
    const deltas = ["The ", "box ", "holds ", "a cat."]
    const { response, chunks } = await drive(request(), [{
      kind: "stream",
      gapMs: 150,
      events: [chunk({ role: "assistant", content: "" }), ...deltas.map((content) => chunk({ content })), chunk({}, "stop"), usageChunk(12, 4)]
    }], { env: { MURMUR_INFERENCE_DRIVER_CONFIG: "{\"stream\":true}" } })
    expect(provider.requests[0]!.body.stream).toBe(true)
    expect(provider.requests[0]!.body.stream_options).toEqual({ include_usage: true })
    expect(provider.requests[0]!.headers.accept).toBe("text/event-stream")
    expect(chunks.map((c) => c.text)).toEqual(deltas)
    expect(chunks.every((c) => c.kind === "text")).toBe(true)
    // The first chunk reached the host before the provider had sent the rest of the stream.
    expect(chunks[0]!.at).toBeLessThan(provider.sentAt[provider.sentAt.length - 1]!)
    expect(response).toEqual({ stop_reason: "end_turn", content: [{ type: "text", text: "The box holds a cat." }], usage: { input_tokens: 12, output_tokens: 4 } })
  })

  it("streams tool calls: fragments are joined by index", async () => {
    const { response, chunks } = await drive(request({ tools }), [{
      kind: "stream",
      events: [
        chunk({ role: "assistant", content: "Let me check." }),
        chunk({ tool_calls: [{ index: 0, id: "call_x", type: "function", function: { name: "cat", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 1, id: "call_y", type: "function", function: { name: "ls", arguments: "{" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"fi" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: "le\":\"a.txt\"}" } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: "}" } }] }),
        chunk({}, "tool_calls")
      ]
    }], { env: { MURMUR_INFERENCE_DRIVER_CONFIG: "{\"stream\":true}" } })
    expect(chunks.map((c) => c.text)).toEqual(["Let me check."])
    expect(response).toEqual({
      stop_reason: "tool_call",
      content: [
        { type: "text", text: "Let me check." },
        { type: "tool_call", id: "call_x", name: "cat", input: { file: "a.txt" } },
        { type: "tool_call", id: "call_y", name: "ls", input: {} }
      ]
    })
  })

  it("passes reasoning on as thinking: a block in the response, thinking chunks when streamed", async () => {
    const plain = await drive(request(), [{ kind: "json", body: { choices: [{ message: { role: "assistant", content: "42", reasoning_content: "Count them." }, finish_reason: "stop" }] } }])
    expect(plain.response.content).toEqual([{ type: "thinking", thinking: "Count them." }, { type: "text", text: "42" }])
    const streamed = await drive(request(), [{
      kind: "stream",
      events: [chunk({ reasoning_content: "Count " }), chunk({ reasoning_content: "them." }), chunk({ content: "42" }), chunk({}, "stop")]
    }], { env: { MURMUR_INFERENCE_DRIVER_CONFIG: "{\"stream\":true}" } })
    expect(streamed.chunks.map((c) => [c.kind, c.text])).toEqual([["thinking", "Count "], ["thinking", "them."], ["text", "42"]])
    expect(streamed.response.content).toEqual([{ type: "thinking", thinking: "Count them." }, { type: "text", text: "42" }])
  })

  it("answers an HTTP 500 with stop_reason error naming the status and the provider's message", async () => {
    const { result, response } = await drive(request(), [{ kind: "error", status: 500, body: JSON.stringify({ error: { message: "model exploded", type: "server_error" } }) }])
    expect(result.status).toBe("passed")
    expect(response.stop_reason).toBe("error")
    expect(response.error).toBe(`inference provider answered HTTP 500 for POST ${provider.url}/chat/completions: model exploded`)
  })

  it("answers a provider the network grant does not allow with a clear error, before any connection", async () => {
    const { response } = await drive(request(), [{ kind: "json", body: completion({ text: "unreachable" }) }], { network: [{ host: "api.openai.com" }] })
    expect(response.stop_reason).toBe("error")
    expect(response.error).toBe(
      `request to ${provider.url}/chat/completions was denied by the network grant (HTTP-request-denied); allow its host in capabilities.network.allow`
    )
    expect(provider.requests).toHaveLength(0)
  })

  it("answers a refused connection with a clear error", async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const free = (probe.address() as { port: number }).port
        probe.close(() => resolve(free))
      })
    })
    const { response } = await drive(request(), [], {
      env: { MURMUR_INFERENCE_ENDPOINT: `http://127.0.0.1:${port}/v1` },
      network: [{ scheme: "http", host: "127.0.0.1", port }]
    })
    expect(response.stop_reason).toBe("error")
    expect(response.error).toBe(`request to http://127.0.0.1:${port}/v1/chat/completions failed: connection-refused`)
  })

  it("a provider slower than the deadline ends the run with the deadline error, and the worker with it", async () => {
    const started = Date.now()
    await expect(drive(request(), [{ kind: "json", body: completion({ text: "late" }), delayMs: 5_000 }], { deadlineSeconds: 1 })).rejects.toThrow(
      "tool 'openai' exceeded its 1s execution deadline"
    )
    expect(Date.now() - started).toBeLessThan(4_000)
    expect(await runtime.runPromise(Effect.flatMap(Sandbox, (sandbox) => sandbox.liveWorkers()))).toBe(0)
  })

  it("through the inference gateway: no key in the guest, none sent by it; the host inserts the auth header", async () => {
    await drive(request(), [{ kind: "json", body: completion({ text: "via gateway" }) }], {
      env: { MURMUR_INFERENCE_ENDPOINT: "http://127.0.0.1:9/v1" },
      gateway: { scheme: "http", authority: `127.0.0.1:${provider.port}`, header: "Authorization", value: "Bearer sk-host-only" }
    })
    const seen = provider.requests[0]!
    expect(seen.path).toBe("/v1/chat/completions")
    expect(seen.headers.authorization).toBe("Bearer sk-host-only")
    expect(seen.headers.traceparent).toBeUndefined()
  })

  it("through the inference gateway with a turn's trace context: the provider gets that traceparent", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    await drive(request(), [{ kind: "json", body: completion({ text: "traced" }) }], {
      env: { MURMUR_INFERENCE_ENDPOINT: "http://127.0.0.1:9/v1" },
      gateway: { scheme: "http", authority: `127.0.0.1:${provider.port}`, header: "Authorization", value: undefined },
      traceparent
    })
    const seen = provider.requests[0]!
    expect(seen.headers.traceparent).toBe(traceparent)
    expect(seen.headers.authorization).toBeUndefined()
  })

  it("a driver held in a warm pool takes each run's traceparent with its input: tracing never splits the pool", async () => {
    const gateway = { scheme: "http" as const, authority: `127.0.0.1:${provider.port}`, header: "Authorization", value: undefined }
    const options = { env: { MURMUR_INFERENCE_ENDPOINT: "http://127.0.0.1:9/v1" }, gateway }
    const template = driverTemplate(options, scratch())
    const sandbox = await runtime.runPromise(Sandbox)
    const pool = await runtime.runPromise(Scope.make())
    try {
      await runtime.runPromise(sandbox.warm(template, 1).pipe(Scope.extend(pool)))
      const idle = async (n: number) => {
        for (let tries = 0; (await runtime.runPromise(sandbox.idleWorkers())) !== n; tries++) {
          if (tries > 300) throw new Error(`never ${n} idle workers`)
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
      for (const span of ["00f067aa0ba902b7", "b7ad6b7169203331"]) {
        await idle(1)
        const traceparent = `00-4bf92f3577b34da6a3ce929d0e0e4736-${span}-01`
        provider.script([{ kind: "json", body: completion({ text: "held" }), delayMs: 300 }])
        const running = runtime.runPromise(sandbox.run({ ...template, deadlineSeconds: 30, input: { data: JSON.stringify(request()) }, host: silentHost, traceparent }))
        // The run took the held worker: none idle until its replacement starts, after the run.
        await idle(0)
        expect((await running).result?.status).toBe("passed")
        expect(provider.requests.at(-1)!.headers.traceparent).toBe(traceparent)
      }
    } finally {
      await runtime.runPromise(Scope.close(pool, Exit.void))
    }
  })

  it("leaks nothing of the host's environment or other grant variables into the request or the response", async () => {
    const hostSecret = "sk-host-secret-should-not-leak"
    process.env.OPENAI_API_KEY = hostSecret
    try {
      const { result } = await drive(request(), [{ kind: "json", body: completion({ text: "fine" }) }], { env: { UNRELATED_GRANTED: "granted-marker-value" } })
      const seen = provider.requests[0]!
      const wire = JSON.stringify(seen.headers) + seen.raw
      expect(wire).not.toContain(hostSecret)
      expect(wire).not.toContain("granted-marker-value")
      expect(JSON.stringify(result)).not.toContain(hostSecret)
      expect(Object.keys(seen.headers).sort()).toEqual(["accept", "connection", "content-type", "host", "transfer-encoding"])
    } finally {
      delete process.env.OPENAI_API_KEY
    }
  })
})
