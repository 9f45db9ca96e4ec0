/**
 * Failover times of a fleet (run with vite-node; part of `npm run bench:fleet`): three runners
 * over PostgreSQL, a session whose task streams a frame every 100 ms and has another task queued
 * behind it; the session's owner is killed with -9 (or, in the second part, stopped with SIGTERM)
 * while the first task runs. Measured from the signal, on a stream held on another runner's door:
 * - `finalMs`: until the running task's final frame (`failed`, "runner lost", after a kill;
 *   `completed` after a SIGTERM hand-off, where it finishes on its old runner);
 * - `queuedStartMs`: until the queued task is `working` on another runner;
 * - `rebuiltMs`: until the placement view names a new owner.
 * Prints a table and writes bench/results/fleet-<date>-failover.json.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { type Runner, postRpc, sseFrames, startFleet } from "../test/lib/Fleet.js"
import { makeTickingCapsuleDir } from "../test/lib/FleetCapsule.js"
import { freshDatabaseUrl } from "../test/lib/Postgres.js"

const rounds = Number(process.env["FAILOVER_ROUNDS"] ?? 3)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const send = (url: string, text: string) =>
  postRpc(url, "message/send", { message: { kind: "message", role: "user", messageId: `m-${Math.random()}`, parts: [{ kind: "text", text }] }, configuration: { blocking: false } })

const stateOf = async (url: string, id: string) => ((await postRpc(url, "tasks/get", { id })).result?.status?.state ?? "") as string

const placementOf = async (runner: Runner) =>
  (await (await fetch(`${runner.url}fleet/placement`)).json()) as { sessions: Array<{ session_id: string; runner: string }>; runners: Array<{ healthy: boolean }> }

const round = async (signal: "SIGKILL" | "SIGTERM") => {
  const database = await freshDatabaseUrl()
  const cluster = database.url
  const dirs = [await makeTickingCapsuleDir({ ticks: 60, tickMs: 100 })]
  const fleet = await startFleet(3, { cluster, dirs, sessions: 3 })
  try {
    while ((await placementOf(fleet.runners[0]!)).runners.filter((runner) => runner.healthy).length < 3) await sleep(200)
    await sleep(3_000)
    const sessionId = fleet.runners[0]!.sessions[0]!.session_id
    const at = (runner: Runner) => `${runner.url}s/${sessionId}/`
    const first = (await send(at(fleet.runners[0]!), "running")).result.id as string
    const queued = (await send(at(fleet.runners[0]!), "queued")).result.id as string
    while ((await stateOf(at(fleet.runners[0]!), first)) !== "working") await sleep(50)
    const ownerAddress = (await placementOf(fleet.runners[0]!)).sessions.find((session) => session.session_id === sessionId)!.runner
    const owner = fleet.runners.find((runner) => runner.runnerAddress === ownerAddress)!
    const door = fleet.runners.find((runner) => runner !== owner)!
    let final: { at: number; state: string } | undefined
    const streaming = (async () => {
      for await (const frame of sseFrames(at(door), "tasks/resubscribe", { id: first })) {
        const result = frame.data === undefined ? {} : JSON.parse(frame.data).result ?? {}
        if (result.kind === "status-update" && result.final === true) return (final = { at: Date.now(), state: result.status?.state })
      }
    })()
    await sleep(1_000)
    const signalled = Date.now()
    if (signal === "SIGKILL") await owner.kill9()
    else void owner.stop("SIGTERM", 60_000)
    let queuedStart: number | undefined
    let rebuilt: number | undefined
    while (queuedStart === undefined || rebuilt === undefined) {
      if (queuedStart === undefined && ["working", "completed"].includes(await stateOf(at(door), queued))) queuedStart = Date.now()
      if (rebuilt === undefined) {
        const now = (await placementOf(door)).sessions.find((session) => session.session_id === sessionId)!.runner
        if (now !== ownerAddress && now !== "") rebuilt = Date.now()
      }
      if (Date.now() - signalled > 60_000) throw new Error("no failover within 60 s")
      await sleep(50)
    }
    await streaming
    return { signal, finalMs: final!.at - signalled, finalState: final!.state, queuedStartMs: queuedStart - signalled, rebuiltMs: rebuilt - signalled }
  } finally {
    await fleet.cleanup()
    await database.drop()
  }
}

const results = []
for (const signal of ["SIGKILL", "SIGTERM"] as const) {
  for (let i = 0; i < rounds; i++) {
    const result = await round(signal)
    results.push(result)
    console.log(`${signal.padEnd(8)} final ${String(result.finalMs).padStart(6)} ms (${result.finalState})  queued task started ${String(result.queuedStartMs).padStart(6)} ms  new owner ${String(result.rebuiltMs).padStart(6)} ms`)
  }
}
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
for (const signal of ["SIGKILL", "SIGTERM"]) {
  const of = results.filter((result) => result.signal === signal)
  console.log(`${signal}: median final ${median(of.map((r) => r.finalMs))} ms, queued start ${median(of.map((r) => r.queuedStartMs))} ms, new owner ${median(of.map((r) => r.rebuiltMs))} ms (${of.length} rounds)`)
}
mkdirSync("bench/results", { recursive: true })
writeFileSync(`bench/results/fleet-${new Date().toISOString().slice(0, 10)}-failover.json`, JSON.stringify({ date: new Date().toISOString(), rounds: results }, null, 2))
