/**
 * File and data parts at the door: decoded from both versions' shapes, kept in the task's
 * history in the caller's version, handed to a capsule that takes attachments, refused (-32005)
 * for one that takes text only and on a follow-up.
 */
import { afterEach, describe, expect, it } from "vitest"
import { echoInfo } from "../../src/services/EchoCapsule.js"
import { type OpenDoor, openDoor, rpc } from "../lib/Door.js"

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

const v1 = { "a2a-version": "1.0" }
let counter = 0

describe("file and data parts", () => {
  it("reach the capsule from either version, and come back in the task's history in the caller's shapes", async () => {
    door = await openDoor()
    const reply = await rpc(door.url, "message/send", {
      message: {
        kind: "message",
        messageId: `p-${counter++}`,
        role: "user",
        parts: [
          { kind: "text", text: "/complete look" },
          { kind: "data", data: { a: 1 } },
          { kind: "file", file: { bytes: "aGk=", name: "hi.txt", mimeType: "text/plain" } },
          { kind: "file", file: { uri: "https://example.com/f.pdf" } }
        ]
      },
      configuration: { blocking: true }
    })
    const task = reply.body.result
    expect(task.status.message.parts[0].text).toBe(`look [attached: data {"a":1}; file hi.txt 2 bytes; file https://example.com/f.pdf]`)
    expect(task.history[0].parts.slice(1)).toEqual([
      { kind: "data", data: { a: 1 } },
      { kind: "file", file: { bytes: "aGk=", name: "hi.txt", mimeType: "text/plain" } },
      { kind: "file", file: { uri: "https://example.com/f.pdf" } }
    ])
    const as1 = (await rpc(door.url, "GetTask", { id: task.id }, { headers: v1 })).body.result
    expect(as1.history[0].parts.slice(1)).toEqual([
      { data: { a: 1 } },
      { raw: "aGk=", filename: "hi.txt", mediaType: "text/plain" },
      { url: "https://example.com/f.pdf" }
    ])
    // 1.0's data part may hold any JSON value.
    const any = await rpc(door.url, "SendMessage", { message: { messageId: `p-${counter++}`, role: "ROLE_USER", parts: [{ text: "/complete n" }, { data: [1, "two"] }] } })
    expect(any.body.result.task.status.message.parts[0].text).toBe(`n [attached: data [1,"two"]]`)
  })

  it("are refused with -32005 by a text-only capsule and on a follow-up; malformed ones with -32602", async () => {
    door = await openDoor({ scripted: { info: { ...echoInfo, attachments: false } } })
    const textOnly = await rpc(door.url, "SendMessage", { message: { messageId: `p-${counter++}`, role: "ROLE_USER", parts: [{ text: "x" }, { raw: "aGk=" }] } })
    expect(textOnly.body.error.code).toBe(-32005)
    expect(textOnly.body.error.data[0].reason).toBe("CONTENT_TYPE_NOT_SUPPORTED")
    await door.close()
    door = await openDoor()
    const first = (await rpc(door.url, "SendMessage", { message: { messageId: `p-${counter++}`, role: "ROLE_USER", parts: [{ text: "hello" }] } })).body.result.task
    expect(first.status.state).toBe("TASK_STATE_INPUT_REQUIRED")
    const followUp = await rpc(door.url, "SendMessage", { message: { messageId: `p-${counter++}`, role: "ROLE_USER", taskId: first.id, parts: [{ text: "more" }, { data: { b: 2 } }] } })
    expect(followUp.body.error.code).toBe(-32005)
    expect(followUp.body.error.message).toBe("Incompatible content types")
    for (const part of [{ raw: "not base64!" }, { url: "file:///etc/passwd" }, { raw: "aGk=", url: "https://x.example/" }]) {
      const bad = await rpc(door.url, "SendMessage", { message: { messageId: `p-${counter++}`, role: "ROLE_USER", parts: [{ text: "x" }, part] } })
      expect(bad.body.error.code, JSON.stringify(part)).toBe(-32602)
    }
  })
})
