/**
 * Signed agent cards: the door signs its 1.0 cards with the operator's key, and the official
 * SDK's verifier (`verifyAgentCardSignature`, @a2a-js/sdk 1.3) accepts them, for each kind of key;
 * a card changed after signing is refused.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto"
import { verifyAgentCardSignature } from "@a2a-js/sdk-1"
import { Redacted } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { canonicalCard, makeCardSigner } from "../../src/services/CardSignature.js"
import { type OpenDoor, openDoor, rpc } from "../lib/Door.js"

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const pemOf = (key: KeyObject) => key.export({ type: "pkcs8", format: "pem" }).toString()

const keys = {
  "EC P-256 (ES256)": () => generateKeyPairSync("ec", { namedCurve: "P-256" }),
  "Ed25519 (EdDSA)": () => generateKeyPairSync("ed25519"),
  "RSA (RS256)": () => generateKeyPairSync("rsa", { modulusLength: 2048 })
}

describe("signed cards", () => {
  it.each(Object.keys(keys))("%s: the SDK verifies the public and the extended 1.0 card", async (kind) => {
    const pair = keys[kind as keyof typeof keys]()
    const signer = makeCardSigner(pemOf(pair.privateKey), "door-key-1")
    door = await openDoor({ door: { cardSigner: signer, authToken: Redacted.make("sign-token") } })
    const lookedUp: Array<string> = []
    const verify = verifyAgentCardSignature(async (kid: string) => {
      lookedUp.push(kid)
      return pair.publicKey
    })
    const card = await (await fetch(`${door.url}.well-known/agent-card.json`, { headers: { "a2a-version": "1.0" } })).json()
    expect(card.signatures).toHaveLength(1)
    const header = JSON.parse(Buffer.from(card.signatures[0].protected, "base64url").toString("utf8"))
    expect(header).toMatchObject({ kid: "door-key-1", typ: "JOSE" })
    await verify(card)
    expect(lookedUp).toEqual(["door-key-1"])
    const extended = (await rpc(door.url, "GetExtendedAgentCard", {}, { headers: { authorization: "Bearer sign-token" } })).body.result
    await verify(extended)
    // One byte of the card changed: no signature holds.
    await expect(verify({ ...card, name: `${card.name}!` })).rejects.toThrow(/No valid signatures/)
  })

  it("canonicalizes as JCS over the card without signatures and without empty values", () => {
    expect(canonicalCard({ b: 1, a: { d: "", c: [], e: {} }, signatures: [{ x: 1 }], f: [null, "x"], g: false })).toBe(`{"b":1,"f":["x"],"g":false}`)
    const pair = generateKeyPairSync("ec", { namedCurve: "P-256" })
    // Without a kid, the key's fingerprint names it; a key without a JWS algorithm is refused.
    expect(makeCardSigner(pemOf(pair.privateKey)).kid).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const secp256k1 = generateKeyPairSync("ec", { namedCurve: "secp256k1" })
    expect(() => makeCardSigner(pemOf(secp256k1.privateKey))).toThrow(/curve/)
  })
})
