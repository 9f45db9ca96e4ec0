/**
 * Interop with the Python `a2a-sdk` 1.x client, when it installs from the registry: its card
 * resolver and client factory against a real door, one blocking send. Where the package cannot
 * be installed (no route to PyPI, no pip), the test says why and is skipped: the JS clients
 * (Interop1.test.ts, GrpcDoor.test.ts) cover 1.0 either way.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type OpenDoor, openDoor } from "../lib/Door.js"

const target = new URL("../../.cache/python-a2a", import.meta.url).pathname
const script = new URL("./fixtures/python_a2a_client.py", import.meta.url).pathname

/** Installs `a2a-sdk` 1.x into the cache once; the reason it could not, else undefined. */
const install = (): string | undefined => {
  if (existsSync(join(target, "a2a"))) return undefined
  mkdirSync(target, { recursive: true })
  const pip = spawnSync("python3", ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--retries", "0", "--timeout", "5", "--target", target, "a2a-sdk[http-server]>=1,<2"], {
    encoding: "utf8",
    timeout: 120_000
  })
  if (pip.error !== undefined) return `python3 -m pip could not run: ${pip.error.message}`
  if (pip.status !== 0) return `pip could not install a2a-sdk 1.x: ${(pip.stderr || pip.stdout).trim().split("\n").at(-1)}`
  return undefined
}

let door: OpenDoor | undefined
afterEach(async () => {
  await door?.close()
  door = undefined
})

describe("Python a2a-sdk 1.x client", () => {
  it("sends a message and reads the completed task", async (context) => {
    const reason = install()
    if (reason !== undefined) {
      console.log(`skipped: ${reason}`)
      return context.skip()
    }
    door = await openDoor()
    const output = execFileSync("python3", [script, door.url], { encoding: "utf8", env: { ...process.env, PYTHONPATH: target }, timeout: 60_000 })
    const answer = JSON.parse(output.trim().split("\n").at(-1)!)
    expect(String(answer.state)).toMatch(/completed/i)
    expect(answer.id).toMatch(/^tsk_/)
  }, 180_000)
})
