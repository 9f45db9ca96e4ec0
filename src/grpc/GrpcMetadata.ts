/**
 * A gRPC call's metadata as the HTTP header record the door's checks read (../http/CallContext.ts):
 * gRPC keys are already lower-case, so `authorization`, `a2a-version`, `last-event-id` and the
 * `x-murmur-*` provenance headers mean over gRPC what they mean over HTTP. Binary (`-bin`) values
 * carry nothing the door reads and are left out; a key sent twice is joined with `, `, as Node
 * joins a repeated HTTP header.
 */
import type { IncomingHttpHeaders } from "node:http"
import type { Metadata } from "@grpc/grpc-js"

export const headersOf = (metadata: Metadata): IncomingHttpHeaders => {
  const headers: IncomingHttpHeaders = {}
  for (const [key, values] of Object.entries(metadata.toJSON())) {
    if (key.endsWith("-bin")) continue
    const texts = values.filter((value): value is string => typeof value === "string")
    if (texts.length > 0) headers[key] = texts.join(", ")
  }
  return headers
}
