/**
 * How a command reports a capsule that could not run: `error[CODE]: message` on stderr (or the
 * `exit` JSON event as the last stdout line with `--json`), and exit status 1.
 */
import { Console, Effect } from "effect"
import { HostEnvironment, SandboxLive } from "../layers/Host.js"
import type { ProjectError } from "../project/ProjectError.js"
import { type ExitStatus, exitWith } from "./Exit.js"

export const reportLaunchFailure = (code: string, message: string, json: boolean, workdir?: string, stderr?: string) =>
  Effect.gen(function*() {
    if (json) {
      yield* Console.log(JSON.stringify({
        event: "exit",
        status: "failed",
        ...(workdir === undefined ? {} : { workdir }),
        error: { code, message, ...(stderr === undefined || stderr.length === 0 ? {} : { stderr }) }
      }))
    } else {
      if (stderr !== undefined && stderr.length > 0) yield* Console.error(`guest stderr:\n${stderr.trimEnd()}`)
      yield* Console.error(`error[${code}]: ${message}`)
      if (workdir !== undefined) yield* Console.error(`workdir: ${workdir}`)
    }
    return yield* exitWith(1)
  })

/**
 * Runs a command that launches a capsule from a directory: the sandbox and the host's
 * environment provided, and a capsule that cannot launch reported as above.
 */
/** A component that cannot be prepared (the sandbox's `SandboxError`), as `launching` reads it. */
interface LaunchRefused {
  readonly _tag: "SandboxError"
  readonly message: string
}

/** The session's store cannot be opened or read (`StoreRefused`, `StoreFailed`): E-RUN-030. */
type StoreUnusable =
  | { readonly _tag: "StoreRefused"; readonly message: string }
  | { readonly _tag: "StoreFailed"; readonly message: string }

export const launching = <A, R>(effect: Effect.Effect<A, ProjectError | LaunchRefused | StoreUnusable | ExitStatus, R>, json: boolean, prestart = 0) =>
  effect.pipe(
    Effect.catchTags({
      ProjectError: (error) => reportLaunchFailure(error.code, error.message, json),
      SandboxError: (error) => reportLaunchFailure("E-RUN-001", error.message, json),
      StoreRefused: (error) => reportLaunchFailure("E-RUN-030", error.message, json),
      StoreFailed: (error) => reportLaunchFailure("E-RUN-030", error.message, json)
    }),
    Effect.provide(SandboxLive(prestart)),
    Effect.provide(HostEnvironment.layer)
  )
