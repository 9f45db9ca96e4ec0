/**
 * Whether spans leave the process (an OTLP endpoint is configured, src/layers/Telemetry.ts).
 * Work that costs something only to be traced (the door's per-request span) asks this first, so
 * a runtime without an endpoint pays nothing for it.
 */
import { Context } from "effect"

export class TracingEnabled extends Context.Reference<TracingEnabled>()("capsule-runtime/services/TracingEnabled", {
  defaultValue: () => false
}) {}
