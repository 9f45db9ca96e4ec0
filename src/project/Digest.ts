/**
 * The content digest a capsule project names its components by: the lockfile pins it, `inspect`
 * prints it, and the component cache keys its transpiled output by it.
 */
import { createHash } from "node:crypto"

const digests = new WeakMap<Uint8Array, string>()

/**
 * SHA-256 of the bytes, as lowercase hex. Remembered per buffer: a loaded project's components are
 * digested again by every session built from it (a fleet runner builds many), never changed in place.
 */
export const digestOf = (bytes: Uint8Array): string => {
  const known = digests.get(bytes)
  if (known !== undefined) return known
  const digest = createHash("sha256").update(bytes).digest("hex")
  digests.set(bytes, digest)
  return digest
}
