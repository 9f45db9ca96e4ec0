/**
 * `network.internal_port` (`npm run build` first): `serve` and `run` bind it when `--port` is
 * absent, `--port` wins over it, and a taken port is E-RUN-010 naming the key and what to do.
 */
import { rmSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { endTurn } from "../lib/AgentE2E.js"
import { exitEvent, listeningCli, makeAgentCapsuleDir, runCli } from "../lib/CapsuleDirs.js"

const cleanups: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A port held by a listening server (closed at the end). */
const heldPort = () =>
  new Promise<{ port: number; server: Server }>((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      cleanups.push(() => new Promise<void>((closed) => server.close(() => closed())))
      done({ port: (server.address() as { port: number }).port, server })
    })
  })

/** A free port (bound, then released). */
const freePort = async () => {
  const { port, server } = await heldPort()
  await new Promise<void>((closed) => server.close(() => closed()))
  return port
}

const agentDir = async (port: number) => {
  const dir = await makeAgentCapsuleDir({ driverConfig: { replies: [endTurn("done")] }, extra: `network: { internal_port: ${port} }\n` })
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe("network.internal_port", () => {
  it("serve binds it without --port; --port 0 overrides it", async () => {
    const port = await freePort()
    const dir = await agentDir(port)
    const served = await listeningCli(["serve", dir, "--json"], {}, cleanups)
    expect(served.listening.url).toBe(`http://127.0.0.1:${port}/`)
    expect(served.stderr()).not.toContain("W-RUN-001")
    const other = await listeningCli(["serve", dir, "--json", "--port", "0"], {}, cleanups)
    expect(other.listening.url).not.toBe(`http://127.0.0.1:${port}/`)
  })

  it("run binds it too, and a taken port is E-RUN-010 naming the key, exit 1", async () => {
    const port = await freePort()
    const ran = await runCli(["run", await agentDir(port), "--task", "go", "--json"])
    expect(ran.code, ran.stderr).toBe(0)
    expect(JSON.parse(ran.stdout.split("\n")[0]!).url).toBe(`http://127.0.0.1:${port}/`)

    const held = await heldPort()
    const refused = await runCli(["serve", await agentDir(held.port), "--json"])
    expect(refused.code).toBe(1)
    expect(exitEvent(refused)).toMatchObject({
      event: "exit",
      status: "failed",
      error: {
        code: "E-RUN-010",
        message: `cannot listen on 127.0.0.1:${held.port} (network.internal_port in murmur.yaml): the port is already in use; stop what holds it, change network.internal_port, or pass --port (0: any free port)`
      }
    })
    const taken = await runCli(["run", await agentDir(held.port), "--task", "go"])
    expect(taken.code).toBe(1)
    expect(taken.stderr).toContain(`error[E-RUN-010]: cannot listen on 127.0.0.1:${held.port} (network.internal_port in murmur.yaml)`)
  })
})
