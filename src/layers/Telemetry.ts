/**
 * OpenTelemetry: the runtime's spans (door requests, tasks, guest runs, shell commands, trace
 * writes, delegations) exported over OTLP/HTTP (JSON) to `OTEL_EXPORTER_OTLP_ENDPOINT` (or a
 * capsule's `observability.otel_endpoint`; `/v1/traces` is appended to a base URL). Without an
 * endpoint this is `Layer.empty`: no exporter, no per-request span, nothing to pay. The exporter
 * (`@effect/opentelemetry`'s OtlpTracer, an optional peer of the package) is loaded only then.
 */
import { FetchHttpClient } from "@effect/platform"
import { Config, Effect, Layer, Option } from "effect"
import { TracingEnabled } from "../services/Tracing.js"

/** `http://host:4318` → `http://host:4318/v1/traces`; a URL already naming `/v1/traces` is kept. */
export const tracesUrl = (endpoint: string): string => {
  const trimmed = endpoint.trim().replace(/\/+$/, "")
  return trimmed.endsWith("/v1/traces") ? trimmed : `${trimmed}/v1/traces`
}

/** Exports spans when `endpoint` (else `OTEL_EXPORTER_OTLP_ENDPOINT`) is set; `Layer.empty` otherwise. */
export const TelemetryLive = (endpoint?: string) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const configured = endpoint ?? Option.getOrUndefined(yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")))
    if (configured === undefined || configured.trim() === "") return Layer.empty
    const serviceName = Option.getOrElse(yield* Config.option(Config.string("OTEL_SERVICE_NAME")), () => "capsule-runtime")
    const [OtlpTracer, OtlpSerialization] = yield* Effect.promise(() => Promise.all([import("@effect/opentelemetry/OtlpTracer"), import("@effect/opentelemetry/OtlpSerialization")]))
    // A one-shot run's last spans (its final task's) are sent by the export at shutdown: the
    // default 3 s for it was cut short on a loaded host and they were lost.
    const tracer = OtlpTracer.layer({ url: tracesUrl(configured), resource: { serviceName, serviceVersion: "0.1.0" }, exportInterval: "1 second", shutdownTimeout: "10 seconds" }).pipe(
      Layer.provide(Layer.merge(FetchHttpClient.layer, OtlpSerialization.layerJson))
    )
    return Layer.merge(tracer, Layer.succeed(TracingEnabled, true))
  })).pipe(Layer.orDie)
