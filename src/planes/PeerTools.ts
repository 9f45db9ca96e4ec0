/**
 * The runtime-owned peer tools (sandbox spec §4.4 step 0, door spec §8.4): `share-file`, offered
 * when the capsule declares `exports.peer_files`, mints a handle for one file under that root
 * bound to one peer's audience; `fetch-peer-file`, offered when `capabilities.peer_fetch.allow`
 * names peers, redeems a handle at a peer's door into `peer-in/<handle_id>-<name>` in the
 * workdir, asserting this capsule's own audience (`<name>@<host:port>` of its card). A peer URL
 * must pass `peer_fetch.allow` and `network.allow`, and a redirect is never followed: the
 * allowlists were checked for that URL only. Handles never reach the trace, only their ids.
 */
import { createHash } from "node:crypto"
import { Context, Effect, Either } from "effect"
import type { ToolResultData } from "../sandbox/GuestJob.js"
import { checkPeerUrl, type NetworkRule } from "../project/NetworkPolicy.js"
import { errorResult } from "../shell/ShellGrant.js"
import * as WorkdirFs from "../records/WorkdirFs.js"
import type { ResourcePlanes } from "../services/ResourcePlanes.js"
import type { ToolDefinition } from "../project/ToolDefinition.js"
import * as PeerHandle from "./PeerHandle.js"

export const SHARE_FILE = "share-file"
export const FETCH_PEER_FILE = "fetch-peer-file"

/** The peer tools this session offers, dispatched at step 0. */
export class PeerFiles extends Context.Tag("capsule-runtime/agent/PeerFiles")<PeerFiles, {
  readonly names: ReadonlyArray<string>
  readonly run: (name: string, input: unknown) => Effect.Effect<ToolResultData>
}>() {}

export const shareFileDefinition: ToolDefinition = {
  name: SHARE_FILE,
  description: "Share one file under exports.peer_files.root with one peer capsule: returns an expiring handle only that peer can redeem " +
    "(give it the handle; it fetches with fetch-peer-file). Name the peer by its door URL (its card is read for its audience) or by its audience.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The file, relative to exports.peer_files.root" },
      peer: { type: "string", description: "The peer's door URL, e.g. http://127.0.0.1:4000/" },
      audience: { type: "string", description: "Or the peer's audience, <name>@<host:port>" },
      ttl_secs: { type: "integer", minimum: 1, description: "Lifetime in seconds (never more than exports.peer_files.max_ttl)" }
    },
    required: ["path"],
    additionalProperties: false
  }
}

export const fetchPeerFileDefinition = (allow: ReadonlyArray<string>): ToolDefinition => ({
  name: FETCH_PEER_FILE,
  description: "Fetch a file a peer shared with you (its handle) into peer-in/ in the workdir. The peer must be one of: " + allow.join(", "),
  parameters: {
    type: "object",
    properties: {
      peer: { type: "string", description: "The sharing peer's door URL" },
      handle: { type: "string", description: "The mh1.… handle it gave you" }
    },
    required: ["peer", "handle"],
    additionalProperties: false
  }
})

const passed = (summary: string, data: unknown): ToolResultData => ({ status: "passed", summary, data: JSON.stringify(data), truncated: false, metadata: [] })

const doorUrl = (peer: string) => (peer.includes("://") ? peer : `http://${peer}`).replace(/\/*$/, "/")

const TIMEOUT_MS = 30_000

export interface PeerToolsOptions {
  readonly planes: ResourcePlanes["Type"]
  readonly workdir: string
  /** This capsule's audience: `<name>@<host:port>` of its own card. */
  readonly ownAudience: string
  readonly network: ReadonlyArray<NetworkRule>
  readonly peerFetch: ReadonlyArray<NetworkRule>
  readonly record: (eventType: string, fields: Record<string, unknown>) => Effect.Effect<void>
}

/** Refuses an outbound peer URL the allowlists do not cover: `peer_fetch.allow` and `network.allow`. */
const gate = (options: PeerToolsOptions, peer: string, needsPeerFetch: boolean) =>
  Either.flatMap(needsPeerFetch ? checkPeerUrl(options.peerFetch, peer, "capabilities.peer_fetch.allow") : Either.right(undefined), () =>
    checkPeerUrl(options.network, peer))

/** One GET that follows no redirect; a 3xx is a refusal naming where it pointed. */
const getNoRedirect = (url: string, headers: Record<string, string>): Effect.Effect<Response, string> =>
  Effect.tryPromise({
    try: async (signal): Promise<Either.Either<Response, string>> => {
      const response = await fetch(url, { headers, redirect: "manual", signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]) })
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel()
        return Either.left(`'${url}' answered a redirect (${response.status}${response.headers.get("location") === null ? "" : ` to '${response.headers.get("location")}'`}); peer tools do not follow redirects`)
      }
      return Either.right(response)
    },
    catch: (error) => `cannot reach '${url}': ${(error as Error).message}`
  }).pipe(Effect.flatMap((answer) => Either.isLeft(answer) ? Effect.fail(answer.left) : Effect.succeed(answer.right)))

