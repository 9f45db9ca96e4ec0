/**
 * A2A version negotiation (A2A 1.0 §3.6). A request names its version in the `A2A-Version`
 * header (or the query parameter of that name); absent or empty means 0.3, and a patch number is
 * ignored (`1.0.0` is 1.0). The door serves 0.3 (and the reference's dialect) and 1.0 from the
 * same services: the version decides only the wire.
 *
 * On `POST /` the method name decides which version answers (1.0's are PascalCase, 0.3's
 * `ns/verb`: the two sets are disjoint), so a 1.0 caller that leaves the header out and a 0.3
 * caller that sends `A2A-Version: 0.3` or `1.0` are both served; a version the door does not
 * speak is refused with 1.0's `VersionNotSupportedError` whatever the method.
 */
import type { IncomingHttpHeaders } from "node:http"
import { header } from "./Header.js"

export const supportedVersions = ["1.0", "0.3"] as const

export type Negotiated =
  | { readonly _tag: "Supported"; readonly version: "0.3" | "1.0" | undefined }
  | { readonly _tag: "Unsupported"; readonly requested: string }

const queryVersion = (url: string): string | undefined => {
  const at = url.indexOf("?")
  if (at < 0) return undefined
  return new URLSearchParams(url.slice(at + 1)).get("A2A-Version") ?? undefined
}

/** The version a request asks for: `undefined` when it names none (0.3 by the spec's rule). */
export const negotiate = (headers: IncomingHttpHeaders, url: string): Negotiated => {
  const named = (header(headers, "a2a-version") ?? queryVersion(url))?.trim()
  if (named === undefined || named.length === 0) return { _tag: "Supported", version: undefined }
  const majorMinor = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(named)
  const version = majorMinor === null ? named : `${Number(majorMinor[1])}.${Number(majorMinor[2])}`
  return version === "1.0" || version === "0.3" ? { _tag: "Supported", version } : { _tag: "Unsupported", requested: named }
}

/** 1.0's JSON-RPC methods (the gRPC rpc names); everything else on `POST /` is 0.3's or the reference's. */
export const v1Methods: ReadonlySet<string> = new Set([
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "ListTasks",
  "CancelTask",
  "SubscribeToTask",
  "CreateTaskPushNotificationConfig",
  "GetTaskPushNotificationConfig",
  "ListTaskPushNotificationConfigs",
  "DeleteTaskPushNotificationConfig",
  "GetExtendedAgentCard"
])

/** 1.0's methods are PascalCase: an unknown one is still answered in 1.0's error shape. */
export const speaksV1 = (method: string): boolean => v1Methods.has(method) || /^[A-Z][A-Za-z]+$/.test(method)
