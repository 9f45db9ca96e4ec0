import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Fiber, Layer } from "effect"
import {
  argvFor,
  completionMessage,
  demotionResult,
  exitCodeOf,
  MAX_SHELL_OUTPUT_BYTES,
  parseShellInput,
  splitShellWords
} from "../../src/shell/ShellGrant.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"
import { Shell, type ShellConfig, type ShellOutcome, type ShellRequest } from "../../src/shell/Shell.js"

const hostPath = process.env.PATH ?? "/usr/bin:/bin"

const request = (workdir: string, binary: string, command: string, extra: Partial<ShellRequest> = {}): ShellRequest => ({
  binary,
  command,
  workdir,
  allow: [binary],
  hostEnv: { PATH: hostPath },
  baselineEnv: [],
  stripPatterns: [],
  runtimeVars: {},
  ...extra
})

const layer = (config: Partial<ShellConfig> = {}) => Shell.layer(config).pipe(Layer.provideMerge(DetachedRegistry.layer))

const workdir = () => mkdtempSync(join(tmpdir(), "shell-test-"))

const finished = (outcome: ShellOutcome) => {
  if (outcome._tag !== "Finished") return assert.fail(`expected a finished command, got ${outcome._tag}`)
  return outcome
}

const detached = (outcome: ShellOutcome) => {
  if (outcome._tag !== "Detached") return assert.fail("expected a detached command")
  return outcome
}

/** Alive and not a zombie (an orphan's zombie may linger if pid 1 does not reap). */
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

/** Waits (bounded) until a file exists and holds a full line. */
const readWhenWritten = (path: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      if (existsSync(path)) {
        const text = readFileSync(path, "utf8")
        if (text.endsWith("\n")) return text.trim()
      }
      yield* Effect.sleep("10 millis")
    }
    return assert.fail(`${path} was never written`)
  })

describe("ShellGrant", () => {
  it("validates the tool input with the reference's texts", () => {
    assert.deepStrictEqual(parseShellInput("{\"command\":\"ls -la\"}"), { _tag: "Command", command: "ls -la" })
    const invalid = (data: string | undefined) => {
      const parsed = parseShellInput(data)
      return parsed._tag === "Invalid" ? [parsed.result.status, parsed.result.summary] : assert.fail("expected invalid")
    }
    assert.deepStrictEqual(invalid(undefined), ["error", "shell tool input.data is required"])
    assert.strictEqual(invalid("{nope")[1]!.startsWith("shell tool input must be valid JSON: "), true)
    const missing = ["error", "shell tool input must include a non-empty 'command' string"]
    assert.deepStrictEqual(invalid("{\"command\":\"\"}"), missing)
    assert.deepStrictEqual(invalid("{\"command\":3}"), missing)
    assert.deepStrictEqual(invalid("[]"), missing)
  })

  it("splits on whitespace honouring quotes and escapes, and gives interpreters -c", () => {
    assert.deepStrictEqual(splitShellWords("  a  'b c' \"d 'e'\" f\\ g h\\\"i $HOME *.txt "), [
      "a",
      "b c",
      "d 'e'",
      "f g",
      "h\"i",
      "$HOME",
      "*.txt"
    ])
    assert.deepStrictEqual(splitShellWords(""), [])
    assert.deepStrictEqual(argvFor("bash", "echo $HOME | wc"), ["-c", "echo $HOME | wc"])
    assert.deepStrictEqual(argvFor("curl", "-s 'http://x/a b'"), ["-s", "http://x/a b"])
  })

  it("maps exit status to code, 128 + signal, or -1", () => {
    assert.strictEqual(exitCodeOf(3, null), 3)
    assert.strictEqual(exitCodeOf(null, "SIGKILL"), 137)
    assert.strictEqual(exitCodeOf(null, null), -1)
  })
})

