/**
 * One request header's value, read verbatim (names are case-insensitive in Node's record; a
 * repeated header gives its last value).
 */
import type { IncomingHttpHeaders } from "node:http"

export const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[value.length - 1] : value
}
