/**
 * The sessions whose entity lives on this runner right now, each as its door app (built over the
 * session's own services, so a call to it is a direct call). The entity adds its session when it
 * is built and takes it out when it is passivated or moved; the gateway serves a session found
 * here locally and any other one through the cluster.
 */
import type { HttpApp } from "@effect/platform"
import { Context, Layer } from "effect"

export type DoorApp = HttpApp.Default<unknown, never>

export class LocalSessions extends Context.Tag("capsule-runtime/fleet/LocalSessions")<LocalSessions, {
  readonly get: (sessionId: string) => DoorApp | undefined
  readonly add: (sessionId: string, app: DoorApp) => void
  readonly remove: (sessionId: string, app: DoorApp) => void
  readonly ids: () => ReadonlyArray<string>
}>() {
  static readonly layer = Layer.sync(LocalSessions, () => {
    const apps = new Map<string, DoorApp>()
    return LocalSessions.of({
      get: (sessionId) => apps.get(sessionId),
      add: (sessionId, app) => void apps.set(sessionId, app),
      // Only its own entry: a session built again here meanwhile keeps the newer app.
      remove: (sessionId, app) => {
        if (apps.get(sessionId) === app) apps.delete(sessionId)
      },
      ids: () => [...apps.keys()]
    })
  })
}
