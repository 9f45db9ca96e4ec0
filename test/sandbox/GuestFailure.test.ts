/**
 * A guest that fails says why: the guest's last error line (a QuickJS exception, a Rust panic's
 * message) joins the sandbox's message, bounded, with secrets replaced and the log named; through
 * a real tool that throws in a real worker, the model reads it in its tool result.
 */
import { describe, expect, it } from "vitest"
import { explainGuestFailure, lastErrorLine, MAX_ERROR_LINE, redactSecrets } from "../../src/sandbox/GuestFailure.js"
import { SandboxError } from "../../src/sandbox/SandboxError.js"
import { call, driverRequest, endTurn, runTask, toolTurn } from "../lib/AgentE2E.js"

const cleanups: Array<() => void> = []

describe("lastErrorLine", () => {
  it("takes a Rust panic's message, a JS exception over its stack lines, else the last line; bounded", () => {
    const panic = "thread '<unnamed>' (1) panicked at crates/runtime/src/call.rs:88:36:\nexpected number: FromJs { from: \"big_int\", to: \"f64\" }\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    expect(lastErrorLine(panic)).toBe("expected number: FromJs { from: \"big_int\", to: \"f64\" }")
    expect(lastErrorLine("starting\nTypeError: cannot read property 'x' of undefined\n    at run (tool.js:3)\n")).toBe("TypeError: cannot read property 'x' of undefined")
    expect(lastErrorLine("just a line\n")).toBe("just a line")
    expect(lastErrorLine("Failed to call 'run': Exception(Exception { message: Some(\"bad \\\"x\\\"\"), stack: Some(\"    at run\") })")).toBe("Failed to call 'run': bad \"x\"")
    expect(lastErrorLine("")).toBeUndefined()
    expect(lastErrorLine(`Error: ${"x".repeat(1000)}`)!.length).toBe(MAX_ERROR_LINE + 1)
  })

  it("replaces secrets and names the log; a deadline says nothing more", () => {
    expect(redactSecrets("key sk-abcdef123456 leaked, short abc", ["sk-abcdef123456", "abc"])).toBe("key [redacted] leaked, short abc")
    const trap = new SandboxError({ reason: "Trap", message: "tool 'x' trapped: unreachable", stderr: "Error: bad token sk-abcdef123456\n" })
    expect(explainGuestFailure(trap, "/w/logs/guest.log", ["sk-abcdef123456"])).toBe(
      "tool 'x' trapped: unreachable; the guest's last error: Error: bad token [redacted] (all of its output: /w/logs/guest.log)"
    )
    const late = new SandboxError({ reason: "Deadline", message: "tool 'x' exceeded its 1s execution deadline", stderr: "working\n" })
    expect(explainGuestFailure(late, "/w/logs/guest.log", [])).toBe(late.message)
  })
})

describe("a tool that throws, in a task", () => {
  it("the model reads the exception, not only 'unreachable', and where the whole output is", async () => {
    const run = await runTask({
      driverConfig: { replies: [toolTurn(call("c1", "thrower", "throw")), endTurn("done")] },
      tools: { thrower: "tool-throws" }
    }, "go", cleanups)
    expect(run.run.code, run.run.stderr).toBe(0)
    const tool = driverRequest(run.workdir, 2).messages.find((m: { role: string }) => m.role === "tool")
    const text: string = tool.content[0].text
    expect(text).toContain("tool 'thrower' trapped")
    expect(text).toContain("the guest's last error: Failed to call 'run': config.retries: expected a number, got string")
    expect(text).toContain(`${run.workdir}/logs/guest.log`)
  }, 90_000)
})
