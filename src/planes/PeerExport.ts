/**
 * Launch checks of the `exports:` block (sandbox spec §1.5): the effective handle lifetime ceiling
 * of `exports.peer_files` (`max_ttl`: 1h by default under `after_task: exit`; under `sleep`, a
 * long-lived session, it must be declared and at most 15 minutes: `E-CAP-008`), and `E-CAP-007`
 * for an export root that is already a link (or lies under one) in the workdir: the planes never
 * follow a link, so such a root could only ever be refused.
 */
import { lstatSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import type { Lifecycle } from "../project/manifest/Lifecycle.js"
import type { Exports } from "../project/manifest/Retention.js"
import { ProjectError } from "../project/ProjectError.js"

export const DEFAULT_MAX_TTL_SECS = 3600
export const SLEEP_MAX_TTL_SECS = 900

/** The `max_ttl` a handle may live at most, or `E-CAP-008`. */
export const effectiveMaxTtl = (exports: Exports | undefined, lifecycle: Lifecycle): Effect.Effect<number, ProjectError> => {
  const declared = exports?.peerFiles?.maxTtlSecs
  if (lifecycle.afterTask === "sleep" && exports?.peerFiles !== undefined && (declared === undefined || declared > SLEEP_MAX_TTL_SECS)) {
    return Effect.fail(
      new ProjectError({
        code: "E-CAP-008",
        message: `exports.peer_files.max_ttl ${declared === undefined ? "is not declared" : `is ${declared}s`}: under lifecycle.after_task: sleep it must be declared and at most 15m, so a handle cannot outlive its purpose in a session that never ends`
      })
    )
  }
  return Effect.succeed(declared ?? DEFAULT_MAX_TTL_SECS)
}

/** `E-CAP-007` when an export root, or a directory above it, is a symbolic link in the workdir. */
export const checkExportRoots = (workdir: string, exports: Exports | undefined): Effect.Effect<void, ProjectError> =>
  Effect.forEach([["exports.files.root", exports?.files?.root], ["exports.peer_files.root", exports?.peerFiles?.root]] as const, ([field, root]) => {
    if (root === undefined) return Effect.void
    const parts = root.split("/").filter((part) => part !== "" && part !== ".")
    for (let index = 1; index <= parts.length; index++) {
      try {
        if (lstatSync(join(workdir, ...parts.slice(0, index))).isSymbolicLink()) {
          return Effect.fail(
            new ProjectError({ code: "E-CAP-007", message: `${field} '${root}' passes through a symbolic link (${parts.slice(0, index).join("/")}) in the workdir; an export root must be a plain directory inside it` })
          )
        }
      } catch {
        return Effect.void
      }
    }
    return Effect.void
  }, { discard: true })
