/**
 * Who this session is: its `ses_` id, the capsule it serves, the door's absolute URL and the
 * agent card built from them once, at start, and served verbatim afterwards.
 */
import { Context, Effect, Layer } from "effect"
import { type AgentCard, agentCard1, makeAgentCard, publicCard } from "./AgentCard.js"
import { Capsule, type CapsuleInfo } from "./Capsule.js"
import { type CardSigner, signCard } from "./CardSignature.js"
import { DoorAddress } from "./DoorAddress.js"
import { mintId } from "./Ids.js"

export class SessionIdentity extends Context.Tag("capsule-runtime/services/SessionIdentity")<SessionIdentity, {
  readonly sessionId: string
  readonly capsule: CapsuleInfo
  /** Absolute `http://host:port/`. */
  readonly url: string
  /** The whole card: a door with tokens serves it as the authenticated extended card. */
  readonly card: AgentCard
  /** The public card (the well-known paths), serialised once: with tokens, without session id, tools or grants. */
  readonly cardJson: string
  /** The whole card in A2A 1.0's shape (`GetExtendedAgentCard`). */
  readonly card1: ReturnType<typeof agentCard1>
  /** The public card in A2A 1.0's shape, serialised once (the well-known paths, asked with `A2A-Version: 1.0`). */
  readonly card1Json: string
}>() {
  /** The card's `url` is the `DoorAddress`; `streaming` is false when no task can start. */
  static readonly layer = (options: IdentityOptions) =>
    Layer.effect(
      SessionIdentity,
      Effect.gen(function*() {
        const capsule = yield* Capsule
        const { grpc, url } = yield* DoorAddress
        return SessionIdentity.make(capsule.info, { ...options, url, grpc })
      })
    )

  /** An identity from what it is made of, for a door that serves a session built elsewhere (a fleet's gateway). */
  static readonly make = (
    info: CapsuleInfo,
    options: IdentityOptions & { readonly url: string; readonly grpc?: string | undefined }
  ): SessionIdentity["Type"] => {
    const sessionId = options.sessionId ?? mintId("ses")
    const card = makeAgentCard({ info, sessionId, url: options.url, streaming: options.streaming, bearer: options.bearer, grpc: options.grpc })
    const shown = options.bearer === true ? publicCard(card) : card
    const signed = <Card extends object>(made: Card) => (options.signer === undefined ? made : signCard(made, options.signer))
    return SessionIdentity.of({
      sessionId,
      capsule: info,
      url: options.url,
      card,
      cardJson: JSON.stringify(shown),
      card1: signed(agentCard1(card)),
      card1Json: JSON.stringify(signed(agentCard1(shown)))
    })
  }
}

export interface IdentityOptions {
  readonly streaming: boolean
  /** The door wants a bearer token: the card advertises the scheme. */
  readonly bearer?: boolean | undefined
  /** The session's id when it was minted earlier (e.g. to name the workdir); else a new one. */
  readonly sessionId?: string | undefined
  /** Signs the 1.0 cards (the operator's key), when given. */
  readonly signer?: CardSigner | undefined
}
