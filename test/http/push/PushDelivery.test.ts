/**
 * Push notifications end to end: a real door and a real webhook receiver on loopback (allowed by
 * the operator, as `--push-allow 127.0.0.1` does). Every update of a task arrives, in order, in
 * the shape of the version its config was registered over; a failing receiver is retried; a
 * redirect is not followed; a private address is refused unless allowed; configs are bounded,
 * managed in both versions, and gone when their task ends.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import { a2aMessage, type OpenDoor, openDoor, rpc, sleep, waitForState } from "../../lib/Door.js"

interface Delivery {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

interface Receiver {
  readonly url: string
  readonly deliveries: Array<Delivery>
  /** Answers with this status (and location) while it returns one; 204 when it returns undefined. */
  answer: (delivery: Delivery, index: number) => { readonly status: number; readonly location?: string } | undefined
  readonly close: () => Promise<void>
}

const receive = async (): Promise<Receiver> => {
  const deliveries: Array<Delivery> = []
  let server: Server | undefined
  const receiver: Receiver = {
    url: "",
    deliveries,
    answer: () => undefined,
    close: () => new Promise((resolve) => server?.close(() => resolve()))
  }
  server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const delivery: Delivery = { path: request.url ?? "", headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }
      const answer = receiver.answer(delivery, deliveries.length)
      deliveries.push(delivery)
      response.writeHead(answer?.status ?? 204, answer?.location === undefined ? {} : { location: answer.location })
      response.end()
    })
  })
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve))
  const address = server.address() as { port: number }
  return Object.assign(receiver, { url: `http://127.0.0.1:${address.port}` })
}

let door: OpenDoor | undefined
let receiver: Receiver | undefined
afterEach(async () => {
  await door?.close()
  await receiver?.close()
  door = undefined
  receiver = undefined
})

const setUp = async (pushAllow: ReadonlyArray<string> = ["127.0.0.1"]) => {
  receiver = await receive()
  door = await openDoor({ door: { pushAllow } })
  return { door, receiver }
}

let counter = 0
const message1 = (text: string, extra: Record<string, unknown> = {}) => ({ messageId: `push-${counter++}`, role: "ROLE_USER", parts: [{ text }], ...extra })

const until = async (check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting for deliveries")
    await sleep(20)
  }
}

const stateOf = (body: any): string | undefined => body.task?.status?.state ?? body.statusUpdate?.status?.state

describe("push delivery", () => {
  it("an inline 1.0 config gets the task as made, then every update in order, to the end; then the config is gone", async () => {
    const { door, receiver } = await setUp()
    const sent = await rpc(door.url, "SendMessage", {
      message: message1("/stream 3 30"),
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: { url: `${receiver.url}/hook`, token: "tok-1", authentication: { scheme: "Bearer", credentials: "cred-1" } }
      }
    })
    const task = sent.body.result.task
    await until(() => receiver.deliveries.some((delivery) => stateOf(delivery.body) === "TASK_STATE_COMPLETED"))
    const bodies = receiver.deliveries.map((delivery) => delivery.body)
    expect(bodies[0].task.id).toBe(task.id)
    expect(stateOf(bodies[0])).toBe("TASK_STATE_SUBMITTED")
    expect(stateOf(bodies.at(-1))).toBe("TASK_STATE_COMPLETED")
    for (const body of bodies.slice(1)) expect(["statusUpdate", "artifactUpdate"]).toContain(Object.keys(body)[0])
    expect(bodies.flatMap((body) => (body.artifactUpdate ? [body.artifactUpdate.artifact.parts[0].text] : [])).join("")).toBe("chunk 1 chunk 2 chunk 3 ")
    for (const delivery of receiver.deliveries) {
      expect(delivery.path).toBe("/hook")
      expect(delivery.headers["content-type"]).toBe("application/a2a+json")
      expect(delivery.headers["x-a2a-notification-token"]).toBe("tok-1")
      expect(delivery.headers.authorization).toBe("Bearer cred-1")
    }
    // The task ended: its configs went with it.
    await sleep(50)
    const listed = await rpc(door.url, "ListTaskPushNotificationConfigs", { taskId: task.id })
    expect(listed.body.result).toEqual({ configs: [], nextPageToken: "" })
  })

  it("a config made for a running task gets its later updates; 0.3's gets the whole 0.3 task each time", async () => {
    const { door, receiver } = await setUp()
    const task = (await rpc(door.url, "message/send", { message: a2aMessage("/stream 4 60"), configuration: { blocking: false } })).body.result
    await waitForState(door.url, task.id, ["working"])
    const set = await rpc(door.url, "tasks/pushNotificationConfig/set", {
      taskId: task.id,
      pushNotificationConfig: { url: `${receiver.url}/old`, authentication: { schemes: ["Bearer"], credentials: "c03" } }
    })
    expect(set.body.result).toMatchObject({ taskId: task.id, pushNotificationConfig: { url: `${receiver.url}/old`, authentication: { schemes: ["Bearer"] } } })
    const configId = set.body.result.pushNotificationConfig.id
    expect(configId).toMatch(/^pnc_/)
    const got = await rpc(door.url, "tasks/pushNotificationConfig/get", { id: task.id, pushNotificationConfigId: configId })
    expect(got.body.result).toEqual(set.body.result)
    expect((await rpc(door.url, "tasks/pushNotificationConfig/list", { id: task.id })).body.result).toEqual([set.body.result])
    await until(() => receiver.deliveries.some((delivery) => delivery.body.status?.state === "completed"))
    for (const delivery of receiver.deliveries) {
      expect(delivery.headers["content-type"]).toBe("application/json")
      expect(delivery.headers.authorization).toBe("Bearer c03")
      expect(delivery.body).toMatchObject({ kind: "task", id: task.id })
    }
  })

  it("retries a failing receiver with backoff, does not follow a redirect, and stops when the config is deleted", async () => {
    const { door, receiver } = await setUp()
    // The first two tries of every update fail.
    const tries = new Map<string, number>()
    receiver.answer = (delivery) => {
      if (delivery.path === "/elsewhere") return undefined
      if (delivery.path === "/moved") return { status: 302, location: `${receiver.url}/elsewhere` }
      const key = JSON.stringify(delivery.body)
      const seen = tries.get(key) ?? 0
      tries.set(key, seen + 1)
      return seen < 2 ? { status: 503 } : undefined
    }
    const task = (await rpc(door.url, "SendMessage", { message: message1("/complete later"), configuration: { returnImmediately: true } })).body.result.task
    // A task that ended already takes no configs.
    await waitForState(door.url, task.id, ["completed"])
    const late = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: `${receiver.url}/flaky` })
    expect(late.body.error.code).toBe(-32004)

    await rpc(door.url, "SendMessage", {
      message: message1("/complete flaky"),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}/flaky` } }
    })
    await until(() => receiver.deliveries.some((delivery) => delivery.path === "/flaky" && stateOf(delivery.body) === "TASK_STATE_COMPLETED" && tries.get(JSON.stringify(delivery.body))! >= 3))
    const flaky = receiver.deliveries.filter((delivery) => delivery.path === "/flaky")
    // Every update was tried three times, the third delivered; none was skipped.
    expect([...tries.values()].every((count) => count === 3)).toBe(true)
    expect(flaky.length).toBe(tries.size * 3)

    await rpc(door.url, "SendMessage", {
      message: message1("/complete moved"),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}/moved` } }
    })
    await until(() => receiver.deliveries.filter((delivery) => delivery.path === "/moved").length >= 2)
    await sleep(300)
    expect(receiver.deliveries.filter((delivery) => delivery.path === "/elsewhere")).toEqual([])
    // A redirect is not retried either: each update went to /moved once.
    const moved = receiver.deliveries.filter((delivery) => delivery.path === "/moved")
    expect(new Set(moved.map((delivery) => JSON.stringify(delivery.body))).size).toBe(moved.length)

    const running = (await rpc(door.url, "SendMessage", { message: message1("/stream 50 40"), configuration: { returnImmediately: true } })).body.result.task
    const made = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: running.id, url: `${receiver.url}/stopped` })
    expect(made.body.result).toMatchObject({ taskId: running.id, url: `${receiver.url}/stopped` })
    await until(() => receiver.deliveries.some((delivery) => delivery.path === "/stopped"))
    expect((await rpc(door.url, "DeleteTaskPushNotificationConfig", { taskId: running.id, id: made.body.result.id })).body.result).toBeNull()
    await sleep(100)
    const count = receiver.deliveries.filter((delivery) => delivery.path === "/stopped").length
    await sleep(400)
    expect(receiver.deliveries.filter((delivery) => delivery.path === "/stopped").length).toBe(count)
    const gone = await rpc(door.url, "GetTaskPushNotificationConfig", { taskId: running.id, id: made.body.result.id })
    expect(gone.body.error.code).toBe(-32001)
    await rpc(door.url, "CancelTask", { id: running.id })
  })
})

