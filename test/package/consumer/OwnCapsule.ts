// (a) A host composes SessionLive with its own Capsule and drives a task over HTTP.
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { SessionIdentity, SessionLive, TaskRegistry } from "capsule-runtime"
import { Greeter, sendTask } from "./Greeter.js"

const program = Effect.gen(function*() {
  const identity = yield* SessionIdentity
  const task = yield* sendTask(identity.url, "Ada")
  const registry = yield* TaskRegistry
  const stats = yield* registry.stats()
  yield* Console.log(JSON.stringify({ card: identity.card.name, url: identity.url, task, retained: stats.retained }))
})

program.pipe(Effect.provide(SessionLive(Greeter("greeter"), { door: { port: 0 } })), NodeRuntime.runMain)
