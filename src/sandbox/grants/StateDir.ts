/**
 * An artifact's state store (`capabilities.state` on its entry): a directory that outlives the
 * session, `$MURMUR_HOME/state/<store>/` (default store: the artifact's name), preopened for its
 * guest as `state` beside its `.`. The store name is one path segment (E-CAP-011 when the
 * manifest is read); `state/` and the store are made mode 0700 and reached without following a
 * link (../../records/WorkdirFs.ts), so a link planted at the store's name (by a guest of another
 * capsule sharing the store, say) refuses the launch instead of preopening what it points at.
 */
import { chmodSync, mkdirSync, realpathSync } from "node:fs"
import { join } from "node:path"
import { Either } from "effect"
import { murmurHome } from "../../project/MurmurHome.js"
import { ProjectError } from "../../project/ProjectError.js"
import * as WorkdirFs from "../../records/WorkdirFs.js"

export const stateDir = (hostEnv: Readonly<Record<string, string | undefined>>, store: string): Either.Either<string, ProjectError> => {
  const root = join(murmurHome(hostEnv), "state")
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 })
    WorkdirFs.makeDirectory(root, store)
    const dir = join(realpathSync(root), store)
    chmodSync(dir, 0o700)
    return Either.right(dir)
  } catch (error) {
    return Either.left(new ProjectError({ code: "E-RUN-002", message: `the state store '${store}' (${join(root, store)}) cannot be made: ${(error as Error).message}` }))
  }
}
