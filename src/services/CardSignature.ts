/**
 * Agent card signatures (A2A 1.0 §8.4): a JWS (RFC 7515) with a detached payload over the card
 * canonicalized as the official SDK does it — the card's ProtoJSON without `signatures`, every
 * empty string, list and object dropped, keys sorted (RFC 8785 JCS) — so the SDK's
 * `verifyAgentCardSignature` accepts it. The card given must already be in ProtoJSON's normal
 * form (no default-valued plain fields), as ./AgentCard.ts's 1.0 card is. The key is the
 * operator's; its algorithm follows from it: ES256/ES384/ES512 for P-256/384/521, EdDSA for
 * Ed25519, RS256 for RSA.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto"

export interface CardSigner {
  readonly key: KeyObject
  /** The protected header's `kid`: how a verifier finds the public key. */
  readonly kid: string
  /** Where the verifier may fetch the key set (`jku`), when the operator publishes one. */
  readonly jku?: string | undefined
}

const cleanEmpty = (value: unknown): unknown => {
  if (value === "" || value === null || value === undefined) return undefined
  if (Array.isArray(value)) {
    const kept = value.map(cleanEmpty).filter((entry) => entry !== undefined)
    return kept.length > 0 ? kept : undefined
  }
  if (typeof value === "object") {
    const kept: Record<string, unknown> = {}
    for (const [key, entry] of Object.entries(value)) {
      const cleaned = cleanEmpty(entry)
      if (cleaned !== undefined) kept[key] = cleaned
    }
    return Object.keys(kept).length > 0 ? kept : undefined
  }
  return value
}

const jcs = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`
  const record = value as Record<string, unknown>
  return `{${Object.keys(record).sort().map((key) => `${JSON.stringify(key)}:${jcs(record[key])}`).join(",")}}`
}

/** The bytes a card's signatures cover. */
export const canonicalCard = (card: object): string => {
  const { signatures: _signatures, ...rest } = card as { signatures?: unknown }
  const cleaned = cleanEmpty(rest)
  return cleaned === undefined ? "{}" : jcs(cleaned)
}

const algorithmOf = (key: KeyObject): { readonly alg: string; readonly hash: string | null; readonly ieee: boolean } => {
  switch (key.asymmetricKeyType) {
    case "ed25519":
      return { alg: "EdDSA", hash: null, ieee: false }
    case "rsa":
      return { alg: "RS256", hash: "sha256", ieee: false }
    case "ec": {
      const curve = key.asymmetricKeyDetails?.namedCurve
      if (curve === "prime256v1") return { alg: "ES256", hash: "sha256", ieee: true }
      if (curve === "secp384r1") return { alg: "ES384", hash: "sha384", ieee: true }
      if (curve === "secp521r1") return { alg: "ES512", hash: "sha512", ieee: true }
      throw new Error(`the card signing key's curve ${curve ?? "(unknown)"} has no JWS algorithm; use P-256, P-384 or P-521`)
    }
    default:
      throw new Error(`a ${key.asymmetricKeyType ?? "symmetric"} key cannot sign cards; use an EC (P-256), Ed25519 or RSA private key`)
  }
}

const b64url = (bytes: Buffer | string) => Buffer.from(bytes).toString("base64url")

/** A signer from a PEM private key; `kid` defaults to the key's SHA-256 (of its public SPKI). */
export const makeCardSigner = (pem: string, kid?: string, jku?: string): CardSigner => {
  const key = createPrivateKey(pem)
  algorithmOf(key)
  const fingerprint = createHash("sha256").update(createPublicKey(key).export({ type: "spki", format: "der" })).digest("base64url")
  return { key, kid: kid ?? fingerprint, ...(jku === undefined ? {} : { jku }) }
}

/** The card with one signature more, over its canonical form. */
export const signCard = <Card extends object>(card: Card, signer: CardSigner): Card & { readonly signatures: ReadonlyArray<object> } => {
  const { alg, hash, ieee } = algorithmOf(signer.key)
  const header = b64url(JSON.stringify({ alg, kid: signer.kid, typ: "JOSE", ...(signer.jku === undefined ? {} : { jku: signer.jku }) }))
  const input = `${header}.${b64url(canonicalCard(card))}`
  const signature = sign(hash, Buffer.from(input), ieee ? { key: signer.key, dsaEncoding: "ieee-p1363" } : signer.key)
  const previous = (card as { signatures?: ReadonlyArray<object> }).signatures ?? []
  return { ...card, signatures: [...previous, { protected: header, signature: b64url(signature) }] }
}
