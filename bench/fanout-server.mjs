// Door for the SSE fan-out bench: the production session (`Door.layer(CapsuleRuntime.layer())`:
// services, EventLog, door router and server) with a bench-only capsule instead of the scripted
// one. Its only command, `stamp <count> <everyMs> <batch>`, emits `count` text chunks, `batch`
// at a time every `everyMs`, each chunk being `process.hrtime.bigint()` taken right before the
// chunk is handed to the task's io (which publishes it to the EventLog). CLOCK_MONOTONIC is
// shared by all processes on the machine, so an observer process can subtract the stamp from its
// own arrival time: delivery latency = emit → observer, with no hook in production code.
// Prints {"event":"listening","url":...} on stdout like `capsule-runtime serve --json`.
import { Duration, Effect, Fiber, Layer } from "effect"
import { Capsule, CapsuleRuntime, Door, SessionIdentity } from "../dist/index.js"

const info = {
  name: "bench-stamp",
  version: "0.0.0",
  description: "emits monotonic-clock stamps as text chunks",
  tools: [],
  shell: false,
  network: false,
  conversationMode: "stateless"
}

const StampCapsule = Layer.succeed(Capsule, Capsule.of({
  info,
  run: (input, io) =>
    Effect.gen(function*() {
      const [, n = "10", every = "10", batch = "1"] = input.text.trim().split(/\s+/)
      const count = Number(n), everyMs = Number(every), per = Math.max(1, Number(batch))
      for (let i = 0; i < count;) {
        for (let b = 0; b < per && i < count; b++, i++) yield* io.text(`${process.hrtime.bigint()} `)
        if (i < count && everyMs > 0) yield* Effect.sleep(Duration.millis(everyMs))
      }
      return { response: "" }
    })
}))

const port = Number(process.argv[2] ?? 0)
const program = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  process.stdout.write(`${JSON.stringify({ event: "listening", url: identity.url, session_id: identity.sessionId })}\n`)
  return yield* Effect.never
}).pipe(Effect.provide((() => {
  const door = { port, acceptance: "queue", maxWatchers: 100_000 }
  return Door.layer(CapsuleRuntime.layer({ tasks: { queueDepth: 1000, maxActive: 1000 } }).pipe(Layer.provide(StampCapsule)), door).pipe(
    Layer.provide(Door.layerServer(door))
  )
})()))

const fiber = Effect.runFork(program)
const stop = () => Effect.runPromise(Fiber.interrupt(fiber)).then(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
