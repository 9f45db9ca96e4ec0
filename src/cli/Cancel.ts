/**
 * `cancel <url|session> <task>`: cancels one task of a running session without ending the
 * session, as the reference's `mur cancel` does: the door's `tasks/cancel`, and what it answers
 * printed (`task:`, `state:`, then one `residue:` line per thing the cancel left running: a
 * detached shell command or a delegated child keeps going). A task that had already ended is no
 * error (it does no more work either); a task the door does not hold, or a door that refuses
 * or cannot be reached, is `E-IO-003`, exit 1.
 */
import { Args, Command } from "@effect/cli"
import { Console, Effect, Either, Option } from "effect"
import { HostEnvironment } from "../layers/Host.js"
import { localSessions, sessionsHome } from "../layers/LocalSessions.js"
import { authToken, doorClientFor } from "./AuthToken.js"
import { call, doorUrl } from "./DoorClient.js"
import { exitWith } from "./Exit.js"
import { findSession, residueLines } from "./SessionTarget.js"

const target = Args.text({ name: "url|session" }).pipe(Args.withDescription("The door (http://host:port/ or host:port), or a session of this machine by its id (ses_…)"))
const task = Args.text({ name: "task" }).pipe(Args.withDescription("The task's id, as send, watch and the door name it"))

interface Refusal {
  readonly code: string
  readonly message: string
  readonly status: number
}

/** The door the target names: a session id is looked up among this machine's sessions. */
const doorOf = (target: string): Effect.Effect<Either.Either<string, Refusal>, never, HostEnvironment> =>
  Effect.gen(function*() {
    if (target.startsWith("ses_")) {
      const { live } = yield* localSessions(yield* sessionsHome, "cancel")
      return Either.mapBoth(findSession(live, target), { onLeft: (message) => ({ code: "E-RUN-022", message, status: 1 }), onRight: (session) => session.url })
    }
    return Option.match(doorUrl(target), {
      onNone: () => Either.left({ code: "E-CLI-001", message: `<url|session>: '${target}' is neither a door URL (http://host:port/ or host:port) nor a session id (ses_…)`, status: 2 }),
      onSome: (url) => Either.right(url)
    })
  })

/** The residue items of a reference-shaped task snapshot (each a part's JSON text). */
const residueOf = (snapshot: { readonly artifacts?: unknown }): ReadonlyArray<unknown> => {
  const artifacts = Array.isArray(snapshot.artifacts) ? snapshot.artifacts as ReadonlyArray<{ name?: unknown; parts?: unknown }> : []
  const parts = artifacts.find((artifact) => artifact.name === "residue")?.parts
  return (Array.isArray(parts) ? parts : []).flatMap((part: { text?: unknown }) => {
    try {
      return [JSON.parse(String(part.text))]
    } catch {
      return [part.text]
    }
  })
}

export const cancelCommand = Command.make("cancel", { target, task, authToken }, (options) =>
  Effect.gen(function*() {
    const door = yield* doorOf(options.target)
    if (Either.isLeft(door)) {
      yield* Console.error(`error[${door.left.code}]: ${door.left.message}`)
      return yield* exitWith(door.left.status)
    }
    const result = yield* call(door.right, "tasks/cancel", { id: options.task }).pipe(Effect.either)
    if (Either.isLeft(result)) {
      yield* Console.error(`error[E-IO-003]: cancel of ${options.task} failed: ${result.left.message}`)
      return yield* exitWith(1)
    }
    const snapshot = (typeof result.right === "object" && result.right !== null ? result.right : {}) as { id?: unknown; status?: { state?: unknown }; artifacts?: unknown }
    yield* Console.log([
      `task:    ${typeof snapshot.id === "string" ? snapshot.id : options.task}`,
      `state:   ${typeof snapshot.status?.state === "string" ? snapshot.status.state : "unknown"}`,
      ...residueLines(residueOf(snapshot))
    ].join("\n"))
  }).pipe(Effect.provide(doorClientFor(options.authToken)), Effect.provide(HostEnvironment.layer))
).pipe(Command.withDescription("Cancel one task of a session (tasks/cancel) without ending the session; print its state and what it left running"))
