/**
 * The commands `new` prints to run next work where they are printed: `node dist/main.js …` from a
 * clone (where no `capsule-runtime` is on PATH), `capsule-runtime …` from an installed package.
 * The CLI part needs `npm run build`.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { invocation } from "../../src/cli/Invocation.js"
import { runCli } from "../lib/CapsuleDirs.js"

const base = mkdtempSync(join(tmpdir(), "invocation-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

describe("invocation", () => {
  it("is node <path> for a checkout's dist/main.js, capsule-runtime for an installed package or its bin", () => {
    expect(invocation("/home/me/capsule-runtime/dist/main.js", "/home/me/capsule-runtime")).toBe("node dist/main.js")
    expect(invocation("/home/me/capsule-runtime/dist/main.js", "/tmp")).toBe("node /home/me/capsule-runtime/dist/main.js")
    expect(invocation("/srv/app/node_modules/capsule-runtime/dist/main.js", "/srv/app")).toBe("capsule-runtime")
    expect(invocation("/srv/app/node_modules/.bin/capsule-runtime", "/srv/app")).toBe("capsule-runtime")
    expect(invocation("/usr/local/bin/capsule-runtime", "/")).toBe("capsule-runtime")
  })

  it("new, run from this checkout, prints commands that run from here", async () => {
    const dir = join(base, "my-agent")
    const made = await runCli(["new", "agent", dir])
    expect(made.code, made.stderr).toBe(0)
    expect(made.stdout).toContain(`  node dist/main.js build ${dir}\n  node dist/main.js validate ${dir}\n  node dist/main.js run ${dir} --task Ada`)
    expect(made.stdout).not.toContain("capsule-runtime build")
  }, 60_000)
})
