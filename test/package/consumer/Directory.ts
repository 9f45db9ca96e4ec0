// (b) What `capsule-runtime serve <dir>` is: a capsule directory on the runtime's hardened Node server.
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { CapsuleRuntime, Door, SessionIdentity } from "capsule-runtime"
import { sendTask } from "./Greeter.js"

const Session = Door.layer(CapsuleRuntime.layerDirectory("node_modules/capsule-runtime/examples/hello")).pipe(
  Layer.provide(Door.layerServer({ port: 0 })),
  Layer.provide(CapsuleRuntime.layerHost)
)

const program = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  const task = yield* sendTask(identity.url, "Ada")
  yield* Console.log(JSON.stringify({ card: identity.card.name, url: identity.url, task }))
})

program.pipe(Effect.provide(Session), NodeRuntime.runMain)
