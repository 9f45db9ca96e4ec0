/**
 * Whether spans leave the process (an OTLP endpoint is configured, src/layers/Telemetry.ts).
 * Work that costs something only to be traced (the door's per-request span) asks this first, so
 * a runtime without an endpoint pays nothing for it.
 */
import { Context, Effect, Option, Tracer } from "effect"

export class TracingEnabled extends Context.Reference<TracingEnabled>()("capsule-runtime/services/TracingEnabled", {
  defaultValue: () => false
}) {}

/**
 * W3C trace context (`traceparent`, `b3`) of the current span for an outbound call (a completion,
 * a peer's `message/send`, a child capsule's environment); empty outside a span.
 */
export const outgoingTraceHeaders: Effect.Effect<Readonly<Record<string, string>>> = Effect.map(
  Effect.serviceOption(Tracer.ParentSpan),
  (span): Readonly<Record<string, string>> =>
    Option.isNone(span) ? {} : { traceparent: `00-${span.value.traceId}-${span.value.spanId}-${span.value.sampled ? "01" : "00"}` }
)
