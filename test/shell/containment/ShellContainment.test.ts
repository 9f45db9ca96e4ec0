import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { probeHostOnce } from "../../../src/shell/containment/HostProbe.js"
import { locate } from "../../../src/shell/containment/ComposedRoot.js"
import {
  appliedContainment,
  type ShellContainment,
  shellContainment
} from "../../../src/shell/containment/ShellContainment.js"
import { SANDBOX_UID } from "../../../src/shell/containment/SandboxUid.js"
import type { Capabilities } from "../../../src/project/manifest/Capabilities.js"
import { DetachedRegistry } from "../../../src/services/DetachedRegistry.js"
import { Shell, type ShellOutcome, type ShellRequest } from "../../../src/shell/Shell.js"

const hostPath = process.env.PATH ?? "/usr/bin:/bin"
const host = await Effect.runPromise(probeHostOnce(hostPath))
const sealedHost = host.tier === "sealed"
const asRoot = process.getuid?.() === 0
if (!sealedHost) console.warn(`sealed-tier containment tests skipped: ${host.reason}`)

const layer = Shell.layer().pipe(Layer.provideMerge(DetachedRegistry.layer))
const workdir = () => {
  const dir = mkdtempSync(join(tmpdir(), "contain-"))
  chmodSync(dir, 0o755)
  return dir
}

const caps = (extra: Partial<Capabilities> = {}): Capabilities => ({ ...extra }) as Capabilities

const sealed = (extra: Partial<Capabilities> = {}): ShellContainment => shellContainment(host, caps(extra), hostPath)

const request = (dir: string, binary: string, command: string, containment: ShellContainment, allow: ReadonlyArray<string> = [binary]): ShellRequest => ({
  binary,
  command,
  workdir: dir,
  allow,
  hostEnv: { PATH: hostPath },
  baselineEnv: [],
  stripPatterns: [],
  runtimeVars: {},
  containment
})

const output = (outcome: ShellOutcome) => {
  if (outcome._tag !== "Finished") return assert.fail("expected a finished command")
  return { code: outcome.exitCode, text: outcome.result.data ?? "" }
}

const run = (req: ShellRequest) =>
  Effect.gen(function*() {
    const shell = yield* Shell
    return output(yield* shell.run(req))
  }).pipe(Effect.provide(layer))

