/**
 * A fleet, black box: three `serve --cluster` runners on loopback over one PostgreSQL database,
 * real processes, real SIGKILL, a capsule whose tasks stream a frame about every 100 ms. Any door
 * answers for any session; a message id is one task whichever doors it is sent to; a cancel
 * through a third runner interrupts the task on its owner; an SSE client whose runner dies
 * resumes on another with `Last-Event-ID` and misses and repeats nothing; when a session's owner
 * dies, its streams on other doors go on and end with the recovery policy's final state, and
 * every accepted task ends on a survivor.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Fleet, postRpc, type Runner, type SseFrame, sseFrames, startFleet, startRunner } from "../lib/Fleet.js"
import { makeTickingCapsuleDir } from "../lib/FleetCapsule.js"
import { freshDatabaseUrl, postgresAvailable } from "../lib/Postgres.js"

const postgres = await postgresAvailable()

const terminal = new Set(["completed", "failed", "canceled", "rejected"])

/** A `message/send` that answers at once (0.3's default is to wait for the task to end). */
const message = (text: string, messageId = `m-${Math.random().toString(36).slice(2)}`) => ({
  message: { kind: "message", role: "user", messageId, parts: [{ kind: "text", text }] },
  configuration: { blocking: false }
})

interface Placement {
  readonly runners: ReadonlyArray<{ readonly address: string; readonly healthy: boolean }>
  readonly sessions: ReadonlyArray<{ readonly session_id: string; readonly runner: string }>
}

const placement = async (runner: Runner): Promise<Placement> => (await (await fetch(`${runner.url}fleet/placement`)).json()) as Placement

/** The result of one SSE frame of an A2A stream. */
const resultOf = (frame: SseFrame): { kind?: string; final?: boolean; status?: { state?: string; message?: { parts?: Array<{ text?: string }> } } } =>
  frame.data === undefined ? {} : (JSON.parse(frame.data) as { result?: object }).result ?? {}

const isFinal = (frame: SseFrame) => {
  const result = resultOf(frame)
  return result.kind === "status-update" && (result.final === true || terminal.has(result.status?.state ?? ""))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `tasks/get` on `runner` until the task is in one of `states`. */
const waitForState = async (url: string, taskId: string, states: ReadonlyArray<string>, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const answer = await postRpc(url, "tasks/get", { id: taskId }).catch((error: unknown) => ({ error }))
    last = answer
    const state = (answer as { result?: { status?: { state?: string } } }).result?.status?.state
    if (state !== undefined && states.includes(state)) return (answer as { result: { status: { state: string; message?: unknown } } }).result
    await sleep(100)
  }
  throw new Error(`task ${taskId} not ${states.join("|")} within ${timeoutMs} ms; last answer ${JSON.stringify(last)}`)
}

const sessionUrl = (runner: Runner, sessionId: string) => `${runner.url}s/${sessionId}/`

/**
 * Waits until `count` runners are healthy, then a little more, so that shards have settled
 * before a test picks a session's owner (a runner that joins takes shards from the others).
 */
const settled = async (through: Runner, count: number) => {
  const deadline = Date.now() + 30_000
  while ((await placement(through)).runners.filter((runner) => runner.healthy).length < count && Date.now() < deadline) await sleep(200)
  await sleep(3_000)
}

