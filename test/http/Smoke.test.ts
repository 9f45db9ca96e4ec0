import { afterEach, describe, expect, it } from "vitest"
import { type OpenDoor, openDoor, rpc } from "../lib/Door.js"

describe("door smoke", () => {
  let door: OpenDoor | undefined
  afterEach(async () => {
    await door?.close()
    door = undefined
  })

  it("serves the card and answers a JSON-RPC call on port 0", async () => {
    door = await openDoor()
    const card: any = await (await fetch(`${door.url}.well-known/agent-card.json`)).json()
    expect(card.url).toBe(door.url)
    expect(card.session_id).toBe(door.sessionId)
    const reply = await rpc(door.url, "tasks/get", { id: "tsk_nope" }, { id: "abc" })
    expect(reply.body).toEqual({ jsonrpc: "2.0", id: "abc", error: { code: -32001, message: "Task not found", data: { taskId: "tsk_nope" } } })
  })
})
