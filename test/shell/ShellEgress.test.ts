/**
 * Sealed shell egress, for real: bubblewrap, the embedded relay, the runtime's proxy, `curl` and
 * `git` as the allowlisted binaries, two HTTP servers on 127.0.0.1. The one `network.allow` names
 * (as `localhost:<port>`) answers; the other, the same name on another port, and the allowed
 * server's address named as an IP are refused; a redirect is handed to the command, never
 * followed; each connection is one `egress` record, allowed or denied, with its bytes. The
 * address check (a name resolving to loopback is refused unless an entry names the address) and
 * the connection bounds are tested through the same path.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join, normalize } from "node:path"
import { Effect, Either, Layer } from "effect"
import { probeHostOnce } from "../../src/shell/containment/HostProbe.js"
import { shellContainment } from "../../src/shell/containment/ShellContainment.js"
import type { EgressLimits, Resolve } from "../../src/shell/egress/EgressProxy.js"
import type { EgressFields } from "../../src/records/TraceEvents.js"
import { ShellEgress } from "../../src/shell/egress/ShellEgress.js"
import type { Capabilities } from "../../src/project/manifest/Capabilities.js"
import { parseAllowList } from "../../src/project/NetworkPolicy.js"
import { Shell, type ShellOutcome } from "../../src/shell/Shell.js"
import { DetachedRegistry } from "../../src/services/DetachedRegistry.js"

const hostPath = `${process.env.PATH ?? "/usr/bin:/bin"}:/usr/lib/git-core`
const host = await Effect.runPromise(probeHostOnce(hostPath))

/** A bare repository with one commit, prepared for dumb HTTP (`info/refs`). */
const makeRepo = () => {
  const base = mkdtempSync(join(tmpdir(), "egress-repo-"))
  const git = (cwd: string, ...args: Array<string>) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", ...args], { cwd, stdio: "pipe" })
  git(base, "init", "-q", "work")
  writeFileSync(join(base, "work", "README"), "egress\n")
  git(join(base, "work"), "add", "README")
  git(join(base, "work"), "commit", "-q", "-m", "one")
  git(base, "clone", "-q", "--bare", "work", "repo.git")
  git(join(base, "repo.git"), "update-server-info")
  const head = git(join(base, "work"), "rev-parse", "HEAD").toString().trim()
  return { root: base, head }
}

interface Servers {
  readonly allowed: number
  readonly refused: number
  readonly head: string
  /** Requests each server received, by path. */
  readonly seen: Array<string>
  /** Resolves a held `/hold` request. */
  release: () => void
  readonly close: () => void
}

const listen = (server: Server) => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)))

const startServers = async (marker: string): Promise<Servers> => {
  const repo = makeRepo()
  const seen: Array<string> = []
  const state: { release: () => void } = { release: () => {} }
  const refused = createServer((req, res) => {
    seen.push(`refused ${req.url}`)
    res.end("refused-body\n")
  })
  const refusedPort = await listen(refused)
  const allowed = createServer((req, res) => {
    seen.push(`allowed ${req.url} host=${req.headers.host}`)
    const url = req.url ?? "/"
    if (url === "/hello") return res.end("allowed-body\n")
    if (url === "/redirect") {
      res.writeHead(302, { location: `http://localhost:${refusedPort}/after-redirect` })
      return res.end()
    }
    if (url === "/never") return
    if (url === "/hold") {
      writeFileSync(marker, "held")
      state.release = () => res.end("held-body\n")
      return
    }
    if (url.startsWith("/repo.git/")) {
      const path = normalize(join(repo.root, url.split("?")[0]!))
      if (path.startsWith(join(repo.root, "repo.git")) && statSync(path, { throwIfNoEntry: false })?.isFile()) return res.end(readFileSync(path))
    }
    res.writeHead(404)
    res.end()
  })
  const allowedPort = await listen(allowed)
  return {
    allowed: allowedPort,
    refused: refusedPort,
    head: repo.head,
    seen,
    get release() {
      return state.release
    },
    set release(f) {
      state.release = f
    },
    close: () => {
      allowed.close()
      refused.close()
      allowed.closeAllConnections()
      refused.closeAllConnections()
    }
  }
}

const workdir = () => {
  const dir = mkdtempSync(join(tmpdir(), "egress-"))
  chmodSync(dir, 0o755)
  return dir
}

interface Setup {
  readonly allow: ReadonlyArray<string>
  readonly limits?: Partial<EgressLimits>
  readonly resolve?: Resolve
  readonly onRecord?: (fields: EgressFields) => void
}

