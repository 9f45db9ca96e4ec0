/**
 * Shell egress through the command line (`npm run build` first): an agent capsule granting `curl`
 * and one `network.allow` entry on the sealed tier starts without the W-RUN-001 that said the
 * allowlist does not reach commands, its commands reach the named server and not another, and
 * each connection is an `egress` line of trace.jsonl under the session node, naming the task.
 */
import { rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { probeHost } from "../../src/shell/containment/HostProbe.js"
import { call, endTurn, ofType, runTask, toolTurn } from "../lib/AgentE2E.js"

const hostTier = await Effect.runPromise(probeHost(process.env.PATH))
const cleanups: Array<() => void> = []
afterAll(() => cleanups.splice(0).reverse().forEach((cleanup) => cleanup()))

const serve = async (body: string) => {
  const server = createServer((_, res) => res.end(body))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  cleanups.push(() => server.close())
  return (server.address() as AddressInfo).port
}

describe.skipIf(hostTier.tier !== "sealed")("shell egress in an agent session", () => {
  it("a sealed command reaches what network.allow names through the proxy, is refused the rest, and the trace has a line for each", async () => {
    const allowed = await serve("from-allowed")
    const refused = await serve("from-refused")
    const turn = toolTurn(
      call("c1", "curl", { command: `-sS http://localhost:${allowed}/` }),
      call("c2", "curl", { command: `-sS -w CODE=%{http_code} http://localhost:${refused}/` })
    )
    const run = await runTask({
      driverConfig: { replies: [turn, endTurn("done")] },
      capabilities: `  shell:\n    allow: [curl]\n  network:\n    allow: ["localhost:${allowed}"]\n`
    }, "fetch", cleanups)
    expect(run.run.code, run.run.stderr).toBe(0)
    expect(run.run.stderr).not.toContain("W-RUN-001")
    cleanups.push(() => rmSync(run.workdir, { recursive: true, force: true }))
    const [start] = ofType(run.trace, "session_start")
    expect(start!.effective_grants.containment.shell).toContain("egress-proxy")
    const toolOutputs = ofType(run.trace, "shell").map((line) => line.exit_code)
    expect(toolOutputs).toEqual([0, 0])
    const [taskStart] = ofType(run.trace, "task_start")
    const egress = ofType(run.trace, "egress")
    expect(egress.map((line) => [line.host, line.port, line.decision])).toEqual([
      ["localhost", allowed, "allowed"],
      ["localhost", refused, "denied"]
    ])
    for (const line of egress) {
      expect(line.parent_id).toBe(start!.event_id)
      expect(line.task_id).toBe(taskStart!.task_id)
      expect(line.binary).toBe("curl")
    }
    expect(egress[0]!.bytes_down).toBeGreaterThan("from-allowed".length)
    expect(egress[1]!.reason).toContain("not in capabilities.network.allow")
  })
})
