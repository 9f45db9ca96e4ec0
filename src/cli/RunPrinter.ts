/**
 * What `run` says about an agent capsule's run: the `listening` line (or the human one), the
 * `W-SEC-032` warning, a sleeping run's `task` line, and the `exit` line (or the two human lines)
 * with exit status 1 unless the task completed.
 */
import { Console, Effect } from "effect"
import type { RunPrinter } from "../layers/RunOnce.js"
import { bindFailureMessage, type DoorPort } from "./DoorPort.js"

const statusOf = (state: string) => (state === "completed" ? "ok" : "failed")

/**
 * Whether `out/result.txt` only repeats the status message: a failed task's message already
 * carries the reason ("session ended: request to … failed") that the file holds as "error: …",
 * and printing both says it twice. A result that says more is still printed.
 */
const repeatsMessage = (message: string | undefined, result: string) => {
  const reason = result.trim().replace(/^error:\s*/, "")
  return message !== undefined && reason !== "" && message.includes(reason)
}

export const runPrinter = (options: { readonly json: boolean; readonly host: string; readonly port: DoorPort }): RunPrinter => ({
  warning: (text) => Console.error(text),
  listening: ({ capsule, doorWarning, records, sessionId, url, workdir }) =>
    Effect.gen(function*() {
      if (options.json) yield* Console.log(JSON.stringify({ event: "listening", url, session_id: sessionId, workdir, records }))
      else yield* Console.log(`capsule ${capsule.name}@${capsule.version} running at ${url}`)
      if (doorWarning !== undefined) yield* Console.error(doorWarning)
    }),
  sleeping: (task) =>
    Console.log(options.json
      ? JSON.stringify({ event: "task", status: statusOf(task.state), task_id: task.id })
      : `task ${task.id} ${task.state}; sleeping until the next task (Ctrl-C ends the session)`),
  outcome: ({ records, result, task, workdir }) =>
    Effect.gen(function*() {
      const ok = task.state === "completed"
      if (options.json) {
        yield* Console.log(JSON.stringify({
          event: "exit",
          status: statusOf(task.state),
          workdir,
          records,
          task_id: task.id,
          ...(ok ? {} : {
            state: task.state,
            ...(task.statusMessage === undefined ? {} : { message: task.statusMessage }),
            ...(result === undefined ? {} : { result })
          })
        }))
      } else {
        // A failed task's frames say "session ended" (the reference's text); the reason is here.
        if (!ok) yield* Console.error(`task ${task.id} ${task.state}${task.statusMessage === undefined ? "" : `: ${task.statusMessage}`}`)
        if (result !== undefined && !repeatsMessage(task.statusMessage, result)) yield* Console.error(result)
        yield* Console.log(`status:  ${ok ? "ok" : "failed"}\nworkdir: ${workdir}`)
      }
      // A signal ends a sleeping run by interruption, which carries no status of its own.
      if (!ok) process.exitCode = 1
    }),
  bindFailure: (error) => bindFailureMessage(options.host, options.port, error)
})