/** Runs one sealed command with `network.allow: setup.allow` and returns its output and the egress records. */
const runSealed = (setup: Setup, dir: string, binary: string, command: string, allow: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const records: Array<EgressFields> = []
    const rules = Either.getOrThrow(parseAllowList(setup.allow))
    const egress = ShellEgress.layer({
      rules,
      record: (fields) =>
        Effect.sync(() => {
          records.push(fields)
          setup.onRecord?.(fields)
        }),
      limits: setup.limits,
      resolve: setup.resolve
    })
    const caps = { network: { allow: [...setup.allow], unixSockets: false } } as unknown as Capabilities
    const outcome: ShellOutcome = yield* Effect.gen(function*() {
      return yield* (yield* Shell).run({
        binary,
        command,
        workdir: dir,
        allow,
        hostEnv: { PATH: hostPath },
        baselineEnv: [],
        stripPatterns: [],
        runtimeVars: {},
        containment: shellContainment(host, caps, hostPath),
        taskId: "task-1"
      })
    }).pipe(Effect.provide(Shell.layer().pipe(Layer.provideMerge(DetachedRegistry.layer), Layer.provide(egress))))
    if (outcome._tag !== "Finished") return assert.fail("expected a finished command")
    return { code: outcome.exitCode, text: outcome.result.data ?? "", records }
  })

