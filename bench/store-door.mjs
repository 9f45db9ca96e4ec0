// Door for bench/door.mjs's `store` part: the built-in echo capsule (the scripted capsule the
// throughput rows use: `/complete`, `/forever`, docs/scripted-capsule.md) behind the door, with
// `--store memory|sqlite:<path>|postgres://…` applied as `serve <dir> --store …` applies it to a
// directory's session. `serve` without a directory (the echo capsule) opens no store at all, so
// this composes the same parts from dist/: the store layer (`storeLayer`, migrations at start, one
// process per SQLite file), the session claimed from it, its journal (group commit; nothing
// visible before it is committed) handed to the session, `Door.layer` + `Door.layerServer`, under
// the CLI's logging and telemetry layers and `NodeRuntime.runMain` (SIGTERM ends the session, its
// last changes committed). Session and door limits are `serve`'s defaults, but for the queue
// depth and active tasks, which bench/door.mjs raises for every door (`--max-active`,
// `--queue-depth`). With `--store memory` there is no journal: `serve`'s behaviour before the store.
// `--store journal-memory` (bench only): the durable path over table stores held in memory
// (`memoryStores`, what the tests of a restart in-process use): the journal, its group commit and
// "nothing visible before it is committed" as with SQLite, but no SQL: it splits the SQLite door's
// cost between the journal's path and the SQL writes.
// `--count-sql <file>`: counts what reaches SQLite (bench/sql-count.mjs; bench/store-count.mjs reads it).
// usage: node bench/store-door.mjs --store memory|journal-memory|sqlite:<path> [--max-active N] [--queue-depth N] [--port N] [--count-sql <file>]
// Prints {"event":"listening","url":...,"session_id":...,"store":...} on stdout like `serve --json`.
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Layer, Option } from "effect"
import { parseArgs } from "node:util"
import { CapsuleRuntime, Door, SessionIdentity } from "../dist/index.js"
import { LoggingLive } from "../dist/layers/Logging.js"
import { memoryStores, parseStore, SessionStores, storeLayer } from "../dist/layers/Store.js"
import { TelemetryLive } from "../dist/layers/Telemetry.js"
import { countSql } from "./sql-count.mjs"

const { values } = parseArgs({
  options: {
    store: { type: "string", default: "memory" },
    "max-active": { type: "string", default: "4" },
    "queue-depth": { type: "string", default: "32" },
    port: { type: "string", default: "0" },
    "count-sql": { type: "string" }
  }
})

if (values["count-sql"] !== undefined) countSql(values["count-sql"])

const spec = values.store === "journal-memory" ? Either.right({ _tag: "JournalMemory" }) : parseStore(values.store)
if (Either.isLeft(spec)) {
  console.error(spec.left)
  process.exit(2)
}

// `serve`'s defaults (src/cli/SessionFlags.ts `limits`), but for what the bench raises.
const tasks = { queueDepth: Number(values["queue-depth"]), maxActive: Number(values["max-active"]), retainTerminal: 1000, retainBytes: 256 * 1024 * 1024 }
const events = { capacityBytes: 16 * 1024 * 1024 }
const door = { host: "127.0.0.1", acceptance: "queue", maxBodyBytes: 1024 * 1024, maxWatchers: 64, blockingTimeoutMs: 20_000 }

const program = Effect.gen(function*() {
  // As src/layers/Directory.ts does for a directory: the session the store holds for this key
  // (a fresh store: a new one), and its journal over what the store held.
  const stores = yield* Effect.serviceOption(SessionStores)
  let session = { tasks, events }
  if (Option.isSome(stores)) {
    const store = stores.value
    const claimed = yield* store.claim({
      key: "bench:echo",
      capsuleName: "echo",
      capsuleVersion: "0.0.0",
      digest: "",
      options: JSON.stringify({ tasks, events })
    })
    const recovered = yield* store.load(claimed.sessionId)
    session = { ...session, sessionId: claimed.sessionId, journal: store.journal(claimed.sessionId, recovered) }
  }
  const served = Door.layer(CapsuleRuntime.layerEcho(session), door).pipe(Layer.provide(Door.layerServer({ ...door, port: Number(values.port) })))
  return yield* Effect.gen(function*() {
    const identity = yield* SessionIdentity
    yield* Effect.sync(() => process.stdout.write(`${JSON.stringify({ event: "listening", url: identity.url, session_id: identity.sessionId, store: values.store })}\n`))
    return yield* Effect.never
  }).pipe(Effect.scoped, Effect.provide(Layer.fresh(served)))
})

const layer = spec.right._tag === "Memory" ? undefined : spec.right._tag === "JournalMemory" ? memoryStores : storeLayer(spec.right)
program.pipe(
  (effect) => (layer === undefined ? effect : Effect.provide(effect, layer)),
  Effect.provide(NodeContext.layer),
  Effect.provide(TelemetryLive()),
  Effect.provide(LoggingLive()),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
