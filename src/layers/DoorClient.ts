/**
 * The HTTP client the command line talks to a door with (`watch`, and any command that calls a
 * door): Node's, sending `Authorization: Bearer <token>` on every request when a token is given.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, type Redacted } from "effect"

export const DoorClientLive = (token: Redacted.Redacted<string> | undefined): Layer.Layer<HttpClient.HttpClient> =>
  token === undefined
    ? NodeHttpClient.layer
    : Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(HttpClientRequest.bearerToken(token)))).pipe(
      Layer.provide(NodeHttpClient.layer)
    )
