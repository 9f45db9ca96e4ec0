/**
 * Where the session's door is reached: its absolute URL. The server layer provides it once it
 * has bound (`src/http/Door.ts`), or a host that mounts the door under a prefix of its own server
 * provides it; the session's identity (the card's `url`) and the capsule (`MURMUR_CAPSULE_URL`,
 * a delegation's completion address) read it, and never the server itself.
 */
import { Context, Layer } from "effect"

export class DoorAddress extends Context.Tag("capsule-runtime/services/DoorAddress")<DoorAddress, {
  /** Absolute `http://host:port/prefix/`, ending in `/`. */
  readonly url: string
  /** `host:port` of the door's gRPC binding, when it serves one (`serve --grpc-port`). */
  readonly grpc?: string | undefined
}>() {
  /** A fixed address (a door mounted by a host that knows its own URL). */
  static readonly layer = (url: string) => Layer.succeed(DoorAddress, DoorAddress.of({ url: url.endsWith("/") ? url : `${url}/` }))
}
