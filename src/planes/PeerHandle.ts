/**
 * Peer handles (door spec §8.4): `mh1.<base64url(payload JSON)>.<base64url(HMAC-SHA256)>`, the
 * payload `{"v":1,"iss","p","exp","n"}` in the clear, the MAC over `murmur-peer-handle-v1 ‖ 0x1f ‖
 * payload-b64 ‖ 0x1f ‖ audience` with a 32-byte key held in memory for the session (a restart
 * revokes every handle). The audience is covered but not carried: a token alone is not enough.
 * The MAC covers the audience in its canonical form (`canonicalAudience`), whatever a caller
 * passes, so minting and checking can never disagree over case or surrounding whitespace.
 * Check order is shape → MAC → payload → expiry, so a caller failing the MAC learns nothing, and
 * every MAC failure (tampered payload or tag, other issuer, wrong audience) is one outcome.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Either } from "effect"

const TAG = "mh1"
const DOMAIN = "murmur-peer-handle-v1"
const SEPARATOR = "\x1f"

export interface HandlePayload {
  readonly v: 1
  readonly iss: string
  /** Path relative to the peer export root, `/`-separated. */
  readonly p: string
  /** Expiry, unix milliseconds. */
  readonly exp: number
  /** 16 random bytes, lowercase hex. */
  readonly n: string
}

export type HandleError = "malformed_handle" | "handle_not_valid" | "handle_expired"

/** A session's minting key: 32 random bytes that never leave memory. */
export const newKey = (): Buffer => randomBytes(32)

/** What traces and error bodies carry instead of the token: the first 16 hex of its SHA-256. */
export const handleId = (token: string): string => createHash("sha256").update(token).digest("hex").slice(0, 16)

/**
 * The one form an audience is compared in: trimmed and lowercased (host names are case-blind,
 * and a card's `name` reaches the minter through a different hand than the header at redeem).
 */
export const canonicalAudience = (audience: string): string => audience.trim().toLowerCase()

const mac = (key: Buffer, payloadB64: string, audience: string): Buffer =>
  createHmac("sha256", key).update(`${DOMAIN}${SEPARATOR}${payloadB64}${SEPARATOR}${canonicalAudience(audience)}`, "utf8").digest()

export const mint = (key: Buffer, payload: Omit<HandlePayload, "v" | "n">, audience: string): string => {
  const full: HandlePayload = { v: 1, iss: payload.iss, p: payload.p, exp: payload.exp, n: randomBytes(16).toString("hex") }
  const payloadB64 = Buffer.from(JSON.stringify(full), "utf8").toString("base64url")
  return `${TAG}.${payloadB64}.${mac(key, payloadB64, audience).toString("base64url")}`
}

const B64URL = /^[A-Za-z0-9_-]+$/

/** The token's segments checked for shape alone (nothing about what the payload says). */
export const splitToken = (token: string): Either.Either<{ readonly payloadB64: string; readonly tag: Buffer }, "malformed_handle"> => {
  const parts = token.split(".")
  if (parts.length !== 3 || parts[0] !== TAG || !B64URL.test(parts[1]!) || !B64URL.test(parts[2]!)) return Either.left("malformed_handle")
  return Either.right({ payloadB64: parts[1]!, tag: Buffer.from(parts[2]!, "base64url") })
}

/** Verifies `token` for `audience` and this session (`iss`) at `now`. */
export const verify = (key: Buffer, token: string, audience: string, sessionId: string, now = Date.now()): Either.Either<HandlePayload, HandleError> =>
  Either.flatMap(splitToken(token), ({ payloadB64, tag }): Either.Either<HandlePayload, HandleError> => {
    const expected = mac(key, payloadB64, audience)
    // Constant time: a `==` over the bytes would leak the tag one byte at a time.
    if (tag.length !== expected.length || !timingSafeEqual(tag, expected)) return Either.left("handle_not_valid")
    let payload: HandlePayload
    try {
      payload = JSON.parse(Buffer.from(payloadB64, "base64url").toString("utf8")) as HandlePayload
    } catch {
      return Either.left("malformed_handle")
    }
    if (payload === null || typeof payload !== "object" || payload.v !== 1 || typeof payload.p !== "string" || typeof payload.exp !== "number") {
      return Either.left("malformed_handle")
    }
    if (payload.iss !== sessionId) return Either.left("handle_not_valid")
    if (payload.exp <= now) return Either.left("handle_expired")
    return Either.right(payload)
  })

/** The payload of a token this session did not mint, unverified: only ever a naming hint. */
export const unverifiedPayload = (token: string): Partial<HandlePayload> | undefined =>
  Either.match(splitToken(token), {
    onLeft: () => undefined,
    onRight: ({ payloadB64 }) => {
      try {
        const value = JSON.parse(Buffer.from(payloadB64, "base64url").toString("utf8"))
        return value !== null && typeof value === "object" ? value as Partial<HandlePayload> : undefined
      } catch {
        return undefined
      }
    }
  })

/** `<name>@<host:port>`, lowercased, from an agent card's `name` and `url` (with or without a scheme). */
export const audienceOf = (name: string, url: string): Either.Either<string, string> => {
  if (name.trim() === "") return Either.left("the agent card carries no 'name'")
  try {
    const parsed = new URL(url.includes("://") ? url : `http://${url}`)
    if (parsed.host === "") return Either.left(`the agent card's url '${url}' names no host`)
    return Either.right(canonicalAudience(`${name.trim()}@${parsed.host}`))
  } catch {
    return Either.left(`the agent card's url '${url}' is not a URL`)
  }
}
