/**
 * The push-config store's bounds (../../src/services/PushConfigs.ts): per task and per session,
 * a replaced config not counted twice, and a removed or forgotten one giving its room back.
 */
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { makePushConfigs } from "../../src/services/PushConfigs.js"

const config = (taskId: string, id?: string) => ({ taskId, url: "https://hooks.example.com/a2a", version: "1.0" as const, ...(id === undefined ? {} : { id }) })

describe("PushConfigs", () => {
  it("bounds configs per task and per session; replacing, removing and forgetting keep the count true", () => {
    const store = makePushConfigs({ perTask: 2, perSession: 3 })
    const put = (taskId: string, id?: string) => Effect.runSync(Effect.either(store.put(config(taskId, id))))
    expect(Either.isRight(put("t1", "a"))).toBe(true)
    expect(Either.isRight(put("t1", "b"))).toBe(true)
    expect(put("t1", "c")).toMatchObject({ left: { _tag: "PushConfigLimit", per: "task", limit: 2 } })
    // The same id again replaces: no new room taken.
    expect(Either.isRight(put("t1", "a"))).toBe(true)
    expect(Either.isRight(put("t2"))).toBe(true)
    expect(put("t3")).toMatchObject({ left: { _tag: "PushConfigLimit", per: "session", limit: 3 } })
    Effect.runSync(store.remove("t1", "b"))
    expect(Either.isRight(put("t3"))).toBe(true)
    expect(put("t4")).toMatchObject({ left: { _tag: "PushConfigLimit", per: "session" } })
    Effect.runSync(store.forget("t1"))
    expect(store.current("t1")).toEqual([])
    expect(Either.isRight(put("t4"))).toBe(true)
    expect(Effect.runSync(Effect.either(store.remove("t1", "a")))).toMatchObject({ left: { _tag: "PushConfigNotFound" } })
  })
})
