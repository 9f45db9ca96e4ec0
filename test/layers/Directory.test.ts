/**
 * `CapsuleRuntime.layerDirectory(dir)` behind `Door.layer`, the public layers for a capsule directory: examples/hello (an agent
 * capsule) served on 127.0.0.1:0 in process, one task driven over HTTP, the session's services
 * read from the layer's context. Needs `npm run build` (the shipped guests and the worker).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { CapsuleRuntime, Door, SessionIdentity, TaskRegistry } from "../../src/index.js"
import { rpc } from "../lib/Door.js"

const ROOT = resolve(import.meta.dirname, "../..")

describe("CapsuleRuntime.layerDirectory", () => {
  it.live("serves an agent capsule directory: its card, and one task end to end", () => {
    const workdir = mkdtempSync(join(tmpdir(), "capsule-session-"))
    return Effect.gen(function*() {
      const identity = yield* SessionIdentity
      assert.strictEqual(identity.card.name, "hello")
      assert.match(identity.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
      const reply: { result: { id: string; status: { state: string } } } = (yield* Effect.promise(() =>
        rpc(identity.url, "message/send", {
          message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "Ada" }] },
          configuration: { blocking: true }
        })
      )).body
      assert.strictEqual(reply.result.status.state, "completed")
      const task = yield* (yield* TaskRegistry).get(reply.result.id)
      assert.include(JSON.stringify(task.artifacts), "Ada")
    }).pipe(
      Effect.provide(Door.layer(CapsuleRuntime.layerDirectory(join(ROOT, "examples", "hello"), { workdir })).pipe(
        Layer.provide(Door.layerServer()),
        Layer.provide(CapsuleRuntime.layerHost)
      )),
      Effect.ensuring(Effect.sync(() => rmSync(workdir, { recursive: true, force: true })))
    )
  })
})
