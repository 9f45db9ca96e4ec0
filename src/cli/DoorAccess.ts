/**
 * What `serve` and `run` say and do about who can reach their door: the reference's `W-SEC-032`
 * when the door is bound beyond loopback with no token, and SIGHUP re-reading
 * `--auth-tokens-file` (a refused file keeps the table in force, and says why).
 */
import { Console, Effect, Either } from "effect"
import type { Door } from "../index.js"
import { publicDoorWarning } from "../layers/DoorWarning.js"

/** Prints the `W-SEC-032` line, if any, on stderr. */
export const warnPublicDoor = Effect.flatMap(publicDoorWarning, (line) => line === undefined ? Effect.void : Console.error(line))

/**
 * While the scope lasts, SIGHUP re-reads the tokens file: one stderr line with the principals now
 * served, or the `E-RUN-040` refusal and that the previous table stays.
 */
export const reloadOnHangup = (credentials: Door.Credentials) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const reload = () => {
        const outcome = credentials.reload()
        const line = Either.isRight(outcome)
          ? `door tokens reloaded from ${credentials.tokensFile}: ${outcome.right.join(", ")}`
          : `warning[${outcome.left.code}]: ${outcome.left.message}; the tokens in force stay`
        Effect.runSync(Console.error(line))
      }
      process.on("SIGHUP", reload)
      return reload
    }),
    (reload) => Effect.sync(() => void process.off("SIGHUP", reload))
  )
