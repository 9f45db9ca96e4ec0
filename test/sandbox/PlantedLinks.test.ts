/**
 * Symbolic links planted in a script capsule's workdir (issue 8 item 1), with a real guest
 * (`capsule-plant-links`) under `run` and `serve`: the guest cannot plant a link that leaves the
 * workdir, and the host follows no link at the paths it touches (`task.md`, `out/result.txt`,
 * `logs/guest.log`) — not one the guest planted inside the workdir, not one a shell or an earlier
 * session left pointing out. The task that meets one fails naming the path; a secret and a
 * target outside the workdir keep their bytes and modification time.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { exitEvent, listeningCli, makeCapsuleDir, runCli } from "../lib/CapsuleDirs.js"
import { a2aMessage, rpc } from "../lib/Door.js"

const cleanups: Array<() => Promise<void> | void> = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const ENV_ALLOW = "  env:\n    allow: [PLANT, RESULT, SAY]\n"

/**
 * A capsule directory and, beside the workdir the test passes with `--workdir`, the files a link
 * could reach: `secret.txt` (must never be read into an answer) and `target/` (must stay as it is).
 */
const layout = async () => {
  const dir = await makeCapsuleDir({ capsule: "capsule-plant-links", capabilities: ENV_ALLOW })
  const base = realpathSync(mkdtempSync(join(tmpdir(), "planted-")))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(base, { recursive: true, force: true }))
  const workdir = join(base, "workdir")
  const target = join(base, "target")
  mkdirSync(workdir)
  mkdirSync(target)
  writeFileSync(join(base, "secret.txt"), "SECRET")
  writeFileSync(join(target, "victim.txt"), "VICTIM")
  return { dir, base, workdir, target, secret: join(base, "secret.txt") }
}

/** Bytes and modification times of everything outside the workdir, to compare after the run. */
const outsideState = (base: string) => {
  const state = () => ({
    secret: readFileSync(join(base, "secret.txt"), "utf8"),
    secretMtime: statSync(join(base, "secret.txt")).mtimeMs,
    target: readdirSync(join(base, "target")).sort(),
    victim: readFileSync(join(base, "target", "victim.txt"), "utf8"),
    victimMtime: statSync(join(base, "target", "victim.txt")).mtimeMs
  })
  const before = state()
  return () => expect(state()).toEqual(before)
}

const report = (workdir: string) => readFileSync(join(workdir, "plant-report.txt"), "utf8").split("\n")

/** `serve <dir> --workdir <workdir> --json` with the host environment `env`: its URL. */
const served = async (dir: string, workdir: string, env: Record<string, string>) => {
  const process = await listeningCli(["serve", dir, "--workdir", workdir, "--json"], env, cleanups)
  expect(process.listening.workdir).toBe(workdir)
  return process.listening.url as string
}

const send = async (url: string, text: string) => {
  const reply = await rpc(url, "message/send", { message: a2aMessage(text), configuration: { blocking: true } })
  expect(reply.body.error).toBeUndefined()
  const task = reply.body.result
  return { state: task.status.state as string, text: task.status.message?.parts?.[0]?.text as string | undefined }
}

