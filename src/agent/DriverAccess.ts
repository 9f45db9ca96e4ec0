/**
 * How a driver reaches its provider (spec §3.3). A driver whose own manifest declares
 * `inference_auth` goes through the inference gateway: its endpoint is the placeholder
 * `http://127.0.0.1:9<upstream path>` and the host inserts the key on the way out, so the
 * guest never holds it. A driver without `inference_auth` (built for 0.2) keeps the 0.2
 * contract and reads `MURMUR_INFERENCE_API_KEY` itself; the launch warns that it does.
 */
import { Redacted } from "effect"
import type { InferenceGateway } from "../sandbox/GuestJob.js"
import { type InferenceAuth, KEY_PLACEHOLDER } from "../project/manifest/ArtifactManifest.js"
import { GATEWAY_AUTHORITY } from "../sandbox/host/GatewayRewrite.js"

export interface DriverAccess {
  /** Variables the driver gets on top of the runtime's (endpoint override, or the key). */
  readonly vars: Readonly<Record<string, string>>
  readonly gateway: InferenceGateway | undefined
  readonly warning: string | undefined
}

export const driverAccess = (
  driver: string,
  endpoint: string | undefined,
  apiKey: Redacted.Redacted<string> | undefined,
  auth: InferenceAuth | undefined
): DriverAccess => {
  if (auth === undefined || endpoint === undefined) {
    return {
      vars: apiKey === undefined ? {} : { MURMUR_INFERENCE_API_KEY: Redacted.value(apiKey) },
      gateway: undefined,
      warning: apiKey === undefined
        ? undefined
        : `warning[W-RUN-025]: driver '${driver}' declares no inference_auth, so it is given the API key in MURMUR_INFERENCE_API_KEY (the 0.2 contract); declare inference_auth to keep the key out of the guest`
    }
  }
  const upstream = new URL(endpoint)
  const path = upstream.pathname === "/" && !endpoint.endsWith("/") ? "" : upstream.pathname
  return {
    vars: { MURMUR_INFERENCE_ENDPOINT: `http://${GATEWAY_AUTHORITY}${path}${upstream.search}` },
    gateway: {
      scheme: upstream.protocol === "https:" ? "https" : "http",
      authority: upstream.host,
      header: auth.header,
      value: apiKey === undefined ? undefined : auth.value.replace(KEY_PLACEHOLDER, () => Redacted.value(apiKey))
    },
    warning: undefined
  }
}