const shareFile = (options: PeerToolsOptions, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    if (typeof input.path !== "string" || input.path === "") return errorResult("share-file needs 'path', a file under exports.peer_files.root")
    const ttl = input.ttl_secs === undefined ? undefined : Number(input.ttl_secs)
    if (ttl !== undefined && !(Number.isInteger(ttl) && ttl > 0)) return errorResult("share-file: 'ttl_secs' must be a positive whole number of seconds")
    let audience: string
    if (typeof input.audience === "string" && input.audience.trim() !== "") audience = PeerHandle.canonicalAudience(input.audience)
    else if (typeof input.peer === "string" && input.peer !== "") {
      const allowed = gate(options, input.peer, false)
      if (Either.isLeft(allowed)) return errorResult(allowed.left)
      const card = yield* getNoRedirect(new URL(".well-known/agent-card.json", doorUrl(input.peer)).href, {}).pipe(
        Effect.flatMap((response) => Effect.tryPromise({ try: () => response.json() as Promise<Record<string, unknown>>, catch: () => "the peer's agent card is not JSON" })),
        Effect.either
      )
      if (Either.isLeft(card)) return errorResult(card.left)
      const derived = PeerHandle.audienceOf(String(card.right.name ?? ""), String(card.right.url ?? ""))
      if (Either.isLeft(derived)) return errorResult(derived.left)
      audience = derived.right
    } else return errorResult("share-file needs 'peer' (the peer's door URL) or 'audience'")
    return yield* options.planes.share(input.path, audience, ttl).pipe(
      Effect.map((minted) =>
        passed(`shared ${input.path} with ${audience} as handle ${minted.handle_id}, valid until ${new Date(minted.expires_at_ms).toISOString()}`, {
          handle: minted.handle,
          handle_id: minted.handle_id,
          audience,
          expires_at_ms: minted.expires_at_ms
        })
      ),
      Effect.catchTag("SharingRefused", (refused) => Effect.succeed(errorResult(`share-file: ${refused.code}: ${refused.message}`)))
    )
  })

/** Where fetched bytes land: runtime-chosen, the payload's basename only a sanitised hint. */
export const storedPath = (handleId: string, hint: string | undefined): string => {
  const base = (hint ?? "").split("/").at(-1)!.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120)
  return `peer-in/${handleId}-${base === "" || base === "." || base === ".." ? "file" : base}`
}

const fetchPeerFile = (options: PeerToolsOptions, input: Record<string, unknown>) =>
  Effect.gen(function*() {
    if (typeof input.peer !== "string" || typeof input.handle !== "string") return errorResult("fetch-peer-file needs 'peer' and 'handle'")
    const { peer, handle } = input
    const handleId = PeerHandle.handleId(handle)
    const done = (outcome: string, extra: Record<string, unknown> = {}) =>
      options.record("peer_file_fetch", { handle_id: handleId, peer, audience: options.ownAudience, outcome, ...extra })
    const allowed = gate(options, peer, true)
    if (Either.isLeft(allowed)) {
      yield* done("refused")
      return errorResult(allowed.left)
    }
    const url = new URL(`resources/peer/${encodeURIComponent(handle)}`, doorUrl(peer)).href
    const answer = yield* getNoRedirect(url, { "x-murmur-audience": options.ownAudience }).pipe(
      Effect.flatMap((response) =>
        Effect.promise(async () => ({ status: response.status, etag: response.headers.get("etag"), body: Buffer.from(await response.arrayBuffer()) }))
      ),
      Effect.either
    )
    if (Either.isLeft(answer)) {
      yield* done(answer.left.includes("answered a redirect") ? "redirect_refused" : "unreachable")
      return errorResult(answer.left)
    }
    const { body, etag, status } = answer.right
    if (status !== 200) {
      let code = `http_${status}`
      try {
        code = String(JSON.parse(body.toString("utf8")).error ?? code)
      } catch {
        // Not the plane's JSON: the status says enough.
      }
      yield* done(code, { status })
      return errorResult(`fetch-peer-file: the peer refused the handle (${status} ${code})`)
    }
    const sha256 = createHash("sha256").update(body).digest("hex")
    if (etag !== null && etag !== `"sha256:${sha256}"`) {
      yield* done("etag_mismatch", { status })
      return errorResult("fetch-peer-file: the bytes received do not match the peer's etag")
    }
    const path = storedPath(handleId, PeerHandle.unverifiedPayload(handle)?.p)
    const written = yield* WorkdirFs.attempt(() => WorkdirFs.write(options.workdir, path, body)).pipe(Effect.either)
    if (Either.isLeft(written)) {
      yield* done("write_refused")
      return errorResult(`fetch-peer-file: ${written.left.message}`)
    }
    yield* done("ok", { path, bytes: body.length, sha256 })
    return passed(`fetched ${body.length} bytes into ${path}`, { path, bytes: body.length, sha256, handle_id: handleId })
  })

export const runPeerTool = (options: PeerToolsOptions) => (name: string, input: unknown): Effect.Effect<ToolResultData> => {
  const record = typeof input === "object" && input !== null ? input as Record<string, unknown> : {}
  return name === SHARE_FILE ? shareFile(options, record) : fetchPeerFile(options, record)
}

/** A handle's text replaced by `<handle:ID>` wherever it appears: the trace is durable, handles are credentials. */
export const redactHandles = (text: string): string =>
  text.replace(/mh1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, (token) => `<handle:${PeerHandle.handleId(token)}>`)
