/**
 * A completion must prove it comes from the delegation it names (../../src/services/DelegationTracker.ts):
 * over real HTTP, a completion for a delegation this session never started (a forged id), one
 * without or with the wrong secret, and one replayed after its delegation completed are refused
 * with -32004 and start no task; a completion the queue turned away leaves the delegation open
 * for its one retry; and of two completions racing for one delegation, exactly one becomes a task.
 */
import { afterEach, describe, expect, it } from "vitest"
import { type OpenDoor, openDoor, referenceMessage, rpc } from "../lib/Door.js"

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const SECRET = "the-delegation-secret-0123456789"

const complete = (open: OpenDoor, headers: Record<string, string>, text = "/complete child done") =>
  rpc(open.url, "message/send", { message: referenceMessage(text) }, {
    headers: { "x-murmur-task-origin": "completion", "x-murmur-task-trust": "trusted", "x-murmur-completion-session": open.sessionId, ...headers }
  })

/** Every task the session holds, whatever its state. */
const taskCount = async (open: OpenDoor) => {
  const stats = await open.run(open.registry.stats())
  return stats.queued + stats.active + stats.retained
}

describe("completion proof", () => {
  it("refuses a forged delegation id, a missing or wrong secret, and a replay; takes the one real completion", async () => {
    door = await openDoor()
    await door.run(door.delegations.expect("dlg_real", SECRET))
    const before = await taskCount(door)

    const forged = await complete(door, { "x-murmur-delegation-id": "dlg_forged", "x-murmur-completion-secret": SECRET })
    expect(forged.body.error).toEqual({ code: -32004, message: "completion for dlg_forged refused: this session started no such delegation" })
    const unnamed = await complete(door, {})
    expect(unnamed.body.error).toEqual({
      code: -32004,
      message: "a completion must name its delegation (x-murmur-delegation-id) and carry its secret (x-murmur-completion-secret)"
    })
    const noSecret = await complete(door, { "x-murmur-delegation-id": "dlg_real" })
    expect(noSecret.body.error.code).toBe(-32004)
    const wrong = await complete(door, { "x-murmur-delegation-id": "dlg_real", "x-murmur-completion-secret": "not-the-secret-0123456789" })
    expect(wrong.body.error).toEqual({ code: -32004, message: "completion for dlg_real refused: it does not carry that delegation's secret" })

    const real = await complete(door, { "x-murmur-delegation-id": "dlg_real", "x-murmur-completion-secret": SECRET })
    expect(real.body.result.status.state).toBe("submitted")
    expect(await door.run(door.delegations.completion("dlg_real"))).toEqual({ _tag: "Completed", taskId: real.body.result.id })

    const replayed = await complete(door, { "x-murmur-delegation-id": "dlg_real", "x-murmur-completion-secret": SECRET })
    expect(replayed.body.error).toEqual({ code: -32004, message: "completion for dlg_real refused: that delegation has already completed" })
    expect(await taskCount(door)).toBe(before + 1)
  })

  it("a completion the full queue rejected leaves its delegation open for the retry", async () => {
    door = await openDoor({ door: { acceptance: "single" } })
    await door.run(door.delegations.expect("dlg_retry", SECRET))
    // A single-task door busy with its one task turns the completion away.
    await rpc(door.url, "message/send", { message: referenceMessage("/sleep 300") })
    const rejected = await complete(door, { "x-murmur-delegation-id": "dlg_retry", "x-murmur-completion-secret": SECRET })
    expect(rejected.body.result?.status?.state ?? rejected.body.error).toBe("rejected")
    expect(await door.run(door.delegations.completion("dlg_retry"))).toEqual({ _tag: "Open" })
  })

  it("of completions racing for one delegation, exactly one becomes a task", async () => {
    door = await openDoor()
    await door.run(door.delegations.expect("dlg_race", SECRET))
    const before = await taskCount(door)
    const replies = await Promise.all(Array.from({ length: 8 }, () => complete(door!, { "x-murmur-delegation-id": "dlg_race", "x-murmur-completion-secret": SECRET })))
    expect(replies.filter((reply) => reply.body.result !== undefined)).toHaveLength(1)
    expect(replies.filter((reply) => reply.body.error?.code === -32004)).toHaveLength(7)
    expect(await taskCount(door)).toBe(before + 1)
  })

  it("once its delegation is over (the launcher dealt with its child's end), no completion is taken for it", async () => {
    door = await openDoor()
    await door.run(door.delegations.expect("dlg_over", SECRET))
    await door.run(door.delegations.finish("dlg_over"))
    const late = await complete(door, { "x-murmur-delegation-id": "dlg_over", "x-murmur-completion-secret": SECRET })
    expect(late.body.error).toEqual({ code: -32004, message: "completion for dlg_over refused: that delegation has already completed" })
  })
})
