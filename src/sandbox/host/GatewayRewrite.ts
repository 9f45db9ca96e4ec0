/**
 * The 0.3 inference gateway (spec §3.3), inside the driver's worker: a request to
 * `http://127.0.0.1:9` (where nothing listens) is sent to the upstream endpoint instead, with
 * every header named like `inference_auth.header` dropped and the rendered auth header
 * inserted (and the turn's `traceparent`). The driver only ever sees the placeholder endpoint, never the key. An upstream's
 * redirect is not followed (the shim never does): the driver gets the 3xx as is, and the key goes
 * to the upstream's own authority only.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import type { InferenceGateway } from "../GuestJob.js"

export const GATEWAY_AUTHORITY = "127.0.0.1:9"

export const isGatewayRequest = (scheme: string | undefined, authority: string | undefined) =>
  scheme === "http" && authority === GATEWAY_AUTHORITY

const encoder = new TextEncoder()

/**
 * Points the shim's request at the upstream and sends it with the auth header swapped in. The
 * header list is overridden only for the duration of the synchronous send: the guest may still
 * hold the request's `fields`, and reading them afterwards must not reveal the key.
 */
export const sendThroughGateway = <A>(request: any, gateway: InferenceGateway, traceparent: string | undefined, send: () => A): A => {
  request.setScheme({ tag: gateway.scheme === "https" ? "HTTPS" : "HTTP" })
  request.setAuthority(gateway.authority)
  const fields = request.headers()
  const own = Object.prototype.hasOwnProperty.call(fields, "entries")
  const entries = fields.entries.bind(fields) as () => Array<[string, Uint8Array]>
  const header = gateway.header.toLowerCase()
  // The runtime's trace context replaces any the guest set: the provider's spans join the task's trace.
  const replaced = traceparent === undefined ? [header] : [header, "traceparent"]
  fields.entries = () => [
    ...entries().filter(([name]) => !replaced.includes(name.toLowerCase())),
    ...(gateway.value === undefined ? [] : [[gateway.header, encoder.encode(gateway.value)] as [string, Uint8Array]]),
    ...(traceparent === undefined ? [] : [["traceparent", encoder.encode(traceparent)] as [string, Uint8Array]])
  ]
  try {
    return send()
  } finally {
    if (own) fields.entries = entries
    else delete fields.entries
  }
}
