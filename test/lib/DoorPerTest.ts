/**
 * The door a test file's tests each open, one at a time: `open` starts it with the echo capsule
 * answering after 20 ms unless the options say otherwise; after each test the registered
 * cleanups run (raw streams first) and the door closes. `stillServes` is the check that follows
 * an abuse: the door still answers a JSON-RPC call.
 */
import { afterEach, expect } from "vitest"
import { type DoorOptions, type OpenDoor, openDoor, rpc } from "./Door.js"

export interface DoorPerTest {
  readonly open: (options?: DoorOptions) => Promise<OpenDoor>
  /** The door the running test opened. */
  readonly door: OpenDoor | undefined
  /** Runs `cleanup` after the test, before the door closes. */
  readonly onCleanup: (cleanup: () => Promise<void> | void) => void
  /** The same list, for helpers that take one (runWatch, startCuttingProxy). */
  readonly cleanups: Array<() => Promise<void> | void>
}

export const doorPerTest = (): DoorPerTest => {
  let door: OpenDoor | undefined
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup()
    await door?.close()
    door = undefined
  })
  return {
    open: async (options = {}) => {
      door = await openDoor({ ...options, scripted: { echoMs: 20, ...options.scripted } })
      return door
    },
    get door() {
      return door
    },
    onCleanup: (cleanup) => void cleanups.push(cleanup),
    cleanups
  }
}

/** The door still answers a JSON-RPC call. */
export const stillServes = async (url: string) => {
  const reply = await rpc(url, "tasks/get", { id: "tsk_probe" }, { id: "probe" })
  expect(reply.status).toBe(200)
  expect(reply.body).toMatchObject({ id: "probe", error: { code: -32001 } })
}
