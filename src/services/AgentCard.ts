/**
 * The agent cards: a complete A2A 0.3 card (all nine required fields, an absolute `url`, honest
 * capabilities) that keeps the reference's own fields (`session_id`, `capabilities.tools`,
 * `shell`, `network`) and has one skill per tool. A door with tokens serves it only as the
 * authenticated extended card (`agent/getAuthenticatedExtendedCard`, as the reference 0.5 does);
 * its public card (the well-known paths, read without a token) says what the agent is and how to
 * call it, and nothing of its session or grants. An open door has nothing to hold back from a
 * card: anyone can call it, so its public card stays whole (the reference's `W-SEC-032` says so).
 *
 * Each card exists in A2A 0.3's shape and in 1.0's (`agentCard1`): the same data, 1.0's names.
 * The 0.3 card also lists 1.0's `supportedInterfaces` (the two versions' fields are disjoint), so
 * a 1.0 client that fetched it without `A2A-Version` still finds the 1.0 bindings.
 */
import type { CapsuleInfo } from "./Capsule.js"

export const capsuleExtensionUri = "urn:murmur:a2a:capsule:v1"

/** JSON-RPC methods the door serves besides the A2A ones (vendor methods, spec 0.3 §3.5.5). */
export const vendorMethods = ["stream/watch", "session/stop", "murmur.capsule/watch", "murmur.capsule/stop"] as const

/**
 * The bindings this door serves, preferred first (A2A 1.0 `AgentInterface`): 1.0 over JSON-RPC
 * and HTTP+JSON at the door's URL, 1.0 over gRPC at its `host:port` when the door serves it, and
 * 0.3 over JSON-RPC at the door's URL (the method names tell the versions apart,
 * ./http/ProtocolVersion.ts).
 */
export const supportedInterfaces = (url: string, grpc?: string) => [
  { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
  { url, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
  ...(grpc === undefined ? [] : [{ url: grpc, protocolBinding: "GRPC", protocolVersion: "1.0" }]),
  { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" }
]

const bearerDescription = "The token the door was started with (serve --auth-token)"

export const makeAgentCard = (options: {
  readonly info: CapsuleInfo
  readonly sessionId: string
  readonly url: string
  readonly streaming: boolean
  /** The door wants `Authorization: Bearer` (advertised as `securitySchemes` + `security`, A2A 0.3). */
  readonly bearer?: boolean | undefined
  /** `host:port` of the gRPC binding, listed after HTTP+JSON when the door serves one. */
  readonly grpc?: string | undefined
}) => {
  const { info } = options
  const skills = info.tools.length > 0
    ? info.tools.map((tool) => ({ id: tool, name: tool, description: `The ${tool} tool of ${info.name}`, tags: ["tool"] }))
    : [{ id: "task", name: info.name, description: info.description, tags: ["capsule"] }]
  return {
    protocolVersion: "0.3.0",
    name: info.name,
    description: info.description,
    url: options.url,
    preferredTransport: "JSONRPC",
    additionalInterfaces: [{ url: options.url, transport: "JSONRPC" }],
    version: info.version,
    capabilities: {
      streaming: options.streaming,
      // Webhooks for task updates (../http/PushMethods.ts), in both versions.
      pushNotifications: true,
      stateTransitionHistory: false,
      extensions: [{
        uri: capsuleExtensionUri,
        description: "Murmur capsule session: grants summary and vendor methods",
        required: false,
        params: {
          session_id: options.sessionId,
          tools: info.tools,
          shell: info.shell,
          network: info.network,
          methods: vendorMethods
        }
      }],
      network: info.network,
      shell: info.shell,
      tools: info.tools
    },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills,
    ...(options.bearer === true
      ? {
        securitySchemes: { bearer: { type: "http" as const, scheme: "bearer", description: bearerDescription } },
        security: [{ bearer: [] as Array<string> }]
      }
      : {}),
    // Only a door with tokens keeps anything from its public card; an open door's card is whole.
    supportsAuthenticatedExtendedCard: options.bearer === true,
    supportedInterfaces: supportedInterfaces(options.url, options.grpc),
    session_id: options.sessionId
  }
}

export type AgentCard = ReturnType<typeof makeAgentCard>

/** The card anyone may read: the extended card without the session id, the tools (as skills too) and the grants. */
export const publicCard = (card: AgentCard) => {
  const { session_id: _sessionId, capabilities, skills: _skills, ...rest } = card
  const { network: _network, shell: _shell, tools: _tools, extensions, ...kept } = capabilities
  return {
    ...rest,
    capabilities: {
      ...kept,
      extensions: extensions.map(({ params, ...extension }) => ({ ...extension, params: { methods: params.methods } }))
    },
    skills: [{ id: "task", name: card.name, description: card.description, tags: ["capsule"] }]
  }
}

/** What the 1.0 card is made of: fields both the whole and the public 0.3 card have. */
interface CardData {
  readonly name: string
  readonly description: string
  readonly version: string
  readonly supportedInterfaces: ReadonlyArray<object>
  readonly capabilities: { readonly streaming: boolean; readonly pushNotifications: boolean; readonly extensions: ReadonlyArray<object> }
  readonly defaultInputModes: ReadonlyArray<string>
  readonly defaultOutputModes: ReadonlyArray<string>
  readonly skills: ReadonlyArray<object>
  readonly supportsAuthenticatedExtendedCard: boolean
  readonly securitySchemes?: object
}

/**
 * A card in A2A 1.0's shape (ProtoJSON of `AgentCard`): `supportedInterfaces` instead of `url`
 * and transports, `capabilities.extendedAgentCard`, security as `httpAuthSecurityScheme` and
 * `securityRequirements`. Murmur's own data is the capsule extension's params.
 */
export const agentCard1 = (card: CardData) => ({
  name: card.name,
  description: card.description,
  supportedInterfaces: card.supportedInterfaces,
  version: card.version,
  capabilities: {
    streaming: card.capabilities.streaming,
    pushNotifications: card.capabilities.pushNotifications,
    // ProtoJSON leaves a false plain bool out (a signed card must be in that normal form).
    extensions: card.capabilities.extensions.map((extension) => {
      const { required, ...rest } = extension as { required?: boolean }
      return required === true ? extension : rest
    }),
    extendedAgentCard: card.supportsAuthenticatedExtendedCard
  },
  ...(card.securitySchemes === undefined ? {} : {
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: bearerDescription } } },
    securityRequirements: [{ schemes: { bearer: {} } }]
  }),
  defaultInputModes: card.defaultInputModes,
  defaultOutputModes: card.defaultOutputModes,
  skills: card.skills
})
