/**
 * Whether spans leave the process (an OTLP endpoint is configured, src/layers/Telemetry.ts).
 * Work that costs something only to be traced (the door's per-request span, a task's span) asks
 * this first, so a runtime without an endpoint pays nothing for it.
 */
import { Context, Effect, Option, Tracer } from "effect"

export class TracingEnabled extends Context.Reference<TracingEnabled>()("capsule-runtime/services/TracingEnabled", {
  defaultValue: () => false
}) {}

// Effect's own tracer, as a fiber has it when nothing provided another: its spans reach no one.
const nativeTracer = Effect.runSync(Effect.tracer)

/**
 * Whether spans made here reach anyone: tracing is enabled (an exporter is configured), or a
 * tracer other than Effect's own is in context (a host's or a test's). Read once when a service
 * is built; a span that exists only to be exported is not made when it is false.
 */
export const spansWanted: Effect.Effect<boolean> = Effect.zipWith(
  TracingEnabled,
  Effect.tracer,
  (enabled, tracer) => enabled || tracer !== nativeTracer
)

const traceparentPattern = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** A caller's W3C `traceparent` as a parent span (made by no tracer, exported by none); `undefined` if malformed. */
export const callerSpan = (traceparent: string | undefined): Tracer.ExternalSpan | undefined => {
  const match = traceparent === undefined ? null : traceparentPattern.exec(traceparent.trim().toLowerCase())
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined
  return Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: (Number.parseInt(match[3]!, 16) & 1) === 1 })
}

/**
 * W3C trace context (`traceparent`, `b3`) of the current span for an outbound call (a completion,
 * a peer's `message/send`, a child capsule's environment); empty outside a span.
 */
export const outgoingTraceHeaders: Effect.Effect<Readonly<Record<string, string>>> = Effect.map(
  Effect.serviceOption(Tracer.ParentSpan),
  (span): Readonly<Record<string, string>> =>
    Option.isNone(span) ? {} : { traceparent: `00-${span.value.traceId}-${span.value.spanId}-${span.value.sampled ? "01" : "00"}` }
)
