/**
 * The `queued` phase of a task (docs/trace.md, `task_start.queued_ms`): a task that waits behind
 * `max_active` is handed how long it waited, one that started at once 0; and when the request
 * that submitted it was traced, the wait is a `TaskRunner.queued` span under that request's span,
 * from submission to start. Spans are taken by a recording tracer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Tracer } from "effect"
import { servicesLayer } from "../../src/layers/Session.js"
import { Capsule, type TaskInput } from "../../src/services/Capsule.js"
import { echoInfo } from "../../src/services/EchoCapsule.js"
import { TaskRegistry } from "../../src/services/TaskRegistry.js"
import { TaskRunner } from "../../src/services/TaskRunner.js"

interface Ended {
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly start: bigint
  readonly end: bigint
  readonly attributes: ReadonlyMap<string, unknown>
}

const recordingTracer = (ended: Array<Ended>) => {
  let ids = 0
  return Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const attributes = new Map<string, unknown>()
      const spanId = `span${ids++}`
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId,
        traceId: Option.match(parent, { onNone: () => "trace", onSome: (p) => p.traceId }),
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes,
        links,
        sampled: true,
        kind,
        end: (endTime) => void ended.push({ name, parent, start: startTime, end: endTime, attributes }),
        attribute: (key, value) => void attributes.set(key, value),
        event: () => undefined,
        addLinks: () => undefined
      }
      return span
    },
    context: (f) => f()
  })
}

describe("TaskRunner: the queued phase", () => {
  it.live("a task behind max_active 1 gets the time it waited and a TaskRunner.queued span under its request; the first gets 0 and none", () => {
    const ended: Array<Ended> = []
    const seen = new Map<string, number | undefined>()
    const release = Effect.runSync(Deferred.make<void>())
    const capsule = Layer.succeed(Capsule, Capsule.of({
      info: echoInfo,
      run: (input: TaskInput) =>
        Effect.sync(() => seen.set(input.text, input.queuedMs)).pipe(
          Effect.zipRight(input.text === "first" ? Deferred.await(release) : Effect.void),
          Effect.as({ response: "ok" })
        )
    }))
    const request = Tracer.externalSpan({ traceId: "caller-trace", spanId: "request-span" })
    return Effect.gen(function*() {
      const runner = yield* TaskRunner
      const registry = yield* TaskRegistry
      const submit = (text: string, traced: boolean) => {
        const submitted = runner.submit({
          message: { role: "user", messageId: `m-${text}-${Math.random()}`, parts: [{ kind: "text", text }] },
          provenance: { origin: "user", trust: "trusted" },
          dialect: "a2a"
        })
        return Effect.map(traced ? Effect.provideService(submitted, Tracer.ParentSpan, request) : submitted, (a) => a.task.id)
      }
      const first = yield* submit("first", true)
      const second = yield* submit("second", true)
      const third = yield* submit("third", false)
      yield* Effect.sleep("30 millis")
      yield* Deferred.succeed(release, undefined)
      for (const id of [first, second, third]) yield* registry.awaitSettled(id)

      assert.strictEqual(seen.get("first"), 0)
      assert.isAtLeast(seen.get("second")!, 25)
      assert.isAtLeast(seen.get("third")!, 25)

      const queued = ended.filter((span) => span.name === "TaskRunner.queued")
      // Only the traced task that waited: not the one that started at once, not the untraced one.
      assert.deepStrictEqual(queued.map((span) => span.attributes.get("taskId")), [second])
      const span = queued[0]!
      assert.deepStrictEqual(Option.map(span.parent, (parent) => parent.spanId), Option.some("request-span"))
      const waitedMs = Number(span.end - span.start) / 1e6
      assert.isAtLeast(waitedMs, seen.get("second")!)
      assert.isBelow(waitedMs, seen.get("second")! + 1)
      // The wait ends before the task's own span begins (1 ms: the two clocks round differently);
      // how long the start itself takes under load is not this test's business.
      const execute = ended.find((s) => s.name === "TaskRunner.execute" && s.attributes.get("taskId") === second)!
      assert.isAtMost(Number(span.end - execute.start) / 1e6, 1)
    }).pipe(
      Effect.provide(servicesLayer(capsule, { tasks: { acceptance: "queue", queueDepth: 8, maxActive: 1 } })),
      Effect.withTracer(recordingTracer(ended))
    )
  })
})