describe("push config checks", () => {
  it("refuses private addresses unless allowed, bounds configs per task, and hides other principals' tasks", async () => {
    const { door, receiver } = await setUp([])
    const task = (await rpc(door.url, "SendMessage", { message: message1("/forever"), configuration: { returnImmediately: true } })).body.result.task
    for (const url of [`${receiver.url}/hook`, "http://localhost:9/x", "http://169.254.169.254/latest", "http://[::1]/x", "ftp://example.com/x"]) {
      const refused = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url })
      expect(refused.body.error.code, url).toBe(-32602)
    }
    const inline = await rpc(door.url, "SendMessage", {
      message: message1("/complete never"),
      configuration: { taskPushNotificationConfig: { url: `${receiver.url}/hook` } }
    })
    expect(inline.body.error.message).toMatch(/--push-allow 127\.0\.0\.1/)
    expect(receiver.deliveries).toEqual([])
    const header = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: "https://example.com/x", token: "a\r\nx-evil: 1" })
    expect(header.body.error.code).toBe(-32602)
    await rpc(door.url, "CancelTask", { id: task.id })
  })

  it("bounds configs per task (-32031 past it) and answers unknown ones -32001", async () => {
    const { door, receiver } = await setUp()
    const task = (await rpc(door.url, "SendMessage", { message: message1("/forever"), configuration: { returnImmediately: true } })).body.result.task
    for (let i = 0; i < 8; i++) {
      const made = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: `${receiver.url}/n${i}` })
      expect(made.body.result.id).toMatch(/\S/)
    }
    const ninth = await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: `${receiver.url}/n9` })
    expect(ninth.body.error.code).toBe(-32031)
    expect(ninth.body.error.data[0].reason).toBe("TOO_MANY_PUSH_CONFIGS")
    // The same id again replaces instead of adding.
    const first = (await rpc(door.url, "ListTaskPushNotificationConfigs", { taskId: task.id })).body.result.configs[0]
    expect((await rpc(door.url, "CreateTaskPushNotificationConfig", { ...first, url: `${receiver.url}/again` })).body.result.url).toBe(`${receiver.url}/again`)
    expect((await rpc(door.url, "GetTaskPushNotificationConfig", { taskId: task.id, id: "pnc_none" })).body.error.code).toBe(-32001)
    expect((await rpc(door.url, "CreateTaskPushNotificationConfig", { taskId: "tsk_none", url: `${receiver.url}/x` })).body.error.code).toBe(-32001)
    await rpc(door.url, "CancelTask", { id: task.id })
  })
})