describe("a guest planting links (run)", () => {
  it("cannot plant a link out of the workdir at any path the host touches", async () => {
    const { base, dir, workdir } = await layout()
    const same = outsideState(base)
    const plant = [
      "out/result.txt=>../../secret.txt",
      "logs/guest.log=>../../target/victim.txt",
      "task.md=>../secret.txt",
      "trace.jsonl=>../target/victim.txt",
      "logs/shell-1.log=>../../target/new.log",
      "out/sneaky=>../ro/../../../secret.txt"
    ]
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { PLANT: plant.join("|") })
    expect(exitEvent(run).status).toBe("ok")
    expect(report(workdir)).toEqual(plant.map((pair) => `${pair.replace("=>", " -> ")}: refused:not-permitted`))
    for (const path of ["out/result.txt", "logs/guest.log", "task.md", "trace.jsonl", "logs/shell-1.log", "out/sneaky"]) {
      expect(lstatSync(join(workdir, path), { throwIfNoEntry: false }), path).toBeUndefined()
    }
    same()
  })

  it("a link planted inside the workdir at logs/guest.log is not written through: the run fails naming it", async () => {
    const { base, dir, workdir } = await layout()
    const same = outsideState(base)
    writeFileSync(join(workdir, "notes.txt"), "NOTES")
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { PLANT: "logs/guest.log=>../notes.txt", SAY: "spoken\n" })
    expect(run.code).toBe(1)
    expect(exitEvent(run).error).toEqual({
      code: "E-RUN-001",
      message: "logs/guest.log is a symbolic link; refusing to follow it out of the workdir"
    })
    expect(readFileSync(join(workdir, "notes.txt"), "utf8")).toBe("NOTES")
    same()
  })

  it("a logs/ directory a shell left pointing out is not followed: the run fails naming it", async () => {
    const { base, dir, target, workdir } = await layout()
    const same = outsideState(base)
    symlinkSync(target, join(workdir, "logs"))
    const run = await runCli(["run", dir, "--workdir", workdir, "--json"], { SAY: "spoken\n" })
    expect(run.code).toBe(1)
    expect(exitEvent(run).error.message).toBe("logs is a symbolic link; refusing to follow it out of the workdir (opening logs/guest.log)")
    same()
  })
})

describe("a guest planting links (serve)", () => {
  it("the issue's reproduction: out/result.txt -> ../../secret.txt is refused; the answer is not the secret", async () => {
    const { base, dir, workdir } = await layout()
    const same = outsideState(base)
    const url = await served(dir, workdir, { PLANT: "out/result.txt=>../../secret.txt" })
    const first = await send(url, "plant it")
    expect(first).toEqual({ state: "completed", text: undefined })
    const second = await send(url, "and answer")
    expect(second.state).toBe("completed")
    expect(second.text ?? "").not.toContain("SECRET")
    expect(report(workdir)).toEqual(["out/result.txt -> ../../secret.txt: refused:not-permitted"])
    same()
  })

  it("a link the guest planted inside the workdir at out/result.txt fails the task naming it", async () => {
    const { base, dir, workdir } = await layout()
    const same = outsideState(base)
    const url = await served(dir, workdir, { PLANT: "out/result.txt=>../task.md" })
    const task = await send(url, "what is the task?")
    expect(task).toEqual({ state: "failed", text: "out/result.txt is a symbolic link; refusing to follow it out of the workdir" })
    expect(readFileSync(join(workdir, "task.md"), "utf8")).toBe("what is the task?")
    same()
  })

  it("task.md, out/ and logs/ pointing out of the workdir each fail the task; nothing outside changes", async () => {
    const { base, dir, target, workdir } = await layout()
    const same = outsideState(base)
    const url = await served(dir, workdir, { RESULT: "answer", SAY: "spoken\n" })
    expect(await send(url, "first")).toEqual({ state: "completed", text: "answer" })

    rmSync(join(workdir, "task.md"))
    symlinkSync(join(target, "victim.txt"), join(workdir, "task.md"))
    expect(await send(url, "overwrite the victim")).toEqual({
      state: "failed",
      text: "task.md is a symbolic link; refusing to follow it out of the workdir"
    })
    rmSync(join(workdir, "task.md"))

    rmSync(join(workdir, "out"), { recursive: true })
    symlinkSync(target, join(workdir, "out"))
    expect(await send(url, "answer into the target")).toEqual({
      state: "failed",
      text: "out is a symbolic link; refusing to follow it out of the workdir (opening out/result.txt)"
    })
    rmSync(join(workdir, "out"))

    rmSync(join(workdir, "logs"), { recursive: true })
    symlinkSync(target, join(workdir, "logs"))
    expect(await send(url, "log into the target")).toEqual({
      state: "failed",
      text: "logs is a symbolic link; refusing to follow it out of the workdir (opening logs/guest.log)"
    })
    same()
  })
})