describe.skipIf(!sealedHost)("sealed shell containment", () => {
  it.live("runs an allowlisted binary in a composed root with the workdir at its host path", () =>
    Effect.gen(function*() {
      const dir = workdir()
      writeFileSync(join(dir, "note.txt"), "hello\n")
      const { code, text } = yield* run(request(dir, "sh", "pwd; cat note.txt; echo made > out.txt; ls / | tr '\\n' ' '; ls /etc 2>&1", sealed(), ["sh", "cat", "ls", "tr"]))
      assert.strictEqual(code, 0, text)
      assert.include(text, `${dir}\nhello\n`)
      assert.notInclude(text, "passwd")
    }))

  it.live("the workdir and scratch mounts are noexec; workdir_exec lifts it for the workdir only", () =>
    Effect.gen(function*() {
      const dir = workdir()
      copyFileSync("/usr/bin/true", join(dir, "sh"))
      chmodSync(join(dir, "sh"), 0o755)
      // The command is echoed in the result: markers are printed in two halves.
      const probe = "./sh && echo RAN-WORK''DIR; cp ./sh /tmp/x; /tmp/x && echo RAN-T''MP; echo end"
      const denied = yield* run(request(dir, "sh", probe, sealed(), ["sh", "cp"]))
      assert.notInclude(denied.text, "RAN-WORKDIR")
      assert.notInclude(denied.text, "RAN-TMP")
      assert.include(denied.text, "Permission denied")
      const allowed = yield* run(request(dir, "sh", probe, sealed({ filesystem: { workdirExec: true, readOnly: [] } }), ["sh", "cp"]))
      assert.include(allowed.text, "RAN-WORKDIR")
      assert.notInclude(allowed.text, "RAN-TMP")
    }))

  it.live("read_only subtrees are read-only, the rest of the workdir writable", () =>
    Effect.gen(function*() {
      const dir = workdir()
      mkdirSync(join(dir, "src"))
      writeFileSync(join(dir, "src", "a.txt"), "keep")
      const c = sealed({ filesystem: { workdirExec: false, readOnly: ["src", "missing"] } })
      const { text } = yield* run(request(dir, "sh", "echo x > src/a.txt || echo RO-S''RC; mkdir missing/d || echo RO-MIS''SING; echo y > ok.txt && echo RW-''OK", c))
      assert.include(text, "RO-SRC")
      assert.include(text, "RO-MISSING")
      assert.include(text, "RW-OK")
    }))

  it.live("no network: only a down loopback in its own namespace", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const { text } = yield* run(request(dir, "cat", "/proc/net/dev", sealed()))
      assert.notInclude(text, "eth0")
    }))

  it.live("the scratch mounts are sized by resources.tmp_bytes (ENOSPC past it) and /dev is read-only", () =>
    Effect.gen(function*() {
      const dir = workdir()
      const c = sealed({ resources: { tmp_bytes: 1024 * 1024 } })
      const fill = "head -c 3000000 /dev/zero > /tmp/a; echo tmp=$?; head -c 3000000 /dev/zero > /dev/shm/a; echo shm=$?; " +
        "stat -c %s /tmp/a /dev/shm/a; (: > /dev/planted) || echo DEV-R''O"
      const { text } = yield* run(request(dir, "sh", fill, c, ["sh", "head", "stat"]))
      assert.include(text, "tmp=1")
      assert.include(text, "shm=1")
      assert.include(text, "No space left on device")
      // Nothing past the size reached host memory: each file stopped at the mount's 1 MiB.
      assert.include(text, "1048576\n1048576\n")
      assert.include(text, "DEV-RO")
      const unsized = yield* run(request(dir, "sh", "head -c 3000000 /dev/zero > /tmp/a; echo tmp=$?", sealed(), ["sh", "head"]))
      assert.include(unsized.text, "tmp=0")
    }))

  it.live("pid 1 is the command itself: /proc/1 shows no bwrap and runs nothing outside the allowlist", () =>
    Effect.gen(function*() {
      const dir = workdir()
      // The probe's own text is echoed in the result, so it names none of what it looks for.
      const probe = "readlink /proc/1/exe; /proc/1/exe --version; tr '\\0' ' ' < /proc/1/cmdline; echo"
      const { text } = yield* run(request(dir, "sh", probe, sealed(), ["sh", "readlink", "tr"]))
      const shell = realpathSync(locate("sh", hostPath)!)
      assert.include(text, `${shell}\n`)
      assert.notInclude(text, "bubblewrap")
      assert.notInclude(text, "bwrap")
      assert.notInclude(text, "--ro-bind")
    }))

  it.live("under a root runtime the command runs as an unprivileged uid: max_processes binds, the root-owned workdir stays writable", () =>
    Effect.gen(function*() {
      const dir = workdir()
      writeFileSync(join(dir, "owned.txt"), "runtime\n", { mode: 0o644 })
      const c = sealed({ resources: { max_processes: 16 } })
      const bomb = `-e '$n = 0; for (1..200) { $p = fork(); last unless defined $p; if ($p == 0) { sleep 5; exit 0 } $n++ } print "forked=$n\\n"'`
      const { code, text } = yield* run(request(dir, "sh", `id -u; echo command >> owned.txt; echo new > made.txt; perl ${bomb}`, c, ["sh", "id", "perl"]))
      assert.strictEqual(code, 0, text)
      const forked = Number(/forked=(\d+)/.exec(text)?.[1])
      assert.isBelow(forked, 16, text)
      assert.strictEqual(readFileSync(join(dir, "owned.txt"), "utf8"), "runtime\ncommand\n")
      const made = join(dir, "made.txt")
      assert.strictEqual(readFileSync(made, "utf8"), "new\n")
      if (asRoot) {
        assert.include(text, `${SANDBOX_UID}\n`)
        assert.strictEqual(statSync(made).uid, SANDBOX_UID)
        // The runtime goes on using what the command made.
        writeFileSync(made, "runtime again\n")
        // access(2) agrees with open(2) (it checks with the real uid): `test -w` on the workdir and /tmp.
        const again = yield* run(request(dir, "sh", "cat made.txt; echo more >> made.txt; test -w . && test -w /tmp && echo ACC''ESS", c, ["sh", "cat"]))
        assert.include(again.text, "ACCESS")
        assert.include(again.text, "runtime again\n")
        assert.strictEqual(readFileSync(made, "utf8"), "runtime again\nmore\n")
        // A repository the root runtime made is still the command's to use.
        execFileSync("git", ["init", "-q", dir])
        const git = yield* run(request(dir, "git", "status --short", c))
        assert.strictEqual(git.code, 0, git.text)
      }
    }))

  it.live("reports what it applied", () =>
    Effect.sync(() => {
      const c = sealed()
      assert.include(appliedContainment(c), "seccomp")
      assert.include(appliedContainment(c), "noexec-workdir")
      assert.include(appliedContainment(c), "rlimits")
      assert.include(appliedContainment(c), "sized-scratch")
      assert.include(appliedContainment(c, 0), "unprivileged-uid")
      assert.notInclude(appliedContainment(c, 1000), "unprivileged-uid")
      // An executable workdir is the one sealed mechanism workdir_exec gives up (ContainmentDecision caps it at advisory).
      assert.notInclude(appliedContainment(sealed({ filesystem: { workdirExec: true, readOnly: [] } })), "noexec-workdir")
    }))
})
