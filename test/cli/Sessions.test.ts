/**
 * Issue 23 item 6, through `node dist/main.js`: `ps` lists the sessions of this machine (`serve`
 * and `run`, each listed in `$MURMUR_HOME/sessions/` while it runs) with id, capsule, pid, state,
 * tasks, uptime and URL; `cancel <url> <task>` cancels one task and the session goes on; `stop
 * <session|url>` cancels through the door, then SIGTERM (SIGKILL once `--timeout` is out); a
 * session killed with SIGKILL is pruned by the next `ps`, or reported by the next start of its
 * capsule directory, and its trace gets the `session_end` (`exit_status: "crashed"`) it lacked.
 * (`npm run build` first.)
 */
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { cliScratch } from "../lib/Scratch.js"
import { listeningCli, makeAgentCapsuleDir, runCli, serveCli, until } from "../lib/CapsuleDirs.js"
import { referenceMessage, rpc } from "../lib/Door.js"

const { cleanups, env } = cliScratch()

const spin = { stop_reason: "end_turn", content: [], spin: true }
const done = { stop_reason: "end_turn", content: [{ type: "text", text: "done" }] }

const agent = async (replies: ReadonlyArray<unknown>) => {
  const dir = await makeAgentCapsuleDir({ driverConfig: { replies } })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

interface Listed {
  readonly session_id: string
  readonly pid: number
  readonly url: string
  readonly state: string
  readonly command: string
  readonly tasks: { readonly active: number; readonly queued: number; readonly parked: number; readonly finished: number }
}

const ps = async () => {
  const result = await runCli(["ps", "--json"], env)
  expect(result.code, result.stderr).toBe(0)
  return JSON.parse(result.stdout) as { sessions: ReadonlyArray<Listed>; pruned: ReadonlyArray<{ session_id: string; trace?: string }> }
}

/** `ps --json` until `ok` holds of its sessions. */
const psUntil = async (ok: (sessions: ReadonlyArray<Listed>) => boolean, what: string) => {
  for (let attempt = 0; attempt < 20; attempt++) {
    const { sessions } = await ps()
    if (ok(sessions)) return sessions
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`ps never showed ${what}`)
}

const traceEvents = (records: string) =>
  readFileSync(join(records, "trace.jsonl"), "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

describe("ps, cancel and stop", () => {
  it("ps lists each session with its state and tasks; cancel ends one task; stop cancels and ends the session gracefully", async () => {
    expect((await runCli(["ps"], env)).stdout).toBe("no running sessions\n")
    const dir = await agent([spin])
    const [served, echo] = await Promise.all([serveCli(dir, env, cleanups), listeningCli(["serve", "--json"], env, cleanups)])
    const sent = await rpc(served.listening.url, "message/send", { message: referenceMessage("think forever"), configuration: { blocking: false } })
    const taskId: string = sent.body.result.id

    // The counts are refreshed each second.
    const listed = await psUntil((sessions) => sessions.find((session) => session.session_id === served.listening.session_id)?.tasks.active === 1, "the running task")
    const mine = listed.find((session) => session.session_id === served.listening.session_id)!
    expect(mine).toMatchObject({ pid: served.child.pid, url: served.listening.url, state: "running", command: "serve", tasks: { active: 1, queued: 0 } })
    expect(listed.find((session) => session.session_id === echo.listening.session_id)).toMatchObject({ pid: echo.child.pid, state: "running" })
    // Newest first.
    expect(listed.map((session) => session.session_id)).toEqual([...listed.map((session) => session.session_id)].sort().reverse())

    const table = await runCli(["ps"], env)
    const [header, ...rows] = table.stdout.trim().split("\n")
    expect(header).toMatch(/^SESSION +CAPSULE +PID +STATE +TASKS +UPTIME +URL$/)
    expect(rows.find((row) => row.startsWith(served.listening.session_id))).toMatch(
      new RegExp(`^${served.listening.session_id} +test-agent@0\\.1\\.0 +${served.child.pid} +running +1 running +\\d\\d:\\d\\d:\\d\\d +${served.listening.url.replaceAll(".", "\\.")}$`)
    )

    const canceled = await runCli(["cancel", served.listening.url, taskId], env)
    expect(canceled.code, canceled.stderr).toBe(0)
    expect(canceled.stdout).toBe(`task:    ${taskId}\nstate:   canceled\nresidue: nothing else was left running\n`)
    const unknown = await runCli(["cancel", served.listening.session_id, "tsk_nope"], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/^error\[E-IO-003\]: cancel of tsk_nope failed: .*-32001/)
    // The session goes on: it takes the next task (which spins too, until the stop cancels it).
    const next = await rpc(served.listening.url, "message/send", { message: referenceMessage("again"), configuration: { blocking: false } })
    const nextId: string = next.body.result.id
    expect(next.body.result.status.state).not.toBe("rejected")

    const stopped = await runCli(["stop", served.listening.session_id.slice(0, 20)], env)
    expect(stopped.code, stopped.stderr).toBe(0)
    expect(stopped.stdout).toBe(
      `stopped: ${served.listening.session_id}\ncapsule: test-agent@0.1.0\nsignal:  SIGTERM\ncanceled: ${nextId}\nresidue: nothing else was left running\n`
    )
    expect(await served.exited).toEqual({ code: 0, signal: null })
    const ended = traceEvents(served.listening.records).filter((line) => line.event_type === "session_end")
    expect(ended).toHaveLength(1)
    expect(ended[0].exit_status).not.toBe("crashed")

    const byUrl = await runCli(["stop", echo.listening.url], env)
    expect(byUrl.code, byUrl.stderr).toBe(0)
    expect(byUrl.stdout).toContain(`stopped: ${echo.listening.session_id}\n`)
    await echo.exited
    expect((await ps()).sessions.map((session) => session.session_id)).not.toContain(echo.listening.session_id)

    const nobody = await runCli(["stop", echo.listening.url], env)
    expect(nobody.code).toBe(1)
    expect(nobody.stderr).toMatch(/^error\[E-RUN-022\]: no session running on this machine has its door at /)
  }, 120_000)

  it("a session killed with SIGKILL is pruned by ps, its trace given a crashed session_end; the next start of its directory says so too", async () => {
    const [first, second] = await Promise.all([agent([done]), agent([done])])
    const [killed, again] = await Promise.all([serveCli(first, env, cleanups), serveCli(second, env, cleanups)])
    killed.child.kill("SIGKILL")
    again.child.kill("SIGKILL")
    await Promise.all([killed.exited, again.exited])

    const result = await runCli(["ps"], env)
    expect(result.code).toBe(0)
    expect(result.stderr).toContain(`pruned: session ${killed.listening.session_id} (test-agent@0.1.0, pid ${killed.child.pid}) ended without shutting down: it crashed or was killed; session_end (exit_status crashed) written to ${join(killed.listening.records, "trace.jsonl")}`)
    const last = traceEvents(killed.listening.records).at(-1)
    expect(last).toMatchObject({ event_type: "session_end", session_id: killed.listening.session_id, exit_status: "crashed", pid: killed.child.pid, noted_by: "ps" })
    expect(traceEvents(killed.listening.records).filter((line) => line.event_type === "session_end")).toHaveLength(1)
    // Pruned once: the next ps has nothing to say about it.
    expect((await runCli(["ps"], env)).stderr).not.toContain(killed.listening.session_id)

    // `ps` pruned both; a session killed after it is reported at its directory's next start.
    const third = await serveCli(second, env, cleanups)
    third.child.kill("SIGKILL")
    await third.exited
    const restarted = await serveCli(second, env, cleanups)
    await until(() => restarted.stderr().includes(third.listening.session_id), "the crash report")
    expect(restarted.stderr()).toContain(`warning: session ${third.listening.session_id} (test-agent@0.1.0, pid ${third.child.pid}) ended without shutting down: it crashed or was killed`)
    expect(traceEvents(third.listening.records).at(-1)).toMatchObject({ event_type: "session_end", exit_status: "crashed", noted_by: restarted.listening.session_id })
  }, 120_000)

  it("run is listed too; stop --timeout 0 goes straight to SIGKILL and notes the crash itself", async () => {
    const dir = await agent([done])
    const ran = await listeningCli(["run", dir, "--json", "--idle-timeout", "60"], env, cleanups)
    const listed = (await ps()).sessions.find((session) => session.session_id === ran.listening.session_id)
    expect(listed).toMatchObject({ command: "run", pid: ran.child.pid, state: "running", tasks: { active: 0, queued: 0, parked: 0, finished: 0 } })
    const stopped = await runCli(["stop", ran.listening.session_id, "--timeout", "0"], env)
    expect(stopped.code, stopped.stderr).toBe(0)
    expect(stopped.stdout).toContain("signal:  SIGKILL after 0 s\n")
    expect((await ran.exited).signal).toBe("SIGKILL")
    expect(traceEvents(ran.listening.records).at(-1)).toMatchObject({ event_type: "session_end", exit_status: "crashed", noted_by: "stop" })
    expect((await ps()).sessions.map((session) => session.session_id)).not.toContain(ran.listening.session_id)
  }, 90_000)
})
