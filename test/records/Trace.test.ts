import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Context, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import type { TraceCapture } from "../../src/project/manifest/SessionBlocks.js"
import { sha256Hex, Trace, TraceWriteFailed } from "../../src/records/Trace.js"
import type {
  InferenceFields,
  SessionEndFields,
  SessionStartFields,
  TaskEndFields,
  TaskStartFields,
  ToolCallFields
} from "../../src/records/TraceEvents.js"

const SESSION = "ses_0190000000007000800000000000aaaa"

const sessionDir = () => mkdtempSync(join(tmpdir(), "trace-test-"))

const tracePath = (dir: string) => join(dir, "trace.jsonl")

type Line = Record<string, unknown> & {
  readonly event_type: string
  readonly event_id: string
  readonly parent_id: string | null
}

const readLines = (dir: string): Array<Line> =>
  readFileSync(tracePath(dir), "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line) as Line)

const ofType = (lines: ReadonlyArray<Line>, type: string) => lines.filter((line) => line.event_type === type)

const one = (lines: ReadonlyArray<Line>, type: string): Line => {
  const found = ofType(lines, type)
  assert.strictEqual(found.length, 1, `one ${type} line`)
  return found[0]!
}

/** Runs `body` against a fresh Trace layer and closes it afterwards. */
const withTrace = <A, E>(
  dir: string,
  capture: TraceCapture,
  body: (trace: Trace["Type"]) => Effect.Effect<A, E>
) => Effect.flatMap(Trace, body).pipe(Effect.provide(Trace.layer({ directory: dir, sessionId: SESSION, capture })))

const sessionStartFields = (extra: Partial<SessionStartFields> = {}): SessionStartFields => ({
  capsule_name: "hello",
  capsule_version: "0.1.0",
  model: "scripted",
  max_turns: 8,
  capabilities: ["shell"],
  tools_declared: ["echo"],
  containment_declared: "advisory",
  containment_achieved: "advisory",
  workdir_exec: false,
  system_prompt_source: "none",
  credential_source: "none",
  system_prompt_sha256: null,
  ...extra
})

const taskStartFields = (taskId: string): TaskStartFields => ({
  task_id: taskId,
  context_id: "ctx_1",
  source: "a2a",
  origin: "user",
  trust: "trusted",
  lane: "user",
  message_parts_bytes: 5
})

const taskEndFields = (taskId: string): TaskEndFields => ({
  task_id: taskId,
  exit_status: "ok",
  duration_ms: 3,
  turns: 1,
  input_tokens: 10,
  output_tokens: 2,
  tool_calls: 1,
  shell_calls: 0,
  reopen_count: 0
})

const inferenceFields = (taskId: string): InferenceFields => ({
  turn: 0,
  task_id: taskId,
  input_tokens: 10,
  output_tokens: 2,
  decision: "tool_call",
  stop_reason: "tool_use",
  tool_name: "echo",
  message_ids: ["msg_1"],
  system_sha: sha256Hex("system"),
  tools_sha: sha256Hex("[]"),
  response_sha: sha256Hex("{}"),
  message_shas: [sha256Hex("hi")]
})

const toolCallFields = (taskId: string): ToolCallFields => ({
  turn: 0,
  task_id: taskId,
  tool_name: "echo",
  tool_call_id: "call_1",
  input: { text: "hi" },
  input_bytes: 13,
  output: "hi",
  output_bytes: 2,
  duration_ms: 1,
  status: "ok"
})

const sessionEndFields: SessionEndFields = {
  total_turns: 1,
  total_input_tokens: 10,
  total_output_tokens: 2,
  total_tool_calls: 1,
  total_shell_calls: 0,
  duration_ms: 4,
  exit_status: "ok"
}

/** One task with one turn: inference, then a tool call under it. */
const oneTask = (trace: Trace["Type"], taskId: string) =>
  Effect.gen(function*() {
    yield* trace.taskStart(taskStartFields(taskId))
    const turn = yield* trace.record("inference", undefined, inferenceFields(taskId))
    yield* trace.record("tool_call", turn, toolCallFields(taskId))
    yield* trace.taskEnd(taskEndFields(taskId))
  })

const HEADER = ["event_type", "event_id", "parent_id", "session_id", "timestamp"]

describe("Trace", () => {
  it.effect("writes the header keys first, then the fields in the caller's order", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      yield* TestClock.setTime(1_750_000_000_123)
      yield* withTrace(dir, "meta", (trace) =>
        Effect.gen(function*() {
          yield* trace.sessionStart(sessionStartFields())
          yield* trace.record("custom_event", undefined, {
            zeta: 1,
            alpha: "a",
            session_id: "ses_spoofed",
            event_type: "spoofed",
            skipped: undefined,
            middle: null
          })
        }))
      const [start, custom] = readLines(dir)
      assert.deepStrictEqual(Object.keys(start!), [...HEADER, ...Object.keys(sessionStartFields())])
      assert.deepStrictEqual(Object.keys(custom!), [...HEADER, "zeta", "alpha", "middle"])
      assert.strictEqual(custom!.event_type, "custom_event")
      assert.strictEqual(custom!.session_id, SESSION)
      assert.strictEqual(custom!.timestamp, 1_750_000_000_123)
      assert.strictEqual(custom!.middle, null)
      assert.isTrue(readFileSync(tracePath(dir), "utf8").endsWith("}\n"))
    }))

  it.effect("builds the session → task → turn tree", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      yield* withTrace(dir, "meta", (trace) =>
        Effect.gen(function*() {
          const session = yield* trace.sessionStart(sessionStartFields())
          yield* trace.record("a2a_task_received", undefined, {
            task_id: "tsk_1",
            context_id: "ctx_1",
            message_id: "m1",
            traceparent_from_caller: null
          })
          const task = yield* trace.taskStart(taskStartFields("tsk_1"))
          const turn = yield* trace.record("inference", task, inferenceFields("tsk_1"))
          yield* trace.record("tool_call", turn, toolCallFields("tsk_1"))
          yield* trace.record("shell", turn, {
            turn: 0,
            task_id: "tsk_1",
            binary: "/usr/bin/echo",
            command: "hi",
            exit_code: 0,
            stdout_bytes: 3,
            stderr_bytes: 0,
            duration_ms: 1
          })
          yield* trace.record("task_canceled", task, {
            task_id: "tsk_1",
            turn: 0,
            phase: "inference",
            detached_work_ids: [],
            delegation_ids: []
          })
          yield* trace.taskEnd({ ...taskEndFields("tsk_1"), exit_status: "canceled" })
          yield* trace.sessionEnd(sessionEndFields)
          assert.isString(session)
        }))
      const lines = readLines(dir)
      const session = one(lines, "session_start")
      const task = one(lines, "task_start")
      const turn = one(lines, "inference")
      assert.isNull(session.parent_id)
      assert.strictEqual(one(lines, "a2a_task_received").parent_id, session.event_id)
      assert.strictEqual(task.parent_id, session.event_id)
      assert.strictEqual(turn.parent_id, task.event_id)
      assert.strictEqual(one(lines, "tool_call").parent_id, turn.event_id)
      assert.strictEqual(one(lines, "shell").parent_id, turn.event_id)
      assert.strictEqual(one(lines, "task_canceled").parent_id, task.event_id)
      assert.strictEqual(one(lines, "task_end").parent_id, task.event_id)
      assert.strictEqual(one(lines, "session_end").parent_id, session.event_id)
      // Every non-null parent names an event written earlier in the file; only session_start has none.
      const seen = new Set<string>()
      for (const line of lines) {
        if (line.event_type !== "session_start") assert.isTrue(line.parent_id !== null && seen.has(line.parent_id))
        seen.add(line.event_id)
      }
    }))

  it.effect("writes one session_start/session_end pair around several tasks", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      yield* withTrace(dir, "meta", (trace) =>
        Effect.gen(function*() {
          yield* trace.sessionStart(sessionStartFields())
          for (const taskId of ["tsk_1", "tsk_2", "tsk_3"]) yield* oneTask(trace, taskId)
          yield* trace.sessionEnd(sessionEndFields)
          yield* trace.sessionEnd(sessionEndFields)
          const again = yield* Effect.exit(trace.sessionStart(sessionStartFields()))
          assert.isTrue(Exit.isFailure(again) && !Exit.isInterrupted(again))
        }))
      const lines = readLines(dir)
      const session = one(lines, "session_start")
      assert.strictEqual(lines[0]!.event_type, "session_start")
      assert.strictEqual(lines.at(-1)!.event_type, "session_end")
      one(lines, "session_end")
      const starts = ofType(lines, "task_start")
      assert.strictEqual(starts.length, 3)
      assert.strictEqual(ofType(lines, "task_end").length, 3)
      for (const start of starts) assert.strictEqual(start.parent_id, session.event_id)
      for (const end of ofType(lines, "task_end")) {
        assert.strictEqual(end.parent_id, starts.find((start) => start.task_id === end.task_id)!.event_id)
      }
    }))

  it.effect("writes no session_end without a session_start, leaving an empty trace.jsonl", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      yield* withTrace(dir, "meta", (trace) => trace.sessionEnd(sessionEndFields))
      assert.strictEqual(readFileSync(tracePath(dir), "utf8"), "")
    }))

  it.effect("has the task's lines in the file when taskEnd returns, and writes nothing after close", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Trace.layer({ directory: dir, sessionId: SESSION, capture: "meta" }), scope)
      const trace = Context.get(context, Trace)
      yield* trace.sessionStart(sessionStartFields())
      yield* oneTask(trace, "tsk_1")
      assert.deepStrictEqual(readLines(dir).map((line) => line.event_type), [
        "session_start",
        "task_start",
        "inference",
        "tool_call",
        "task_end"
      ])
      yield* Scope.close(scope, Exit.void)
      const before = readFileSync(tracePath(dir), "utf8")
      yield* trace.record("late", undefined, { x: 1 })
      yield* trace.sessionEnd(sessionEndFields)
      assert.strictEqual(readFileSync(tracePath(dir), "utf8"), before)
    }))

  it.effect("mints distinct evt_ + UUIDv7 ids and keeps concurrent lines whole", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      const ids = yield* withTrace(dir, "meta", (trace) =>
        Effect.gen(function*() {
          yield* trace.sessionStart(sessionStartFields())
          return yield* Effect.forEach(
            Array.from({ length: 200 }, (_, i) => i),
            (i) => trace.record("tick", undefined, { i, pad: "x".repeat(i * 50) }),
            { concurrency: "unbounded" }
          )
        }))
      const lines = readLines(dir)
      assert.strictEqual(lines.length, 201)
      for (const line of lines) assert.match(line.event_id, /^evt_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/)
      assert.strictEqual(new Set(lines.map((line) => line.event_id)).size, 201)
      assert.deepStrictEqual(new Set(ids), new Set(ofType(lines, "tick").map((line) => line.event_id)))
    }))

  it.effect("finishes a line whose writer is interrupted, and refuses framing events in record", () =>
    Effect.gen(function*() {
      const dir = sessionDir()
      yield* withTrace(dir, "meta", (trace) =>
        Effect.gen(function*() {
          yield* trace.sessionStart(sessionStartFields())
          const fiber = yield* Effect.fork(trace.record("big", undefined, { pad: "y".repeat(1 << 20) }))
          yield* Effect.yieldNow()
          yield* Fiber.interrupt(fiber)
          // @ts-expect-error framing events have their own methods
          const framed = yield* Effect.exit(trace.record("task_start", undefined, taskStartFields("tsk_1")))
          assert.isTrue(Exit.isFailure(framed) && Cause.isDie(framed.cause))
        }))
      const lines = readLines(dir)
      assert.deepStrictEqual(lines.map((line) => line.event_type), ["session_start", "big"])
      assert.strictEqual(String(lines[1]!.pad).length, 1 << 20)
    }))

  describe("capture", () => {
    const fullSession = (trace: Trace["Type"]) =>
      Effect.gen(function*() {
        yield* trace.sessionStart(
          sessionStartFields({ system_prompt_source: "manifest", system_prompt_sha256: "stale", system_prompt: "Be brief." })
        )
        yield* oneTask(trace, "tsk_1")
        return yield* trace.blob("request body")
      })

    it.effect("meta: hashes on the line, no bodies, no blobs", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        const stored = yield* withTrace(dir, "meta", fullSession)
        const lines = readLines(dir)
        assert.isUndefined(stored)
        assert.isFalse(existsSync(join(dir, "blobs")))
        const start = one(lines, "session_start")
        assert.notProperty(start, "system_prompt")
        assert.strictEqual(start.system_prompt_sha256, sha256Hex("Be brief."))
        assert.notProperty(one(lines, "tool_call"), "output")
        assert.strictEqual(one(lines, "tool_call").output_bytes, 2)
        assert.strictEqual(one(lines, "inference").system_sha, sha256Hex("system"))
        assert.deepStrictEqual(one(lines, "inference").message_shas, [sha256Hex("hi")])
      }))

    it.effect("none: no wire hashes and no bodies; every other field stays", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        yield* withTrace(dir, "none", fullSession)
        const lines = readLines(dir)
        const inference = one(lines, "inference")
        for (const key of ["system_sha", "tools_sha", "response_sha", "message_shas"]) assert.notProperty(inference, key)
        assert.deepStrictEqual(inference.message_ids, ["msg_1"])
        assert.strictEqual(inference.stop_reason, "tool_use")
        assert.notProperty(one(lines, "tool_call"), "output")
        assert.notProperty(one(lines, "session_start"), "system_prompt")
        assert.strictEqual(one(lines, "session_start").system_prompt_sha256, sha256Hex("Be brief."))
        assert.isFalse(existsSync(join(dir, "blobs")))
      }))

    it.effect("content: tool output inline, bodies in a 0700 blobs/ named by their hash", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        const stored = yield* withTrace(dir, "content", fullSession)
        const lines = readLines(dir)
        const start = one(lines, "session_start")
        assert.notProperty(start, "system_prompt")
        const promptBlob = join(dir, "blobs", String(start.system_prompt_sha256))
        assert.strictEqual(readFileSync(promptBlob, "utf8"), "Be brief.")
        assert.strictEqual(one(lines, "tool_call").output, "hi")
        assert.strictEqual(one(lines, "inference").response_sha, sha256Hex("{}"))
        assert.deepStrictEqual(stored, { sha256: sha256Hex("request body"), path: join(dir, "blobs", sha256Hex("request body")) })
        assert.strictEqual(readFileSync(stored!.path, "utf8"), "request body")
        assert.strictEqual(statSync(join(dir, "blobs")).mode & 0o777, 0o700)
      }))

    it.effect("content: blobs are write-once, across calls and across launches in one directory", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        const first = yield* withTrace(dir, "content", (trace) =>
          Effect.gen(function*() {
            const a = yield* trace.blob(new TextEncoder().encode("same"))
            const b = yield* trace.blob("same")
            assert.deepStrictEqual(a, b)
            return a!
          }))
        const inode = statSync(first.path).ino
        // A body already on disk is never rewritten, even when its file no longer matches.
        writeFileSync(first.path, "tampered")
        yield* withTrace(dir, "content", (trace) => trace.blob("same"))
        assert.strictEqual(readFileSync(first.path, "utf8"), "tampered")
        assert.strictEqual(statSync(first.path).ino, inode)
        assert.deepStrictEqual(readdirSync(join(dir, "blobs")), [first.sha256])
      }))

    it.effect("digest: nothing under none, the hash under meta, the hash with its blob under content", () =>
      Effect.gen(function*() {
        const digests: Partial<Record<TraceCapture, string | undefined>> = {}
        const dirs: Partial<Record<TraceCapture, string>> = {}
        for (const capture of ["none", "meta", "content"] as const) {
          const dir = (dirs[capture] = sessionDir())
          digests[capture] = yield* withTrace(dir, capture, (trace) => trace.digest("turn body"))
        }
        assert.isUndefined(digests.none)
        assert.strictEqual(digests.meta, sha256Hex("turn body"))
        assert.strictEqual(digests.content, sha256Hex("turn body"))
        assert.isFalse(existsSync(join(dirs.none!, "blobs")))
        assert.isFalse(existsSync(join(dirs.meta!, "blobs")))
        assert.strictEqual(readFileSync(join(dirs.content!, "blobs", sha256Hex("turn body")), "utf8"), "turn body")
      }))
  })

  describe("write failures", () => {
    const isTraceWriteFailed = <A>(exit: Exit.Exit<A, unknown>) => {
      if (Exit.isSuccess(exit)) return assert.fail("expected a failure")
      const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.instanceOf(error, TraceWriteFailed)
      assert.strictEqual((error as TraceWriteFailed).code, "E-RUN-007")
      return error as TraceWriteFailed
    }

    it.effect("a session directory under a regular file fails the layer (ENOTDIR)", () =>
      Effect.gen(function*() {
        const file = join(sessionDir(), "not-a-dir")
        writeFileSync(file, "")
        const exit = yield* Effect.exit(withTrace(join(file, "ses"), "meta", () => Effect.void))
        const error = isTraceWriteFailed(exit)
        assert.match(error.message, /ENOTDIR/)
        assert.strictEqual(error.path, join(file, "ses", "trace.jsonl"))
      }))

    it.effect("a trace.jsonl planted as a link fails the layer; nothing is written where it leads", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        const elsewhere = join(sessionDir(), "victim.txt")
        writeFileSync(elsewhere, "untouched")
        symlinkSync(elsewhere, tracePath(dir))
        const exit = yield* Effect.exit(withTrace(dir, "meta", (trace) => trace.sessionStart(sessionStartFields())))
        assert.match(isTraceWriteFailed(exit).message, /trace\.jsonl is a symbolic link; refusing to follow it/)
        assert.strictEqual(readFileSync(elsewhere, "utf8"), "untouched")
      }))

    it.effect("blobs/ planted as a link is refused; no blob lands where it leads", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        const elsewhere = sessionDir()
        symlinkSync(elsewhere, join(dir, "blobs"))
        const exit = yield* Effect.exit(withTrace(dir, "content", (trace) => trace.blob("body")))
        assert.match(isTraceWriteFailed(exit).message, /blobs is a symbolic link/)
        assert.deepStrictEqual(readdirSync(elsewhere), [])
      }))

    it.effect("a blob that cannot be stored fails with TraceWriteFailed", () =>
      Effect.gen(function*() {
        const dir = sessionDir()
        writeFileSync(join(dir, "blobs"), "in the way")
        const exit = yield* Effect.exit(withTrace(dir, "content", (trace) => trace.blob("body")))
        isTraceWriteFailed(exit)
      }))

    it.effect("a blob path whose directory is missing is created on first use", () =>
      Effect.gen(function*() {
        const dir = join(sessionDir(), "nested", "ses")
        mkdirSync(join(dir, ".."), { recursive: true })
        const stored = yield* withTrace(dir, "content", (trace) => trace.blob("x"))
        assert.isTrue(existsSync(stored!.path))
      }))
  })
})