describe.skipIf(!postgres)("a fleet of three runners over PostgreSQL", () => {
  let fleet: Fleet
  let cluster: string
  let dropDatabase: () => Promise<void> = async () => {}
  let dirs: Array<string>
  const extra: Array<Runner> = []

  beforeAll(async () => {
    const database = await freshDatabaseUrl()
    cluster = database.url
    dropDatabase = database.drop
    dirs = [await makeTickingCapsuleDir({ ticks: 30, tickMs: 100 })]
    fleet = await startFleet(3, { cluster, dirs, sessions: 6 })
    await settled(fleet.runners[0]!, 3)
  }, 180_000)

  afterAll(async () => {
    await fleet?.cleanup()
    await Promise.all(extra.map((runner) => runner.kill9()))
    await dropDatabase()
  })

  const alive = () => [...fleet.runners, ...extra].filter((runner) => runner.alive())

  /** Wakes the session (its card asks the owner) and says which live runner holds it. */
  const ownerOf = async (sessionId: string): Promise<Runner> => {
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const through = alive()[0]!
      await fetch(`${sessionUrl(through, sessionId)}.well-known/agent-card.json`)
      const view = await placement(through)
      const address = view.sessions.find((session) => session.session_id === sessionId)?.runner
      const owner = alive().find((runner) => runner.runnerAddress === address)
      if (owner !== undefined) return owner
      await sleep(200)
    }
    throw new Error(`no live owner for ${sessionId}`)
  }

  it("lists the same sessions on every runner, and any door answers tasks/get for any task", async () => {
    const ids = fleet.runners.map((runner) => runner.sessions.map((session) => session.session_id).sort())
    expect(ids[0]).toHaveLength(6)
    expect(ids[1]).toEqual(ids[0])
    expect(ids[2]).toEqual(ids[0])
    const [a, b, c] = fleet.runners as [Runner, Runner, Runner]
    const sessionId = a.sessions[0]!.session_id
    const sent = await postRpc(sessionUrl(a, sessionId), "message/send", message("hello"))
    expect(sent.error).toBeUndefined()
    const taskId = sent.result.id as string
    for (const door of [a, b, c]) {
      const got = await postRpc(sessionUrl(door, sessionId), "tasks/get", { id: taskId })
      expect(got.result?.id).toBe(taskId)
    }
    // 1.0 over HTTP+JSON on another door reads the same task.
    const rest = await fetch(`${sessionUrl(c, sessionId)}tasks/${taskId}`, { headers: { "a2a-version": "1.0" } })
    expect(rest.status).toBe(200)
    expect(((await rest.json()) as { id: string }).id).toBe(taskId)
    await waitForState(sessionUrl(b, sessionId), taskId, ["completed"])
  }, 60_000)

  it("takes the same messageId sent to two doors as one task", async () => {
    const [a, b] = fleet.runners as [Runner, Runner]
    const sessionId = a.sessions[1]!.session_id
    const params = message("once", `same-${Date.now()}`)
    const [first, second] = await Promise.all([
      postRpc(sessionUrl(a, sessionId), "message/send", params),
      postRpc(sessionUrl(b, sessionId), "message/send", params)
    ])
    expect(first.result?.id).toBeDefined()
    expect(second.result?.id).toBe(first.result.id)
    await waitForState(sessionUrl(a, sessionId), first.result.id, ["completed"])
  }, 60_000)

  it("cancels through a third runner: the owner interrupts the task and the answer says canceled within a second", async () => {
    const sessionId = fleet.runners[0]!.sessions[2]!.session_id
    const owner = await ownerOf(sessionId)
    const [submitVia, cancelVia] = fleet.runners.filter((runner) => runner !== owner) as [Runner, Runner]
    const sent = await postRpc(sessionUrl(submitVia, sessionId), "message/send", message("long"))
    const taskId = sent.result.id as string
    await waitForState(sessionUrl(cancelVia, sessionId), taskId, ["working"])
    await sleep(300)
    const started = performance.now()
    const canceled = await postRpc(sessionUrl(cancelVia, sessionId), "tasks/cancel", { id: taskId })
    const tookMs = performance.now() - started
    expect(canceled.error).toBeUndefined()
    expect(canceled.result.status.state).toBe("canceled")
    expect(tookMs).toBeLessThan(1_000)
    // The owner's registry says so too, read through the first door.
    expect((await waitForState(sessionUrl(submitVia, sessionId), taskId, ["canceled"])).status.state).toBe("canceled")
  }, 60_000)

  it("shows the placement (runners, health, session to runner) to admin", async () => {
    const view = await placement(fleet.runners[1]!)
    expect(view.runners.map((runner) => runner.address).sort()).toEqual(fleet.runners.map((runner) => runner.runnerAddress).sort())
    expect(view.runners.every((runner) => runner.healthy)).toBe(true)
    expect(view.sessions).toHaveLength(6)
  }, 30_000)

  it("resumes an SSE client whose runner was killed on another runner with Last-Event-ID: no gap, no repeat", async () => {
    const sessionId = fleet.runners[0]!.sessions[3]!.session_id
    const owner = await ownerOf(sessionId)
    const [held, resumeOn] = alive().filter((runner) => runner !== owner) as [Runner, Runner]
    const before: Array<SseFrame> = []
    let taskId = ""
    try {
      for await (const frame of sseFrames(sessionUrl(held, sessionId), "message/stream", message("stream me"))) {
        const result = resultOf(frame) as { id?: string; taskId?: string; kind?: string }
        if (taskId === "") taskId = result.kind === "task" ? result.id ?? "" : result.taskId ?? ""
        before.push(frame)
        if (before.filter((seen) => seen.id !== undefined).length === 5) await held.kill9()
      }
    } catch {
      // The runner holding the connection is gone: the stream breaks.
    }
    expect(taskId).not.toBe("")
    const lastId = before.filter((frame) => frame.id !== undefined).at(-1)!.id!
    const after: Array<SseFrame> = []
    for await (const frame of sseFrames(sessionUrl(resumeOn, sessionId), "tasks/resubscribe", { id: taskId }, { lastEventId: lastId })) {
      after.push(frame)
      if (isFinal(frame)) break
    }
    const seenIds = [...before, ...after].map((frame) => frame.id).filter((id) => id !== undefined)
    expect(new Set(seenIds).size).toBe(seenIds.length)
    expect(after.at(-1) !== undefined && isFinal(after.at(-1)!)).toBe(true)
    expect(resultOf(after.at(-1)!).status?.state).toBe("completed")
    // Ids only grow, and what was seen is every frame of the task the store holds.
    expect(seenIds.map(Number)).toEqual([...seenIds.map(Number)].sort((x, y) => x - y))
    // The whole session again from id 0, read on the owner's door this time.
    expect(seenIds.map(Number)).toEqual(await replayIds(owner, sessionId, taskId))
  }, 90_000)

  /** Every frame id of a task, from a watch of the whole session from id 0, up to its final frame. */
  const replayIds = async (runner: Runner, sessionId: string, taskId: string): Promise<Array<number>> => {
    const ids: Array<number> = []
    const controller = new AbortController()
    try {
      for await (const frame of sseFrames(sessionUrl(runner, sessionId), "stream/watch", {}, { lastEventId: "0", signal: controller.signal })) {
        if (frame.id === undefined || frame.data === undefined) continue
        const data = JSON.parse(frame.data) as { task_id?: string; taskId?: string; id?: string; final?: boolean; state?: string }
        if ((data.task_id ?? data.taskId ?? data.id) !== taskId) continue
        ids.push(Number(frame.id))
        if (frame.event === "status" && data.final === true) break
      }
    } finally {
      controller.abort()
    }
    return ids
  }

  it("moves a session whose owner was killed mid-task: other doors' streams end failed (runner lost), queued tasks complete, nothing is lost", async () => {
    // Three runners again, so two survive the kill.
    if (alive().length < 3) {
      extra.push(await startRunner({ cluster, dirs, sessions: 6 }))
      await settled(alive()[0]!, 3)
    }
    const sessionId = fleet.runners[0]!.sessions[4]!.session_id
    const submitVia = alive()[0]!
    const running = await postRpc(sessionUrl(submitVia, sessionId), "message/send", message("running"))
    const queued = await Promise.all([1, 2].map(() => postRpc(sessionUrl(submitVia, sessionId), "message/send", message("queued"))))
    const taskIds = [running.result.id as string, ...queued.map((answer) => answer.result.id as string)]
    await waitForState(sessionUrl(submitVia, sessionId), taskIds[0]!, ["working"])
    // The owner is read once the task runs: it is the runner to kill.
    const owner = await ownerOf(sessionId)
    const others = alive().filter((runner) => runner !== owner)
    const door = others[0]!
    const streamed: Array<SseFrame> = []
    const watching = (async () => {
      for await (const frame of sseFrames(sessionUrl(others[1]!, sessionId), "tasks/resubscribe", { id: taskIds[0] })) {
        streamed.push(frame)
        if (isFinal(frame)) return Date.now()
      }
      return Date.now()
    })()
    await sleep(800)
    const killedAt = Date.now()
    await owner.kill9()
    const endedAt = await watching
    expect(endedAt - killedAt).toBeLessThan(15_000)
    const final = resultOf(streamed.at(-1)!)
    expect(final.status?.state).toBe("failed")
    expect(final.status?.message?.parts?.[0]?.text).toMatch(/^runner lost/)
    const ids = streamed.map((frame) => frame.id).filter((id) => id !== undefined).map(Number)
    expect(new Set(ids).size).toBe(ids.length)
    for (const taskId of taskIds.slice(1)) await waitForState(sessionUrl(door, sessionId), taskId, ["completed"], 60_000)
    for (const survivor of alive()) {
      for (const taskId of taskIds) {
        const got = await postRpc(sessionUrl(survivor, sessionId), "tasks/get", { id: taskId })
        expect(terminal.has(got.result?.status?.state)).toBe(true)
      }
    }
  }, 120_000)

  it("hands a session off when its runner is stopped with SIGTERM: the running task finishes there, the queued one runs on another runner", async () => {
    if (alive().length < 2) {
      extra.push(await startRunner({ cluster, dirs, sessions: 6 }))
      await settled(alive()[0]!, 2)
    }
    const sessionId = fleet.runners[0]!.sessions[5]!.session_id
    const submitVia = alive()[0]!
    const running = await postRpc(sessionUrl(submitVia, sessionId), "message/send", message("finish me"))
    const queued = await postRpc(sessionUrl(submitVia, sessionId), "message/send", message("run me elsewhere"))
    await waitForState(sessionUrl(submitVia, sessionId), running.result.id, ["working"])
    const owner = await ownerOf(sessionId)
    const door = alive().find((runner) => runner !== owner)!
    await sleep(500)
    const stopped = owner.stop("SIGTERM", 40_000)
    expect((await waitForState(sessionUrl(door, sessionId), running.result.id, ["completed", "failed", "canceled"], 40_000)).status.state).toBe("completed")
    expect(await stopped).toBe(0)
    expect((await waitForState(sessionUrl(door, sessionId), queued.result.id, ["completed", "failed", "canceled"], 40_000)).status.state).toBe("completed")
    // Built again on a runner still alive.
    const view = await placement(door)
    const now = view.sessions.find((session) => session.session_id === sessionId)?.runner
    expect(alive().map((runner) => runner.runnerAddress)).toContain(now)
  }, 120_000)
})
