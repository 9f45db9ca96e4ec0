// (a) A capsule of your own: the session services around your `Capsule` layer, behind a door on the runtime's server.
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { CapsuleRuntime, Door, SessionIdentity, TaskRegistry } from "capsule-runtime"
import { Greeter, sendTask } from "./Greeter.js"

const program = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  const task = yield* sendTask(identity.url, "Ada")
  const registry = yield* TaskRegistry
  const stats = yield* registry.stats()
  yield* Console.log(JSON.stringify({ card: identity.card.name, url: identity.url, task, retained: stats.retained }))
})

const Session = Door.layer(CapsuleRuntime.layer({ tasks: { acceptance: "queue" } }).pipe(Layer.provide(Greeter("greeter")))).pipe(
  Layer.provide(Door.layerServer({ port: 0 }))
)

program.pipe(Effect.provide(Session), NodeRuntime.runMain)
