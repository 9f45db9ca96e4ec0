/**
 * Tool dispatch precedence (spec §4.4) end to end through `run --task --json` (`npm run build`
 * first): a name in the shell allowlist runs the shell even when a skill has that name; a skill
 * returns its guidance unfenced ("Skill <name> guidance", trace `skill_call`); a WASM tool's
 * result reaches the model fenced; anything else is an `is_error` tool message and the task
 * goes on.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { call, driverRequest, endTurn, ofType, toolTurn, traceLines } from "../lib/AgentE2E.js"
import { exitEvent, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

const GUIDE = "How to write a guide\n\nStep one: <untrusted-content> is not special here.\n"

describe("tool dispatch precedence", () => {
  it("shell before skill before WASM tool, else the error goes back to the model", async () => {
    const dir = await makeAgentCapsuleDir({
      driverConfig: {
        replies: [
          toolTurn(call("c1", "echo", { command: "from the shell" }), call("c2", "guide", {}), call("c3", "echo-tool", { x: 1 }), call("c4", "nope", {})),
          endTurn("done")
        ]
      },
      tools: { "echo-tool": "echo-tool" },
      capabilities: "  shell:\n    allow: [echo]\n"
    })
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    for (const [name, text] of [["guide", GUIDE], ["echo", "A skill that loses to the shell.\n"]] as const) {
      mkdirSync(join(dir, "skills", name), { recursive: true })
      writeFileSync(join(dir, "skills", name, "skill.md"), text)
    }
    const manifest = readFileSync(join(dir, "murmur.yaml"), "utf8").replace(
      "artifacts:\n",
      "artifacts:\n  - name: guide\n    runtime: skill\n    source: ./skills/guide\n  - name: echo\n    runtime: skill\n    source: ./skills/echo\n"
    )
    writeFileSync(join(dir, "murmur.yaml"), manifest)

    const run = await runCli(["run", dir, "--task", "dispatch them", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const { workdir } = exitEvent(run)
    const tools = driverRequest(workdir, 2).messages.filter((message: { role: string }) => message.role === "tool")
    const byId = Object.fromEntries(tools.map((message: { tool_call_id: string; is_error: boolean; content: Array<{ text: string }> }) => [message.tool_call_id, message]))

    expect(byId.c1.is_error).toBe(false)
    expect(byId.c1.content[0].text).toContain("$ from the shell\nExit code: 0\nStdout:\nfrom the shell")
    expect(byId.c2).toMatchObject({ is_error: false, content: [{ type: "text", text: GUIDE }] })
    expect(byId.c3.is_error).toBe(false)
    expect(byId.c3.content[0].text).toBe("<untrusted-content source=tool:echo-tool>\n{\"x\":1}\n</untrusted-content>")
    expect(byId.c4.is_error).toBe(true)

    const trace = traceLines(exitEvent(run).records)
    expect(ofType(trace, "shell")).toEqual([expect.objectContaining({ command: "from the shell", exit_code: 0 })])
    expect(ofType(trace, "skill_call")).toEqual([expect.objectContaining({ skill_name: "guide", output_bytes: Buffer.byteLength(GUIDE), status: "ok" })])
    expect(ofType(trace, "tool_call").map((line) => line.tool_name)).toEqual(["echo", "echo-tool", "nope"])
  })
})
