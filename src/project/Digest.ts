/**
 * The content digest a capsule project names its components by: the lockfile pins it, `inspect`
 * prints it, and the component cache keys its transpiled output by it.
 */
import { createHash } from "node:crypto"

/** SHA-256 of the bytes, as lowercase hex. */
export const digestOf = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")
