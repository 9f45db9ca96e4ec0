/**
 * `ps`: the sessions running on this machine (every `serve` and agent `run` lists itself in
 * `$MURMUR_HOME/sessions/`, ../layers/LocalSessions.ts), newest first: id, capsule, pid, state,
 * tasks, uptime and URL. A session whose process is gone never ended (it crashed or was killed):
 * it is pruned on the way, named on stderr, and its trace given the `session_end` it lacked.
 * The state is `running` when the door answers for its card within a second, else
 * `unreachable` (alive but not answering: wedged, or shutting down). With `--json`, one object
 * on stdout: `{"sessions":[…],"pruned":[…]}`.
 */
import { Command, Options } from "@effect/cli"
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { HostEnvironment } from "../layers/Host.js"
import { localSessions, prunedLine, type RunningSession, sessionsHome, type SessionTasks } from "../layers/LocalSessions.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout"))

/** `HH:MM:SS`, with `Nd ` in front past a day; `-` for a start time that does not read. */
export const uptime = (startedAt: string, nowMs: number): string => {
  const started = Date.parse(startedAt)
  if (Number.isNaN(started) || nowMs < started) return "-"
  const seconds = Math.floor((nowMs - started) / 1000)
  const days = Math.floor(seconds / 86_400)
  const rest = seconds % 86_400
  const clock = [Math.floor(rest / 3600), Math.floor((rest % 3600) / 60), rest % 60].map((part) => String(part).padStart(2, "0")).join(":")
  return days === 0 ? clock : `${days}d ${clock}`
}

/** `1 running, 2 queued, 5 done`: the counts that are not zero; `none` without any task. */
export const tasksText = (tasks: SessionTasks): string => {
  const parts = [[tasks.active, "running"], [tasks.parked, "waiting"], [tasks.queued, "queued"], [tasks.finished, "done"]] as const
  const said = parts.filter(([count]) => count > 0).map(([count, what]) => `${count} ${what}`)
  return said.length === 0 ? "none" : said.join(", ")
}

/** Whether the door answers for its card within a second. */
const answers = (url: string) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.get(new URL(".well-known/agent-card.json", url).toString())
    return response.status === 200
  }).pipe(Effect.scoped, Effect.timeout("1 second"), Effect.orElseSucceed(() => false))

/** Columns padded to their widest cell; the last one is not. */
const columns = (rows: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string> => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  "))
}

interface Listed {
  readonly session: RunningSession
  readonly state: "running" | "unreachable"
}

const printTable = (listed: ReadonlyArray<Listed>, nowMs: number) =>
  listed.length === 0
    ? Console.log("no running sessions")
    : Console.log(columns([
      ["SESSION", "CAPSULE", "PID", "STATE", "TASKS", "UPTIME", "URL"],
      ...listed.map(({ session, state }) => [
        session.session_id,
        `${session.capsule}@${session.version}`,
        String(session.pid),
        state,
        tasksText(session.tasks),
        uptime(session.started_at, nowMs),
        session.url
      ])
    ]).join("\n"))

export const psCommand = Command.make("ps", { json }, ({ json }) =>
  Effect.gen(function*() {
    const home = yield* sessionsHome
    const { live, pruned } = yield* localSessions(home, "ps")
    const listed: ReadonlyArray<Listed> = yield* Effect.forEach(
      live,
      (session) => Effect.map(answers(session.url), (up): Listed => ({ session, state: up ? "running" : "unreachable" })),
      { concurrency: "unbounded" }
    )
    const nowMs = Date.now()
    if (json) {
      return yield* Console.log(JSON.stringify({
        sessions: listed.map(({ session, state }) => ({ ...session, state, uptime_secs: Math.max(0, Math.floor((nowMs - Date.parse(session.started_at)) / 1000)) })),
        pruned: pruned.map(({ session, trace }) => ({ session_id: session.session_id, capsule: session.capsule, version: session.version, pid: session.pid, ...(trace === undefined ? {} : { trace }) }))
      }))
    }
    for (const gone of pruned) yield* Console.error(`pruned: ${prunedLine(gone)}`)
    yield* printTable(listed, nowMs)
  }).pipe(Effect.provide(NodeHttpClient.layer), Effect.provide(HostEnvironment.layer))
).pipe(Command.withDescription("List the sessions running on this machine (serve and run): id, capsule, pid, state, tasks, uptime, URL; prune those that crashed"))