describe("Shell", () => {
  it.live("runs an allowlisted binary without a shell and reports the reference's result", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const outcome = finished(yield* (yield* Shell).run(request(dir, "echo", "hello 'big  world' $HOME")))
      assert.strictEqual(outcome.exitCode, 0)
      assert.strictEqual(outcome.binary.startsWith("/"), true)
      assert.deepStrictEqual(outcome.result, {
        status: "passed",
        summary: "Shell command exited with code 0",
        data: "$ hello 'big  world' $HOME\nExit code: 0\nStdout:\nhello big  world $HOME\n\nStderr:\n",
        truncated: false,
        metadata: []
      })
    }).pipe(Effect.provide(layer())))

  it.live("a non-zero exit is data, a signal is 128 + signal", () =>
    Effect.gen(function*() {
      const shell = yield* Shell
      const dir = workdir()
      const failed = finished(yield* shell.run(request(dir, "sh", "echo out; echo err >&2; exit 3")))
      assert.strictEqual(failed.exitCode, 3)
      assert.strictEqual(failed.result.status, "passed")
      assert.strictEqual(failed.result.summary, "Shell command exited with code 3")
      assert.strictEqual(failed.result.data, "$ echo out; echo err >&2; exit 3\nExit code: 3\nStdout:\nout\n\nStderr:\nerr\n")
      const killed = finished(yield* shell.run(request(dir, "sh", "kill -TERM $$")))
      assert.strictEqual(killed.exitCode, 143)
    }).pipe(Effect.provide(layer())))

  it.live("gives the model each stream's first 12 KiB and last 4 KiB past 16 KiB, and writes the full output to logs/shell-<ms>.log", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const command = "printf '%019999d' 7; printf 'E'; printf 'e%.0s' 1 2 3 >&2"
      const outcome = finished(yield* (yield* Shell).run(request(dir, "sh", command)))
      const result = outcome.result
      const path = result.metadata[0]![1]
      assert.match(path, /^logs\/shell-\d{13}\.log$/)
      assert.deepStrictEqual(result.metadata, [["full_output_path", path]])
      assert.strictEqual(result.truncated, true)
      assert.strictEqual(outcome.outputPath, path)
      assert.strictEqual(outcome.droppedBytes, undefined)
      assert.strictEqual(outcome.stdoutBytes, 20_000)
      const stdout = "0".repeat(19_998) + "7E"
      const shown = `${stdout.slice(0, 12 * 1024)}\n[... ${20_000 - MAX_SHELL_OUTPUT_BYTES} bytes omitted ...]\n${stdout.slice(-4 * 1024)}`
      assert.strictEqual(
        result.data,
        `$ ${command}\nExit code: 0\nStdout:\n${shown}\nStderr:\neee\n\nOutput truncated. Full output written to ${path}`
      )
      assert.strictEqual(
        readFileSync(join(dir, path), "utf8"),
        `Command: sh -c ${command}\nExit code: 0\n\nStdout:\n${stdout}\n\nStderr:\neee\n`
      )
      // The spill files behind the log were unlinked when made.
      assert.deepStrictEqual(readdirSync(join(dir, "logs")), [path.slice("logs/".length)])
    }).pipe(Effect.provide(layer())))

  it.live("a command writing past max_output_bytes is killed there: the log holds exactly the cap, the result says what was dropped", () =>
    Effect.gen(function*() {
      const dir = workdir()
      // `yes` never ends by itself: only the cap stops it.
      const outcome = finished(yield* (yield* Shell).run(request(dir, "yes", "", { maxOutputBytes: 100_000 })))
      assert.strictEqual(outcome.exitCode, 137)
      assert.isAtLeast(outcome.stdoutBytes, 100_000)
      assert.strictEqual(outcome.droppedBytes, outcome.stdoutBytes - 100_000)
      const path = outcome.outputPath!
      const note = `Output reached the cap of 100000 bytes (capabilities.shell.max_output_bytes): the command was killed and output cut there; ${outcome.droppedBytes} bytes read past the cap were dropped.`
      assert.strictEqual(outcome.result.truncated, true)
      assert.isTrue(outcome.result.data!.endsWith(`\n\nOutput truncated. Full output written to ${path}\n${note}`))
      assert.include(outcome.result.data!, `\n[... ${100_000 - MAX_SHELL_OUTPUT_BYTES} bytes omitted ...]\n`)
      assert.strictEqual(
        readFileSync(join(dir, path), "utf8"),
        `Command: yes\nExit code: 137\n\nStdout:\n${"y\n".repeat(50_000)}\n\nStderr:\n\n${note}\n`
      )
    }).pipe(Effect.provide(layer())))

  it.live("the cap counts both streams together, and a small cap below 16 KiB still cuts and logs", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const outcome = finished(yield* (yield* Shell).run(request(dir, "sh", "printf '%0600d' 1 >&2; printf '%0600d' 2", { maxOutputBytes: 1000 })))
      assert.strictEqual(outcome.stderrBytes + outcome.stdoutBytes - outcome.droppedBytes!, 1000)
      // Which pipe is read first is the event loop's choice: the two kept parts add up to the cap.
      const log = readFileSync(join(dir, outcome.outputPath!), "utf8")
      const [, out, err] = /\n\nStdout:\n(0*2?)\n\nStderr:\n(0*1?)\nOutput reached the cap of 1000 bytes/.exec(log)!
      assert.strictEqual(out!.length + err!.length, 1000)
    }).pipe(Effect.provide(layer())))

  it.live("builds the env from nothing: baseline + runtime + baseline_env, credentials stripped, HOME redirected, cwd = workdir", () =>
    Effect.gen(function*() {
      const shell = yield* Shell
      const dir = workdir()
      const env = {
        hostEnv: {
          PATH: hostPath,
          HOME: "/home/real",
          USER: "someone",
          TERM: "xterm",
          NOT_ALLOWED: "x",
          OPENAI_API_KEY: "sk-host",
          AWS_REGION: "eu-west-1",
          MY_VAR: "v",
          MY_TOKEN_X: "t",
          GITHUB_TOKEN: "ghp"
        },
        baselineEnv: ["MY_VAR", "AWS_REGION", "MY_TOKEN_X", "GITHUB_TOKEN", "UNSET_NAME", "HOME"],
        stripPatterns: ["*_TOKEN_*"],
        runtimeVars: { MURMUR_CAPSULE_NAME: "cap", MURMUR_INFERENCE_API_KEY: "sk-runtime" }
      }
      const outcome = finished(yield* shell.run(request(dir, "env", "", env)))
      const home = join(dir, ".capsule-home")
      const seen = Object.fromEntries(outcome.result.data!.split("\nStdout:\n")[1]!.split("\nStderr:\n")[0]!.trim().split("\n").map((line) => {
        const at = line.indexOf("=")
        return [line.slice(0, at), line.slice(at + 1)]
      }))
      assert.deepStrictEqual(seen, {
        HOME: home,
        MURMUR_CAPSULE_NAME: "cap",
        MY_VAR: "v",
        PATH: hostPath,
        TERM: "xterm",
        USER: "someone",
        USERPROFILE: home
      })
      assert.strictEqual(statSync(home).isDirectory(), true)
      const pwd = finished(yield* shell.run(request(dir, "pwd", "")))
      assert.strictEqual(realpathSync(pwd.result.data!.split("\nStdout:\n")[1]!.split("\n")[0]!), realpathSync(dir))
    }).pipe(Effect.provide(layer())))

  it.live("a .capsule-home planted as a link is refused, never followed out of the workdir", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const outside = workdir()
      symlinkSync(outside, join(dir, ".capsule-home"))
      const shell = yield* Shell
      const error = yield* Effect.flip(shell.run(request(dir, "echo", "hi")))
      assert.strictEqual(error.reason, "Setup")
      assert.include(error.message, ".capsule-home is a symbolic link")
      assert.deepStrictEqual(readdirSync(outside), [])
    }).pipe(Effect.provide(layer())))

  it.live("refuses a binary outside the allowlist, and reports a missing binary as a failed execution", () =>
    Effect.gen(function*() {
      const shell = yield* Shell
      const dir = workdir()
      const refused = yield* Effect.flip(shell.run(request(dir, "cat", "/etc/passwd", { allow: ["echo"] })))
      assert.strictEqual(refused.reason, "NotAllowed")
      assert.strictEqual(refused.message, "binary 'cat' is not in capabilities.shell.allow")
      assert.deepStrictEqual(refused.toolResult, {
        status: "error",
        summary: "shell execution failed",
        data: "binary 'cat' is not in capabilities.shell.allow",
        truncated: false,
        metadata: []
      })
      const missing = yield* Effect.flip(shell.run(request(dir, "no-such-binary-capsule", "x")))
      assert.strictEqual(missing.reason, "Spawn")
      assert.match(missing.message, /ENOENT/)
      assert.strictEqual(missing.toolResult.status, "error")
      assert.strictEqual(missing.toolResult.summary, "shell execution failed")
    }).pipe(Effect.provide(layer())))

  it.live("a command inside its grace stays in the foreground", () =>
    Effect.gen(function*() {
      const outcome = yield* (yield* Shell).run(request(workdir(), "echo", "quick", { graceSeconds: 10 }))
      assert.strictEqual(finished(outcome).exitCode, 0)
      assert.deepStrictEqual(yield* (yield* DetachedRegistry).list(), [])
    }).pipe(Effect.provide(layer())))

  it.live("a command outliving its grace detaches, is registered, and completes later with its log", () =>
    Effect.gen(function*() {
      const shell = yield* Shell
      const registry = yield* DetachedRegistry
      const dir = workdir()
      const command = "sleep 0.8; printf 'fin%s\\n' ished-marker"
      const started = Date.now()
      const outcome = detached(yield* shell.run(request(dir, "sh", command, { graceSeconds: 0.2 })))
      assert.isBelow(Date.now() - started, 700)
      const { workId } = outcome.detached
      assert.match(workId, /^wrk_[0-9a-f]{32}$/)
      assert.deepStrictEqual(outcome.result, demotionResult(workId))
      assert.strictEqual(outcome.detached.graceMs, 200)
      const listed = yield* registry.list()
      assert.strictEqual(listed.length, 1)
      assert.strictEqual(listed[0]!.work_id, workId)
      assert.strictEqual(listed[0]!.command, command)
      assert.match(listed[0]!.binary, /^\/.*(sh|dash)$/)

      const completion = yield* outcome.completion
      assert.strictEqual(completion.workId, workId)
      assert.strictEqual(completion.exitCode, 0)
      assert.strictEqual(completion.outputPath, `logs/${workId}.log`)
      const log = readFileSync(join(dir, completion.outputPath), "utf8")
      assert.strictEqual(log, `Command: sh -c ${command}\nExit code: 0\n\nStdout:\nfinished-marker\n\n\nStderr:\n\n`)
      assert.strictEqual(completion.outputBytes, Buffer.byteLength(log))
      assert.notInclude(completionMessage(completion), "finished-marker")
      assert.include(completionMessage(completion), `work_id: ${workId}\n`)
      assert.deepStrictEqual(yield* registry.list(), [])
    }).pipe(Effect.provide(layer())))

  it.live("detached work is capped too: killed at the cap, its log holds the cap, the completion says what was dropped", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const outcome = detached(yield* (yield* Shell).run(request(dir, "sh", "sleep 0.2; exec yes", { graceSeconds: 0, maxOutputBytes: 40_000 })))
      const completion = yield* outcome.completion
      assert.strictEqual(completion.exitCode, 137)
      assert.isDefined(completion.droppedBytes)
      const log = readFileSync(join(dir, completion.outputPath), "utf8")
      assert.strictEqual(completion.outputBytes, Buffer.byteLength(log))
      assert.include(log, `\n\nStdout:\n${"y\n".repeat(20_000)}\n\nStderr:\n\nOutput reached the cap of 40000 bytes`)
      assert.include(completionMessage(completion), `output_cap: reached; the command was killed and ${completion.droppedBytes} bytes read past the cap were dropped`)
    }).pipe(Effect.provide(layer())))

  it.live("grace 0 detaches at the first poll; cancelling the caller leaves detached work running", () =>
    Effect.gen(function*() {
      const shell = yield* Shell
      const registry = yield* DetachedRegistry
      const outcomes: Array<ShellOutcome> = []
      const caller = yield* Effect.fork(
        shell.run(request(workdir(), "sleep", "0.4", { graceSeconds: 0 })).pipe(
          Effect.tap((outcome) => Effect.sync(() => outcomes.push(outcome))),
          Effect.zipRight(Effect.never)
        )
      )
      while (outcomes.length === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(caller)
      const outcome = detached(outcomes[0]!)
      assert.deepStrictEqual((yield* registry.list()).map((w) => w.work_id), [outcome.detached.workId])
      const completion = yield* outcome.completion
      assert.strictEqual(completion.exitCode, 0)
      assert.deepStrictEqual(yield* registry.list(), [])
    }).pipe(Effect.provide(layer())))

  it.live("interrupting an undetached command kills it and its children", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const fiber = yield* Effect.fork(
        (yield* Shell).run(request(dir, "sh", "echo $$ > sh.pid; sleep 30 & echo $! > sleep.pid; wait", { graceSeconds: 60 }))
      )
      const shPid = Number(yield* readWhenWritten(join(dir, "sh.pid")))
      const sleepPid = Number(yield* readWhenWritten(join(dir, "sleep.pid")))
      assert.strictEqual(alive(shPid) && alive(sleepPid), true)
      const exit = yield* Fiber.interrupt(fiber)
      assert.strictEqual(Exit.isInterrupted(exit), true)
      assert.strictEqual(alive(shPid), false)
      for (let i = 0; i < 100 && alive(sleepPid); i++) yield* Effect.sleep("10 millis")
      assert.strictEqual(alive(sleepPid), false)
      assert.deepStrictEqual(yield* (yield* DetachedRegistry).list(), [])
    }).pipe(Effect.provide(layer({ killGraceMs: 200 }))))

  it.live("closing the layer with onClose: kill ends detached work", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const outcome = yield* Effect.scoped(
        Effect.gen(function*() {
          const context = yield* Layer.build(layer({ onClose: "kill", killGraceMs: 200 }))
          const shell = Context.get(context, Shell)
          const outcome = detached(yield* shell.run(request(dir, "sh", "echo $$ > sh.pid; exec sleep 30", { graceSeconds: 0.05 })))
          yield* readWhenWritten(join(dir, "sh.pid"))
          return outcome
        })
      )
      const pid = Number(readFileSync(join(dir, "sh.pid"), "utf8"))
      assert.strictEqual(alive(pid), false)
      assert.strictEqual(Exit.isInterrupted(yield* Effect.exit(outcome.completion)), true)
    }))
})
