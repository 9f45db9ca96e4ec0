/**
 * A session named on the command line (`stop`, `cancel`): its `ses_` id, or a prefix of one that
 * names a single running session, or its door's URL (`http://host:port/` or `host:port`), looked
 * up among the sessions `ps` lists; and how `stop` and `cancel` print what a cancel left running.
 */
import { Either, Option } from "effect"
import type { RunningSession } from "../layers/LocalSessions.js"
import { doorUrl } from "./DoorClient.js"

const HINT = "`ps` lists the sessions running on this machine"

/** The running session `target` names, or why none is. */
export const findSession = (live: ReadonlyArray<RunningSession>, target: string): Either.Either<RunningSession, string> => {
  if (target.startsWith("ses_")) {
    const matches = live.filter((session) => session.session_id.startsWith(target))
    if (matches.length === 1) return Either.right(matches[0]!)
    return Either.left(
      matches.length === 0
        ? `no session ${target} is running on this machine; ${HINT}`
        : `${target} names ${matches.length} running sessions (${matches.map((session) => session.session_id).join(", ")}); give more of the id`
    )
  }
  const url = doorUrl(target)
  if (Option.isNone(url)) return Either.left(`'${target}' is neither a session id (ses_…) nor a door URL (http://host:port/ or host:port)`)
  const found = live.find((session) => Option.getOrUndefined(doorUrl(session.url)) === url.value)
  return found === undefined ? Either.left(`no session running on this machine has its door at ${url.value}; ${HINT}`) : Either.right(found)
}

/** One line per thing left running (a detached shell command, a delegated child), or that there is none. */
export const residueLines = (items: ReadonlyArray<unknown>): ReadonlyArray<string> => {
  if (items.length === 0) return ["residue: nothing else was left running"]
  return items.map((raw) => {
    const item = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>
    if (item["kind"] === "detached_shell") {
      return `residue: shell command ${item["work_id"]} still running: ${item["binary"]}${item["command"] === "" ? "" : ` ${item["command"]}`}`
    }
    if (item["kind"] === "delegation") {
      return `residue: delegation ${item["delegation_id"]} still running: ${item["capsule"]}@${item["version"]}, session ${item["child_session_id"]}`
    }
    return `residue: ${JSON.stringify(raw)}`
  })
}
