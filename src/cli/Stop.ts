/**
 * `stop <session|url>`: ends a session running on this machine, as the reference's `mur stop`
 * does. First the door is asked (`session/stop`), the one moment anything can tell what the
 * session leaves running: its live tasks are canceled and the residue (detached shell commands,
 * delegated children, which keep running) is named. Then the process gets SIGTERM, a graceful
 * shutdown, and SIGKILL once `--timeout` seconds are out. A door that does not answer stops
 * nothing from ending: the signals still go, and the missing account is said. Exit 0 once the
 * process is gone; `E-RUN-022` when no running session is named, `E-RUN-024` when the process
 * outlives SIGKILL.
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Either } from "effect"
import { HostEnvironment } from "../layers/Host.js"
import { endProcess, localSessions, prunedLine, sessionsHome } from "../layers/LocalSessions.js"
import { authToken, doorClientFor } from "./AuthToken.js"
import { call } from "./DoorClient.js"
import { exitWith } from "./Exit.js"
import { integerFlag } from "./Flags.js"
import { findSession, residueLines } from "./SessionTarget.js"

const target = Args.text({ name: "session|url" }).pipe(Args.withDescription("The session's id (ses_…, or enough of it to name one) or its door's URL, as `ps` lists them"))
const timeout = integerFlag("timeout", {
  min: 0,
  placeholder: "SECS",
  description: "Seconds the session has to shut down after SIGTERM before SIGKILL (0: at once; default 10)"
}).pipe(Options.withDefault(10))

/** The `session/stop` answer's canceled task ids and residue, when it reads as one. */
const answerOf = (result: unknown) => {
  const answer = (typeof result === "object" && result !== null ? result : {}) as { canceled?: unknown; residue?: unknown }
  return {
    canceled: Array.isArray(answer.canceled) ? answer.canceled.map(String) : [],
    residue: Array.isArray(answer.residue) ? answer.residue : []
  }
}

export const stopCommand = Command.make("stop", { target, timeout, authToken }, (options) =>
  Effect.gen(function*() {
    const home = yield* sessionsHome
    const { live, pruned } = yield* localSessions(home, "stop")
    for (const gone of pruned) yield* Console.error(`pruned: ${prunedLine(gone)}`)
    const found = findSession(live, options.target)
    if (Either.isLeft(found)) {
      yield* Console.error(`error[E-RUN-022]: ${found.left}`)
      return yield* exitWith(1)
    }
    const session = found.right
    // Asked first: once the process is gone, nothing can say what it left running.
    const door = yield* call(session.url, "session/stop", {}).pipe(
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => ({ message: `${session.url} did not answer session/stop within 5 s` }) }),
      Effect.either
    )
    const graceMs = options.timeout * 1000
    const ending = yield* endProcess(home, session, graceMs, "stop")
    yield* Console.log([
      `stopped: ${session.session_id}`,
      `capsule: ${session.capsule}@${session.version}`,
      `signal:  ${ending === "gone" ? "none (the process had already exited)" : ending === "SIGKILL" ? `SIGKILL after ${options.timeout} s` : ending === "SIGTERM" ? "SIGTERM" : "SIGKILL (ignored)"}`,
      ...Either.match(door, {
        onLeft: (error) => [`residue: unknown (the door could not be asked: ${error.message})`],
        onRight: (result) => {
          const answer = answerOf(result)
          return [...answer.canceled.map((task) => `canceled: ${task}`), ...residueLines(answer.residue)]
        }
      })
    ].join("\n"))
    if (ending === "still running") {
      yield* Console.error(`error[E-RUN-024]: session ${session.session_id} (pid ${session.pid}) was still running 5 s after SIGKILL`)
      return yield* exitWith(1)
    }
  }).pipe(Effect.provide(doorClientFor(options.authToken)), Effect.provide(HostEnvironment.layer))
).pipe(Command.withDescription("Stop a session running on this machine: cancel its tasks through its door (session/stop), then SIGTERM, then SIGKILL"))
