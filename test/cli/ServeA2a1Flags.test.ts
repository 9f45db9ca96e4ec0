/**
 * `serve`'s A2A 1.0 flags through the CLI binary (`npm run build` first): `--card-signing-key`
 * signs the 1.0 card (and a key file others can read is refused at start, E-RUN-040), and
 * `--push-allow` lets a webhook on loopback take push configs that are refused without it.
 */
import { generateKeyPairSync } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { verifyAgentCardSignature } from "@a2a-js/sdk-1"
import { afterEach, describe, expect, it } from "vitest"
import { exitEvent, listeningCli, runCli } from "../lib/CapsuleDirs.js"
import { rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const keyFile = (mode: number) => {
  const dir = mkdtempSync(join(tmpdir(), "card-key-"))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const pair = generateKeyPairSync("ec", { namedCurve: "P-256" })
  const path = join(dir, "card.pem")
  writeFileSync(path, pair.privateKey.export({ type: "pkcs8", format: "pem" }))
  chmodSync(path, mode)
  return { path, publicKey: pair.publicKey }
}

describe("serve: A2A 1.0 flags", () => {
  it("--card-signing-key signs the 1.0 card; --push-allow admits a loopback webhook", async () => {
    const key = keyFile(0o600)
    const served = await listeningCli(["serve", "--json", "--card-signing-key", key.path, "--card-signing-kid", "ops-1", "--push-allow", "127.0.0.1"], {}, cleanups)
    const url = served.listening.url
    const card = await (await fetch(`${url}.well-known/agent-card.json`, { headers: { "a2a-version": "1.0" } })).json()
    await verifyAgentCardSignature(async (kid: string) => {
      expect(kid).toBe("ops-1")
      return key.publicKey
    })(card)
    const task = (await rpc(url, "SendMessage", { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "/forever" }] }, configuration: { returnImmediately: true } })).body.result.task
    const made = await rpc(url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: "http://127.0.0.1:9/hook" })
    expect(made.body.result?.url).toBe("http://127.0.0.1:9/hook")
  }, 60_000)

  it("without --push-allow a loopback webhook is refused; a key file others can read is refused at start", async () => {
    const served = await listeningCli(["serve", "--json"], {}, cleanups)
    const task = (await rpc(served.listening.url, "SendMessage", { message: { messageId: "m2", role: "ROLE_USER", parts: [{ text: "/forever" }] }, configuration: { returnImmediately: true } })).body.result.task
    const refused = await rpc(served.listening.url, "CreateTaskPushNotificationConfig", { taskId: task.id, url: "http://127.0.0.1:9/hook" })
    expect(refused.body.error.message).toMatch(/--push-allow 127\.0\.0\.1/)
    const open = keyFile(0o644)
    const result = await runCli(["serve", "--json", "--card-signing-key", open.path])
    expect(result.code).not.toBe(0)
    expect(exitEvent(result)).toMatchObject({ event: "exit", status: "failed", error: { code: "E-RUN-040" } })
    expect(exitEvent(result).error.message).toMatch(/--card-signing-key .*chmod 600/)
  }, 60_000)
})