describe.skipIf(host.tier !== "sealed")("sealed shell egress", () => {
  it.scopedLive("curl reaches the server network.allow names and no other; a redirect is the command's to follow, and its next hop is refused", () =>
    Effect.gen(function*() {
      const servers = yield* Effect.promise(() => startServers(join(tmpdir(), "unused")))
      yield* Effect.addFinalizer(() => Effect.sync(servers.close))
      const dir = workdir()
      const script = [
        "echo; env | grep -i _proxy",
        `curl -sS http://localhost:${servers.allowed}/hello`,
        `curl -sS -w 'REFUSED=%{http_code}\\n' http://localhost:${servers.refused}/`,
        `curl -sS -w 'BYIP=%{http_code}\\n' http://127.0.0.1:${servers.allowed}/hello`,
        `curl -sS -o /dev/null -w 'NOFOLLOW=%{http_code}\\n' http://localhost:${servers.allowed}/redirect`,
        `curl -sS -L -w 'FOLLOWED=%{http_code}\\n' http://localhost:${servers.allowed}/redirect`,
        `curl -sS -p http://localhost:${servers.allowed}/hello`
      ].join("; ")
      const { code, records, text } = yield* runSealed({ allow: [`localhost:${servers.allowed}`] }, dir, "sh", script, ["sh", "curl", "env", "grep"])
      assert.strictEqual(code, 0, text)
      const out = text.split("\nStdout:\n")[1]!
      for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]) assert.include(out, `\n${name}=http://127.0.0.1:3128\n`)
      assert.include(out, "\nNO_PROXY=\n")
      assert.include(out, "\nno_proxy=\n")
      assert.include(out, "allowed-body\n")
      assert.include(out, "REFUSED=403")
      assert.include(out, "BYIP=403")
      assert.include(out, "NOFOLLOW=302")
      assert.include(out, "FOLLOWED=403")
      // Over CONNECT (-p) too; the second allowed-body line.
      assert.strictEqual(out.split("allowed-body").length - 1, 2)
      // The refused server never saw a request; the allowed one saw the checked host in Host.
      assert.deepStrictEqual(servers.seen.filter((line) => line.startsWith("refused")), [])
      assert.include(servers.seen, `allowed /hello host=localhost:${servers.allowed}`)

      // One record per connection, each written when it closes (so not necessarily in order).
      const summary = records.map((r) => `${r.method} ${r.host}:${r.port} ${r.decision}`).sort()
      assert.deepStrictEqual(summary, [
        `GET localhost:${servers.allowed} allowed`,
        `GET localhost:${servers.refused} denied`,
        `GET 127.0.0.1:${servers.allowed} denied`,
        `GET localhost:${servers.allowed} allowed`,
        `GET localhost:${servers.allowed} allowed`,
        `GET localhost:${servers.refused} denied`,
        `CONNECT localhost:${servers.allowed} allowed`
      ].sort())
      const first = records.find((r) => r.method === "GET" && r.decision === "allowed" && r.bytes_down < 200)!
      assert.strictEqual(first.task_id, "task-1")
      assert.strictEqual(first.binary, "sh")
      assert.strictEqual(first.address, "127.0.0.1")
      assert.isAbove(first.bytes_up, 0)
      assert.isAbove(first.bytes_down, "allowed-body\n".length)
      const denied = records.find((r) => r.port === servers.refused)!
      assert.include(denied.reason!, `'http://localhost:${servers.refused}' not in capabilities.network.allow`)
      assert.strictEqual(denied.bytes_up, 0)
      assert.strictEqual(denied.bytes_down, 0)
    }))

  it.scopedLive("git ls-remote over http reaches the allowed server through the proxy", () =>
    Effect.gen(function*() {
      const servers = yield* Effect.promise(() => startServers(join(tmpdir(), "unused")))
      yield* Effect.addFinalizer(() => Effect.sync(servers.close))
      const dir = workdir()
      const { code, records, text } = yield* runSealed(
        { allow: [`localhost:${servers.allowed}`] },
        dir,
        "git",
        `ls-remote http://localhost:${servers.allowed}/repo.git`,
        ["git", "git-remote-http"]
      )
      assert.strictEqual(code, 0, text)
      assert.include(text, `${servers.head}\trefs/heads/main`)
      assert.isAtLeast(records.length, 1)
      assert.isTrue(records.every((r) => r.decision === "allowed" && r.host === "localhost" && r.binary === "git"))
      const refused = yield* runSealed(
        { allow: [`localhost:${servers.allowed}`] },
        dir,
        "git",
        `ls-remote http://localhost:${servers.refused}/repo.git`,
        ["git", "git-remote-http"]
      )
      assert.notStrictEqual(refused.code, 0)
      assert.include(refused.text, "403")
      assert.deepStrictEqual(refused.records.map((r) => r.decision), ["denied"])
    }))

  it.scopedLive("a name resolving to loopback is refused unless an entry names the address", () =>
    Effect.gen(function*() {
      const servers = yield* Effect.promise(() => startServers(join(tmpdir(), "unused")))
      yield* Effect.addFinalizer(() => Effect.sync(servers.close))
      const dir = workdir()
      const resolve: Resolve = async (name) => name === "rebind.example" ? ["127.0.0.1"] : []
      const url = `http://rebind.example:${servers.allowed}/hello`
      const byName = yield* runSealed({ allow: [`rebind.example:${servers.allowed}`], resolve }, dir, "curl", `-sS -w CODE=%{http_code} ${url}`, ["curl"])
      assert.include(byName.text, "CODE=403")
      assert.include(byName.text, "resolves to 127.0.0.1 (loopback), which capabilities.network.allow does not name")
      assert.deepStrictEqual(byName.records.map((r) => r.decision), ["denied"])
      const named = yield* runSealed(
        { allow: [`rebind.example:${servers.allowed}`, `127.0.0.1:${servers.allowed}`], resolve },
        dir,
        "curl",
        `-sS ${url}`,
        ["curl"]
      )
      assert.include(named.text, "allowed-body")
      assert.strictEqual(servers.seen.at(-1), `allowed /hello host=rebind.example:${servers.allowed}`)
    }))

  for (const [limits, bound] of [[{ perCommand: 1 }, "1 per command"], [{ perSession: 1 }, "1 per session"]] as const) {
    it.scopedLive(`connections past the bound (${bound}) are answered 503 and traced as denied`, () =>
      Effect.gen(function*() {
        const dir = workdir()
        const marker = join(dir, "held")
        const servers = yield* Effect.promise(() => startServers(marker))
        yield* Effect.addFinalizer(() => Effect.sync(servers.close))
        // The held request is answered once the second connection has been refused.
        const onRecord = (fields: EgressFields) => {
          if (fields.reason?.includes("connection limit") === true) servers.release()
        }
        const script = [
          `curl -sS http://localhost:${servers.allowed}/hold > out.txt &`,
          "until [ -e held ]; do :; done",
          `curl -sS -w 'SECOND=%{http_code}\\n' http://localhost:${servers.allowed}/hello`,
          "wait",
          "cat out.txt"
        ].join("\n")
        const { records, text } = yield* runSealed({ allow: [`localhost:${servers.allowed}`], limits, onRecord }, dir, "sh", script, ["sh", "curl", "cat"])
        assert.include(text, "SECOND=503")
        assert.include(text, `connection limit reached (${bound})`)
        assert.include(text, "held-body")
        assert.deepStrictEqual(records.map((r) => r.decision), ["denied", "allowed"])
      }))
  }

  it.scopedLive("a connection idle past the bound is closed, and reported with what it carried", () =>
    Effect.gen(function*() {
      const servers = yield* Effect.promise(() => startServers(join(tmpdir(), "unused")))
      yield* Effect.addFinalizer(() => Effect.sync(servers.close))
      const dir = workdir()
      const { records, text } = yield* runSealed(
        { allow: [`localhost:${servers.allowed}`], limits: { idleMs: 300 } },
        dir,
        "sh",
        `curl -sS http://localhost:${servers.allowed}/never; echo CURL-EXIT=$?`,
        ["sh", "curl"]
      )
      assert.include(text, "CURL-EXIT=52")
      assert.strictEqual(records.length, 1)
      assert.strictEqual(records[0]!.decision, "allowed")
      assert.isAbove(records[0]!.bytes_up, 0)
      assert.strictEqual(records[0]!.bytes_down, 0)
      assert.strictEqual(records[0]!.reason, "closed after 300 ms idle")
    }))
})
