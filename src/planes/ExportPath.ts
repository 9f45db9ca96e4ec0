/**
 * A request path lowered to the components that may be joined onto an export root (door spec
 * §8.5), refusing everything else without touching the filesystem. Percent-decoding comes
 * first: validating before decoding is exactly what lets `%2e%2e%2f` through as an opaque
 * component the filesystem then reads as `../`. A path is refused, never repaired.
 */
import { Either } from "effect"

/** Decodes `%XX` escapes to bytes; an incomplete or non-hex escape stays as the literal bytes. */
export const percentDecode = (raw: string): Uint8Array => {
  const input = Buffer.from(raw, "utf8")
  const out: Array<number> = []
  for (let index = 0; index < input.length; index++) {
    const byte = input[index]!
    if (byte === 0x25 && index + 2 < input.length) {
      const pair = String.fromCharCode(input[index + 1]!, input[index + 2]!)
      if (/^[0-9a-fA-F]{2}$/.test(pair)) {
        out.push(parseInt(pair, 16))
        index += 2
        continue
      }
    }
    out.push(byte)
  }
  return Uint8Array.from(out)
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The components of `raw` (percent-encoded, relative to the export root), or `Left` for a path
 * that is empty, absolute, holds NUL, is not UTF-8, or has an empty, `.` or `..` component. One
 * trailing `/` is tolerated.
 */
export const exportComponents = (raw: string): Either.Either<ReadonlyArray<string>, "outside_root"> => {
  const bytes = percentDecode(raw)
  if (bytes.length === 0 || bytes.includes(0)) return Either.left("outside_root")
  let decoded: string
  try {
    decoded = utf8.decode(bytes)
  } catch {
    return Either.left("outside_root")
  }
  if (decoded.startsWith("/") || decoded.startsWith("\\")) return Either.left("outside_root")
  const trimmed = decoded.endsWith("/") ? decoded.slice(0, -1) : decoded
  const parts = trimmed.split("/")
  if (parts.some((part) => part === "" || part === "." || part === "..")) return Either.left("outside_root")
  return Either.right(parts)
}
